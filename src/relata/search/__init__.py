"""Hybrid retrieval: the search service, its legs, and retrieval-quality evaluation."""
