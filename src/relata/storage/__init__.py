"""Adapters that implement the domain's storage ports."""
