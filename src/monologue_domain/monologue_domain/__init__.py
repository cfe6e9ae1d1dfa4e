"""ROS-free domain library shared by every package of the graph (no rclpy, no generated messages).

- `transcript`: the monologue transcript (event kinds, JSONL episode files).
- `tabletop`: the tabletop world of IM §4.1 (colours, sizes, workspace, named locations).
- `objects`: the ground-truth state of one object.
- `tasks`: IM Table 1's task families, instructions and binary rewards.
"""
