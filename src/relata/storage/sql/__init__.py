"""The authoritative relational store: SQLAlchemy Core on SQLite (default) or PostgreSQL."""
