"""Record runs to rosbag2 (MCAP) and replay them through the graph."""
