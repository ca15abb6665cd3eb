"""The graph view: the workspace's entities and items as nodes, relationships and mentions as
edges, bounded (docs/decisions/0043-graph-view.md)."""
