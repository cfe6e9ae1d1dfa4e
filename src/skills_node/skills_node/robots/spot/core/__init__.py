"""Spot over bosdyn-client and its kitchen skills, ROS-free."""
