"""Builders shared by the whole suite: temporary git repositories and backend configs."""
