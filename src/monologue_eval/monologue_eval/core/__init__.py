"""ROS-free logic of the evaluation tools (benchmark plan, statistics, reports)."""
