"""Reusable test helpers (real local servers and the like), importable as ``tests.support``."""
