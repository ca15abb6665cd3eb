"""Export of a workspace's knowledge (JSON Lines, CSV, GraphML) and import of JSON Lines into
a new workspace (docs/decisions/0041-export-and-import.md)."""
