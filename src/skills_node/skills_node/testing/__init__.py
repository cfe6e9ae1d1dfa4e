"""Test doubles shared by the robots' tests: a BackendHost without ROS and the skills node's parameters of a
robot from the YAML files (each robot's SDK fake is in robots/<name>/testing/)."""
