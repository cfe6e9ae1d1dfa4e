"""Domain library shared by every package of the graph (no rclpy; generated messages only in `msgs`).

- `transcript`: the monologue transcript (event kinds, JSONL episode files).
- `tabletop`: the tabletop world of IM §4.1 (colours, sizes, workspace, named locations).
- `scene_spec`: which objects a scene holds and where they start (SceneSpec, random_spec, make_spec,
  layout_scene): the one scene sampler of the kinematic world and the physics simulator.
- `kinematic_world`: the plain kinematic model of the tabletop (TabletopWorld) and its pick-and-place.
- `scene`: the scene as plain data (SceneObject, Scene); `objects.ObjectState` is a SceneObject.
- `skills`: skill result codes, feedback states, affordances and outcomes.
- `tasks`: IM Table 1's task families, instructions and binary rewards.
- `robots`: the robot table (config/robots.yaml).
- `msgs`: the one adapter between the scene types and their ROS messages (imports the generated
  messages, not rclpy; only nodes and tools use it).
"""
