"""The kinematic tabletop backend, ROS-free."""
