"""The UR5e arm over ur_rtde, ROS-free."""
