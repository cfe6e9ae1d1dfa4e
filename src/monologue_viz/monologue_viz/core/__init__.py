"""ROS-free marker building."""
