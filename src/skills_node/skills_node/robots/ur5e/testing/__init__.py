"""Test doubles at the UR5e's SDK boundary (used by tests and selectable by parameter, never by default)."""
