"""perception_node."""
