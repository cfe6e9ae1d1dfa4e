"""The symbolic kitchen / household world of SayCan (SC §3.4), IM §4.3 and CAPE (no rclpy)."""
