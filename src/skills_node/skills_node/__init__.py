"""skills_node."""
