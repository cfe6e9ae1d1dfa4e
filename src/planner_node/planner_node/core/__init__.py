"""Inner Monologue planner core (ROS-free)."""
