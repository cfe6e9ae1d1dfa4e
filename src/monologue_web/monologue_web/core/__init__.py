"""ROS-free core of the web monitor: the state model, settings, access rules, history and the FastAPI app."""
