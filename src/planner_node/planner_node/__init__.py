"""Inner Monologue planner package."""
