"""Test doubles at hardware SDK boundaries (used by tests and selectable by parameter, never by default)."""
