"""Alembic environment: runs on the connection ``relata.storage.sql.migrate`` hands it."""

from __future__ import annotations

from alembic import context

from relata.storage.sql.tables import metadata

config = context.config
connection = config.attributes.get("connection")
if connection is None:  # pragma: no cover - always called through migrate.py
    raise RuntimeError("run migrations with `relata migrate`")

context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
