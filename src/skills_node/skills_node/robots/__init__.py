"""The robots and simulated worlds: one folder each, whose package defines `PLUGIN` (skills_node.plugin)."""
