"""full-text indexes for items and chunks

SQLite: FTS5 external-content tables (``items_fts``: title, text; ``chunks_fts``: text) with the
``porter unicode61 remove_diacritics 2`` tokenizer, kept in step with ``items``/``chunks`` by
triggers, so every writer (repositories, raw SQL, ON DELETE CASCADE) keeps the index consistent.
They key on the tables' implicit rowid, which SQLite keeps stable (VACUUM preserves it); a later
migration that REBUILDS items or chunks on SQLite (batch "move and copy") drops these triggers and
renumbers rowids, so it must recreate the triggers and run the FTS5 'rebuild' command.

PostgreSQL: generated ``search_vector`` tsvector columns (``english`` configuration; item title
weight A, text weight B) with GIN indexes. Text beyond 250,000 characters is not indexed there: a
tsvector is capped at 1 MB, and a longer item would otherwise fail to insert. Chunks are small,
so the chunk leg still covers the whole text.

Existing rows are indexed here too (FTS5 'rebuild'; a STORED generated column is computed for
every row when it is added). See docs/decisions/0009-full-text-and-rank-fusion.md.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02 00:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_TOKENIZE = "porter unicode61 remove_diacritics 2"
_PG_MAX_CHARS = 250_000

_SQLITE_UP = [
    f"CREATE VIRTUAL TABLE items_fts USING fts5("
    f"title, text, content='items', content_rowid='rowid', tokenize='{_TOKENIZE}')",
    f"CREATE VIRTUAL TABLE chunks_fts USING fts5("
    f"text, content='chunks', content_rowid='rowid', tokenize='{_TOKENIZE}')",
    # An external-content index must be told the exact old values to remove them.
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
    # Backfill: index the rows written before this revision.
    "INSERT INTO items_fts(items_fts) VALUES ('rebuild')",
    "INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')",
]

_SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS chunks_fts_au",
    "DROP TRIGGER IF EXISTS chunks_fts_ad",
    "DROP TRIGGER IF EXISTS chunks_fts_ai",
    "DROP TRIGGER IF EXISTS items_fts_au",
    "DROP TRIGGER IF EXISTS items_fts_ad",
    "DROP TRIGGER IF EXISTS items_fts_ai",
    "DROP TABLE IF EXISTS chunks_fts",
    "DROP TABLE IF EXISTS items_fts",
]

_PG_UP = [
    f"""ALTER TABLE items ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english'::regconfig, coalesce(title, '')), 'A')
        || setweight(to_tsvector('english'::regconfig,
                                 left(coalesce(text, ''), {_PG_MAX_CHARS})), 'B')
    ) STORED""",
    "CREATE INDEX ix_items_search_vector ON items USING gin (search_vector)",
    f"""ALTER TABLE chunks ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
        to_tsvector('english'::regconfig, left(text, {_PG_MAX_CHARS}))
    ) STORED""",
    "CREATE INDEX ix_chunks_search_vector ON chunks USING gin (search_vector)",
]

_PG_DOWN = [
    "DROP INDEX IF EXISTS ix_chunks_search_vector",
    "ALTER TABLE chunks DROP COLUMN IF EXISTS search_vector",
    "DROP INDEX IF EXISTS ix_items_search_vector",
    "ALTER TABLE items DROP COLUMN IF EXISTS search_vector",
]


def _statements(up: bool) -> list[str]:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        return _SQLITE_UP if up else _SQLITE_DOWN
    if dialect == "postgresql":
        return _PG_UP if up else _PG_DOWN
    raise RuntimeError(f"full-text search is not implemented for {dialect!r}")


def upgrade() -> None:
    for statement in _statements(up=True):
        op.execute(statement)


def downgrade() -> None:
    for statement in _statements(up=False):
        op.execute(statement)
