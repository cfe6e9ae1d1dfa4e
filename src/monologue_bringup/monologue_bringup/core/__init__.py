"""ROS-free logic of the bring-up commands (benchmark plan, statistics, reports)."""
