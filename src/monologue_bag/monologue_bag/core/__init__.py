"""ROS-free logic of recording and replay (no rclpy imports)."""
