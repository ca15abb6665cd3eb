"""Alembic environment: runs on the connection ``relata.storage.sql.migrate`` hands it."""

from __future__ import annotations

from typing import Any

from alembic import context

from relata.storage.sql.tables import metadata

config = context.config
connection = config.attributes.get("connection")
if connection is None:  # pragma: no cover - always called through migrate.py
    raise RuntimeError("run migrations with `relata migrate`")


def _include_object(
    obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any
) -> bool:
    """Autogenerate compares only what ``tables.py`` declares: the vector tables (created at
    run time for the configured width), the full-text tables, columns and indexes of
    migration 0002 are not declared there and are not to be dropped."""
    return not (type_ in ("table", "column", "index") and reflected and compare_to is None)


context.configure(
    include_object=_include_object,
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
