"""RViz markers of the monologue transcript, the current skill and the scene."""
