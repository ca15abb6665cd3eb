"""Domain types and ports. Imports only the standard library (enforced by import-linter)."""
