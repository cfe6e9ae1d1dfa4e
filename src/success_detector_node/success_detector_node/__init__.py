"""success_detector_node."""
