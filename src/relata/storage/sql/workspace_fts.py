"""One FTS5 index pair per workspace on SQLite, so FTS5's own ``bm25()`` ranks a workspace
with that workspace's statistics and nothing else (docs/decisions/0044-fts5-table-per-workspace.md,
amending 0021).

For workspace W (``names(W)``):

* ``fts_items_<key>(title, text)`` over the view ``fts_items_<key>_src`` (W's live items) and
  ``fts_chunks_<key>(text)`` over ``fts_chunks_<key>_src`` (W's chunks whose item is live):
  FTS5 external-content tables, so the text is stored once (in ``items`` / ``chunks``) and
  ``highlight()``, ``snippet()``, ``'rebuild'`` and ``'integrity-check'`` read the workspace's
  own rows through the view.
* Triggers on ``items`` and ``chunks``, each guarded by ``WHEN ... workspace_id = 'W'``, keep
  the pair in step with every writer (repositories, raw SQL, ON DELETE CASCADE): a row enters
  when it is written live, leaves when it is deleted or its item is soft-deleted, comes back on
  restore, and is replaced when its text changes. An external-content index must be told the
  exact old values of what it holds, so every removal is guarded by the same liveness that
  decided the insertion. An item's hard delete removes its chunks from the chunk index first
  (``BEFORE DELETE``): the cascade that then deletes them runs after the item row is gone, so
  their own trigger finds no live item and does nothing.

``create`` runs in the transaction that inserts the workspace (``SqlWorkspaceRepository``,
first sign-in, ``relata transfer``; migration 0016 for workspaces that existed before), and
``drop`` in the one that deletes it, before the cascade, so deleting a workspace costs no
index work. Both are idempotent. SQLite DDL is transactional, so a rolled-back create leaves
nothing behind. Nothing here runs on PostgreSQL, whose statistics are kept per workspace by
migration 0011's triggers.
"""

# DDL naming a workspace's objects: names from names() ([0-9a-fx] only), the id quoted.
# ruff: noqa: S608

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy.engine import Connection

# 0002's tokenizer, unchanged: stemming and folding as before.
TOKENIZE = "porter unicode61 remove_diacritics 2"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True, slots=True)
class WorkspaceFts:
    """The names of one workspace's full-text objects."""

    workspace_id: str
    items: str
    chunks: str


def names(workspace_id: str) -> WorkspaceFts:
    """The workspace's index names. The key is injective and holds only ``[0-9a-fx]``: a
    canonical (lower-case) UUID gives its 32 hex digits, any other id ``x`` and the hex of its
    UTF-8 bytes, so no id can name another's tables or inject SQL."""
    if not workspace_id:
        raise ValueError("a workspace id is required")
    key = (
        workspace_id.replace("-", "")
        if _UUID.fullmatch(workspace_id)
        else "x" + workspace_id.encode().hex()
    )
    return WorkspaceFts(workspace_id, f"fts_items_{key}", f"fts_chunks_{key}")


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def create_statements(workspace_id: str) -> list[str]:
    """The DDL of the workspace's index pair, views and triggers (``IF NOT EXISTS``)."""
    n = names(workspace_id)
    ws = _literal(workspace_id)
    i, c = n.items, n.chunks
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
            title, text, content='{i}_src', content_rowid='doc', tokenize='{TOKENIZE}')""",
        f"""CREATE VIRTUAL TABLE IF NOT EXISTS {c} USING fts5(
            text, content='{c}_src', content_rowid='doc', tokenize='{TOKENIZE}')""",
        # ---- items
        f"""CREATE TRIGGER IF NOT EXISTS {i}_ai AFTER INSERT ON items
            WHEN new.workspace_id = {ws} AND new.deleted_at IS NULL BEGIN
            INSERT INTO {i}(rowid, title, text) VALUES (new.rowid, new.title, new.text);
        END""",
        f"""CREATE TRIGGER IF NOT EXISTS {i}_ad AFTER DELETE ON items
            WHEN old.workspace_id = {ws} AND old.deleted_at IS NULL BEGIN
            INSERT INTO {i}({i}, rowid, title, text)
            VALUES ('delete', old.rowid, old.title, old.text);
        END""",
        # Before the cascade: once the item is gone its chunks' liveness is unknown.
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
        # ---- chunks (only those of live items are indexed)
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
    ]


def drop_statements(workspace_id: str) -> list[str]:
    """The DDL removing everything ``create_statements`` makes (``IF EXISTS``)."""
    n = names(workspace_id)
    triggers = [f"{n.items}_{s}" for s in ("ai", "ad", "bd", "au")]
    triggers += [f"{n.chunks}_{s}" for s in ("ai", "ad", "au")]
    return [
        *(f"DROP TRIGGER IF EXISTS {t}" for t in triggers),
        f"DROP TABLE IF EXISTS {n.chunks}",
        f"DROP TABLE IF EXISTS {n.items}",
        f"DROP VIEW IF EXISTS {n.chunks}_src",
        f"DROP VIEW IF EXISTS {n.items}_src",
    ]


def create(conn: Connection, workspace_id: str, *, backfill: bool = False) -> WorkspaceFts:
    """Create the workspace's index pair in ``conn``'s transaction (SQLite only; a no-op
    elsewhere). ``backfill`` indexes the rows the workspace already holds (FTS5 'rebuild'
    through the views: the workspace's live rows only)."""
    n = names(workspace_id)
    if conn.dialect.name != "sqlite":
        return n
    for statement in create_statements(workspace_id):
        conn.exec_driver_sql(statement)
    if backfill:
        for table in (n.items, n.chunks):
            conn.exec_driver_sql(f"INSERT INTO {table}({table}) VALUES ('rebuild')")
    return n


def drop(conn: Connection, workspace_id: str) -> None:
    """Drop the workspace's index pair in ``conn``'s transaction (SQLite only)."""
    if conn.dialect.name != "sqlite":
        return
    for statement in drop_statements(workspace_id):
        conn.exec_driver_sql(statement)
