"""ROS-free perception logic: scene descriptions from ground truth or detections."""
