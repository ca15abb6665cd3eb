"""Authentication primitives."""
