"""Shared rclpy helpers of the Inner Monologue graph."""
