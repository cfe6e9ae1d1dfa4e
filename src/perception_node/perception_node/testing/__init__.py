"""Test helpers shipped with perception_node (fakes at hardware SDK boundaries)."""
