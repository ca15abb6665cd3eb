"""one FTS5 index pair per workspace (SQLite)

SQLite: every existing workspace gets its own ``fts_items_<key>`` / ``fts_chunks_<key>``
external-content FTS5 tables over views of its live rows, kept in step by triggers guarded by
its id, and back-filled here (FTS5 'rebuild' through the views); then 0002's shared
``items_fts`` / ``chunks_fts`` and their triggers are dropped. FTS5's ``bm25()`` on a
workspace's tables thus takes that workspace's statistics only
(docs/decisions/0044-fts5-table-per-workspace.md). Workspaces created later get theirs from
``relata.storage.sql.workspace_fts.create``, in the transaction that inserts them.

The statements are frozen here rather than imported, so that this revision keeps doing what it
did when the DDL of new workspaces changes (a change needs its own revision). A test checks
that a migrated workspace's objects are the ones a new workspace gets.

Downgrade drops the per-workspace objects and restores 0002's shared tables and triggers,
re-indexed from the tables.

PostgreSQL: nothing (0011 keeps its statistics per workspace).

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-06 00:00:00
"""

# DDL naming a workspace's objects: names from names() ([0-9a-fx] only), the id quoted.
# ruff: noqa: S608

from __future__ import annotations

import re

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_TOKENIZE = "porter unicode61 remove_diacritics 2"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _names(workspace_id: str) -> tuple[str, str]:
    key = (
        workspace_id.replace("-", "")
        if _UUID.fullmatch(workspace_id)
        else "x" + workspace_id.encode().hex()
    )
    return f"fts_items_{key}", f"fts_chunks_{key}"


def _create(workspace_id: str) -> list[str]:
    i, c = _names(workspace_id)
    ws = "'" + workspace_id.replace("'", "''") + "'"
    live_item = "SELECT 1 FROM items WHERE items.id = {}.item_id AND items.deleted_at IS NULL"
    return [
        f"""CREATE VIEW IF NOT EXISTS {i}_src AS
            SELECT rowid AS doc, title, text FROM items
            WHERE workspace_id = {ws} AND deleted_at IS NULL""",
        f"""CREATE VIEW IF NOT EXISTS {c}_src AS
            SELECT chunks.rowid AS doc, chunks.text AS text FROM chunks
            JOIN items ON items.id = chunks.item_id
            WHERE chunks.workspace_id = {ws} AND items.deleted_at IS NULL""",
        f"""CREATE VIRTUAL TABLE IF NOT EXISTS {i} USING fts5(
            title, text, content='{i}_src', content_rowid='doc', tokenize='{_TOKENIZE}')""",
        f"""CREATE VIRTUAL TABLE IF NOT EXISTS {c} USING fts5(
            text, content='{c}_src', content_rowid='doc', tokenize='{_TOKENIZE}')""",
        f"""CREATE TRIGGER IF NOT EXISTS {i}_ai AFTER INSERT ON items
            WHEN new.workspace_id = {ws} AND new.deleted_at IS NULL BEGIN
            INSERT INTO {i}(rowid, title, text) VALUES (new.rowid, new.title, new.text);
        END""",
        f"""CREATE TRIGGER IF NOT EXISTS {i}_ad AFTER DELETE ON items
            WHEN old.workspace_id = {ws} AND old.deleted_at IS NULL BEGIN
            INSERT INTO {i}({i}, rowid, title, text)
            VALUES ('delete', old.rowid, old.title, old.text);
        END""",
        f"""CREATE TRIGGER IF NOT EXISTS {i}_bd BEFORE DELETE ON items
            WHEN old.workspace_id = {ws} AND old.deleted_at IS NULL BEGIN
            INSERT INTO {c}({c}, rowid, text)
            SELECT 'delete', rowid, text FROM chunks
            WHERE item_id = old.id AND workspace_id = {ws};
        END""",
        f"""CREATE TRIGGER IF NOT EXISTS {i}_au AFTER UPDATE OF title, text, deleted_at ON items
            WHEN old.workspace_id = {ws} AND (old.deleted_at IS NULL OR new.deleted_at IS NULL)
            AND (old.title IS NOT new.title OR old.text IS NOT new.text
                 OR (old.deleted_at IS NULL) <> (new.deleted_at IS NULL)) BEGIN
            INSERT INTO {i}({i}, rowid, title, text)
            SELECT 'delete', old.rowid, old.title, old.text WHERE old.deleted_at IS NULL;
            INSERT INTO {i}(rowid, title, text)
            SELECT new.rowid, new.title, new.text WHERE new.deleted_at IS NULL;
            INSERT INTO {c}({c}, rowid, text)
            SELECT 'delete', rowid, text FROM chunks
            WHERE item_id = old.id AND workspace_id = {ws}
            AND old.deleted_at IS NULL AND new.deleted_at IS NOT NULL;
            INSERT INTO {c}(rowid, text)
            SELECT rowid, text FROM chunks
            WHERE item_id = old.id AND workspace_id = {ws}
            AND old.deleted_at IS NOT NULL AND new.deleted_at IS NULL;
        END""",
        f"""CREATE TRIGGER IF NOT EXISTS {c}_ai AFTER INSERT ON chunks
            WHEN new.workspace_id = {ws} BEGIN
            INSERT INTO {c}(rowid, text) SELECT new.rowid, new.text
            WHERE EXISTS ({live_item.format("new")});
        END""",
        f"""CREATE TRIGGER IF NOT EXISTS {c}_ad AFTER DELETE ON chunks
            WHEN old.workspace_id = {ws} BEGIN
            INSERT INTO {c}({c}, rowid, text) SELECT 'delete', old.rowid, old.text
            WHERE EXISTS ({live_item.format("old")});
        END""",
        f"""CREATE TRIGGER IF NOT EXISTS {c}_au AFTER UPDATE OF text ON chunks
            WHEN old.workspace_id = {ws} AND old.text IS NOT new.text BEGIN
            INSERT INTO {c}({c}, rowid, text) SELECT 'delete', old.rowid, old.text
            WHERE EXISTS ({live_item.format("old")});
            INSERT INTO {c}(rowid, text) SELECT new.rowid, new.text
            WHERE EXISTS ({live_item.format("new")});
        END""",
        # Back-fill: the workspace's live rows, through the views.
        f"INSERT INTO {i}({i}) VALUES ('rebuild')",
        f"INSERT INTO {c}({c}) VALUES ('rebuild')",
    ]


def _drop(workspace_id: str) -> list[str]:
    i, c = _names(workspace_id)
    triggers = [f"{i}_{s}" for s in ("ai", "ad", "bd", "au")] + [
        f"{c}_{s}" for s in ("ai", "ad", "au")
    ]
    return [
        *(f"DROP TRIGGER IF EXISTS {t}" for t in triggers),
        f"DROP TABLE IF EXISTS {c}",
        f"DROP TABLE IF EXISTS {i}",
        f"DROP VIEW IF EXISTS {c}_src",
        f"DROP VIEW IF EXISTS {i}_src",
    ]


# 0002's shared tables and triggers, for the downgrade.
_SHARED_UP = [
    f"CREATE VIRTUAL TABLE items_fts USING fts5("
    f"title, text, content='items', content_rowid='rowid', tokenize='{_TOKENIZE}')",
    f"CREATE VIRTUAL TABLE chunks_fts USING fts5("
    f"text, content='chunks', content_rowid='rowid', tokenize='{_TOKENIZE}')",
    """CREATE TRIGGER items_fts_ai AFTER INSERT ON items BEGIN
        INSERT INTO items_fts(rowid, title, text) VALUES (new.rowid, new.title, new.text);
    END""",
    """CREATE TRIGGER items_fts_ad AFTER DELETE ON items BEGIN
        INSERT INTO items_fts(items_fts, rowid, title, text)
        VALUES ('delete', old.rowid, old.title, old.text);
    END""",
    """CREATE TRIGGER items_fts_au AFTER UPDATE OF title, text ON items
    WHEN old.title IS NOT new.title OR old.text IS NOT new.text BEGIN
        INSERT INTO items_fts(items_fts, rowid, title, text)
        VALUES ('delete', old.rowid, old.title, old.text);
        INSERT INTO items_fts(rowid, title, text) VALUES (new.rowid, new.title, new.text);
    END""",
    """CREATE TRIGGER chunks_fts_ai AFTER INSERT ON chunks BEGIN
        INSERT INTO chunks_fts(rowid, text) VALUES (new.rowid, new.text);
    END""",
    """CREATE TRIGGER chunks_fts_ad AFTER DELETE ON chunks BEGIN
        INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
    END""",
    """CREATE TRIGGER chunks_fts_au AFTER UPDATE OF text ON chunks
    WHEN old.text IS NOT new.text BEGIN
        INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
        INSERT INTO chunks_fts(rowid, text) VALUES (new.rowid, new.text);
    END""",
    "INSERT INTO items_fts(items_fts) VALUES ('rebuild')",
    "INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')",
]

_SHARED_DOWN = [
    "DROP TRIGGER IF EXISTS chunks_fts_au",
    "DROP TRIGGER IF EXISTS chunks_fts_ad",
    "DROP TRIGGER IF EXISTS chunks_fts_ai",
    "DROP TRIGGER IF EXISTS items_fts_au",
    "DROP TRIGGER IF EXISTS items_fts_ad",
    "DROP TRIGGER IF EXISTS items_fts_ai",
    "DROP TABLE IF EXISTS chunks_fts",
    "DROP TABLE IF EXISTS items_fts",
]


def _workspace_ids() -> list[str]:
    rows = op.get_bind().execute(sa.text("SELECT id FROM workspaces ORDER BY id"))
    return [str(r[0]) for r in rows]


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for statement in _SHARED_DOWN:
        op.execute(statement)
    for workspace_id in _workspace_ids():
        for statement in _create(workspace_id):
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for workspace_id in _workspace_ids():
        for statement in _drop(workspace_id):
            op.execute(statement)
    for statement in _SHARED_UP:
        op.execute(statement)
