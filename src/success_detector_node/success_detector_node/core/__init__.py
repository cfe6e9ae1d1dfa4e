"""ROS-free success detection strategies."""
