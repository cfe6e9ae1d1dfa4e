"""Test doubles at Spot's SDK boundary (used by tests and selectable by parameter, never by default)."""
