"""Vector stores: the ``VectorStore`` port on sqlite-vec (embedded default) and on Qdrant.

See docs/decisions/0008-vector-stores.md for the layout and the width rule.
"""
