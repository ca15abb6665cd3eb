"""Helpers every SQL repository uses: the workspace filter and dialect-aware upserts."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.elements import ColumnElement

from relata.domain.errors import MissingWorkspace


def ws_filter(table: sa.Table, workspace_id: str) -> ColumnElement[bool]:
    """The only sanctioned way to begin a filter on user content.

    An empty workspace raises instead of widening the query to every workspace.
    """
    if not isinstance(workspace_id, str) or not workspace_id.strip():
        raise MissingWorkspace(f"a {table.name} query was made without a workspace")
    return table.c.workspace_id == workspace_id


def ws_check_param(table: sa.Table, dialect: str) -> ColumnElement[bool]:
    """The workspace filter of a prebuilt statement that finds its rows through another index
    (primary keys, a full-text match): the workspace is the bound parameter ``ws``, checked
    with ``require_workspace`` before the statement runs. On SQLite the unary plus keeps the
    planner from walking the workspace's own index instead (it does, with no statistics, for
    ``id IN (...)``), which would make the cost grow with the workspace rather than with the
    rows asked for."""
    if dialect != "sqlite":
        return table.c.workspace_id == sa.bindparam("ws")
    return sa.literal_column(f"+{table.name}.workspace_id") == sa.bindparam("ws")


def require_workspace(table: sa.Table, workspace_id: str) -> str:
    """``ws_filter``'s check alone, for prebuilt statements that take the workspace as a bound
    parameter (``ws``): an empty workspace still raises instead of widening the query."""
    if not isinstance(workspace_id, str) or not workspace_id.strip():
        raise MissingWorkspace(f"a {table.name} query was made without a workspace")
    return workspace_id


def insert_for(dialect: str, table: sa.Table) -> Any:
    """A dialect-specific INSERT that supports ``on_conflict_do_*``."""
    if dialect == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)


def row_dict(row: sa.Row[Any]) -> dict[str, Any]:
    return dict(row._mapping)
