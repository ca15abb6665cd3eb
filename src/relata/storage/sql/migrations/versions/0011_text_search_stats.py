"""per-workspace full-text statistics on PostgreSQL, kept at indexing time

PostgreSQL ranks the text legs with BM25 (docs/decisions/0032-text-search-per-dialect.md),
which needs, per workspace and index (``items``: title + text; ``chunks``: text), the number of
live rows, their total length, and each term's document frequency:

* ``text_stats (workspace_id, index_name, doc_count, total_length)``
* ``text_term_stats (workspace_id, index_name, term, doc_count)``

Triggers keep them in step with every write, in the writer's own transaction (repositories,
raw SQL, ON DELETE CASCADE): statement-level triggers with transition tables on ``items`` and
``chunks`` add and subtract the lexemes of each row's generated ``search_vector``; an item's
soft delete (or restore) subtracts (adds back) it and all its chunks, since only live items
and the chunks of live items count; a row-level ``BEFORE DELETE`` trigger on ``items``
subtracts the chunks of a live item before ON DELETE CASCADE removes them. Writers of one
workspace queue on a transaction-scoped advisory lock, so their updates of the shared rows
cannot deadlock each other. A term whose count falls to 0 keeps its row (count 0).

Each row also gets ``search_length``, a generated column holding its vector's length, so a
query reads a candidate's length without unnesting its vector. Existing rows get their
statistics here (``relata_text_stats_rebuild()``, which a restore that
bypassed triggers can also call). Lengths are token counts (positions) of the tsvector, as
FTS5's are of its columns. SQLite needs nothing: it reads its statistics from FTS5's own
shadow tables (0021), so this revision does nothing there.

Revision ID: 0011_text_search_stats
Revises: 0010
Create Date: 2026-12-05 06:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_PG_MAX_CHARS = 250_000  # 0002's

_PG_UP = [
    """CREATE TABLE text_stats (
        workspace_id varchar(36) NOT NULL,
        index_name varchar(16) NOT NULL,
        doc_count bigint NOT NULL DEFAULT 0,
        total_length bigint NOT NULL DEFAULT 0,
        CONSTRAINT pk_text_stats PRIMARY KEY (workspace_id, index_name)
    )""",
    """CREATE TABLE text_term_stats (
        workspace_id varchar(36) NOT NULL,
        index_name varchar(16) NOT NULL,
        term text NOT NULL,
        doc_count bigint NOT NULL DEFAULT 0,
        CONSTRAINT pk_text_term_stats PRIMARY KEY (workspace_id, index_name, term)
    )""",
    # A row's length: its tokens (positions; a lexeme stored without any counts once).
    """CREATE FUNCTION relata_tsv_length(v tsvector) RETURNS bigint
        LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS
        $$ SELECT coalesce(sum(greatest(coalesce(cardinality(positions), 0), 1)), 0)::bigint
           FROM unnest(v) $$""",
    # Each row's length beside its vector, for scoring without reading the whole vector: the
    # same expressions as 0002's generated columns (a generated column cannot read another).
    f"""ALTER TABLE items ADD COLUMN search_length integer GENERATED ALWAYS AS (
        relata_tsv_length(
            setweight(to_tsvector('english'::regconfig, coalesce(title, '')), 'A')
            || setweight(to_tsvector('english'::regconfig,
                                     left(coalesce(text, ''), {_PG_MAX_CHARS})), 'B'))
    ) STORED""",
    f"""ALTER TABLE chunks ADD COLUMN search_length integer GENERATED ALWAYS AS (
        relata_tsv_length(to_tsvector('english'::regconfig, left(text, {_PG_MAX_CHARS})))
    ) STORED""",
    # Add (sign 1) or subtract (sign -1) rows' vectors to their workspaces' statistics.
    """CREATE FUNCTION relata_text_stats_add(idx text, ws text[], vecs tsvector[], signs int[])
        RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
        IF ws IS NULL OR cardinality(ws) = 0 THEN
            RETURN;
        END IF;
        PERFORM pg_advisory_xact_lock(hashtextextended('relata_text_stats:' || w, 0))
        FROM (SELECT DISTINCT w FROM unnest(ws) AS w ORDER BY w) AS locks;
        INSERT INTO text_stats AS t (workspace_id, index_name, doc_count, total_length)
        SELECT d.w, idx, sum(d.s), sum(d.s * relata_tsv_length(d.v))
        FROM unnest(ws, vecs, signs) AS d(w, v, s)
        WHERE d.w IN (SELECT id FROM workspaces)  -- not a workspace being deleted
        GROUP BY d.w ORDER BY d.w
        ON CONFLICT (workspace_id, index_name) DO UPDATE
        SET doc_count = t.doc_count + excluded.doc_count,
            total_length = t.total_length + excluded.total_length;
        INSERT INTO text_term_stats AS t (workspace_id, index_name, term, doc_count)
        SELECT d.w, idx, u.lexeme, sum(d.s)
        FROM unnest(ws, vecs, signs) AS d(w, v, s), unnest(d.v) AS u
        WHERE d.w IN (SELECT id FROM workspaces)
        GROUP BY d.w, u.lexeme HAVING sum(d.s) <> 0 ORDER BY d.w, u.lexeme
        ON CONFLICT (workspace_id, index_name, term) DO UPDATE
        SET doc_count = t.doc_count + excluded.doc_count;
    END $$""",
    """CREATE FUNCTION relata_items_text_stats() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            PERFORM relata_text_stats_add('items', array_agg(workspace_id::text),
                array_agg(search_vector), array_agg(1))
            FROM new_rows WHERE deleted_at IS NULL;
        ELSIF TG_OP = 'DELETE' THEN
            PERFORM relata_text_stats_add('items', array_agg(workspace_id::text),
                array_agg(search_vector), array_agg(-1))
            FROM old_rows WHERE deleted_at IS NULL;
        ELSE
            -- Only rows whose vector, liveness or workspace changed (most updates are status).
            PERFORM relata_text_stats_add('items', array_agg(w), array_agg(v), array_agg(s))
            FROM (SELECT o.workspace_id::text, o.search_vector, -1
                  FROM old_rows o JOIN new_rows n ON n.id = o.id
                  WHERE o.deleted_at IS NULL AND (o.search_vector IS DISTINCT FROM
                        n.search_vector OR n.deleted_at IS NOT NULL
                        OR o.workspace_id <> n.workspace_id)
                  UNION ALL
                  SELECT n.workspace_id::text, n.search_vector, 1
                  FROM old_rows o JOIN new_rows n ON n.id = o.id
                  WHERE n.deleted_at IS NULL AND (o.search_vector IS DISTINCT FROM
                        n.search_vector OR o.deleted_at IS NOT NULL
                        OR o.workspace_id <> n.workspace_id)) AS d(w, v, s);
            -- A soft delete takes the item's chunks out; a restore puts them back.
            PERFORM relata_text_stats_add('chunks', array_agg(c.workspace_id::text),
                array_agg(c.search_vector),
                array_agg(CASE WHEN n.deleted_at IS NULL THEN 1 ELSE -1 END))
            FROM old_rows o JOIN new_rows n ON n.id = o.id JOIN chunks c ON c.item_id = n.id
            WHERE (o.deleted_at IS NULL) <> (n.deleted_at IS NULL);
        END IF;
        RETURN NULL;
    END $$""",
    # Before an item goes, its chunks leave the chunk statistics (if it was live): by the time
    # ON DELETE CASCADE removes them, the item is gone and its liveness unknown.
    """CREATE FUNCTION relata_items_text_stats_delete() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF OLD.deleted_at IS NULL THEN
            PERFORM relata_text_stats_add('chunks', array_agg(workspace_id::text),
                array_agg(search_vector), array_agg(-1))
            FROM chunks WHERE item_id = OLD.id;
        END IF;
        RETURN OLD;
    END $$""",
    """CREATE FUNCTION relata_chunks_text_stats() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            PERFORM relata_text_stats_add('chunks', array_agg(n.workspace_id::text),
                array_agg(n.search_vector), array_agg(1))
            FROM new_rows n JOIN items i ON i.id = n.item_id WHERE i.deleted_at IS NULL;
        ELSIF TG_OP = 'DELETE' THEN
            -- A cascade from a deleted item finds no item: 0011's BEFORE DELETE did it.
            PERFORM relata_text_stats_add('chunks', array_agg(o.workspace_id::text),
                array_agg(o.search_vector), array_agg(-1))
            FROM old_rows o JOIN items i ON i.id = o.item_id WHERE i.deleted_at IS NULL;
        ELSE
            PERFORM relata_text_stats_add('chunks', array_agg(w), array_agg(v), array_agg(s))
            FROM (SELECT o.workspace_id::text, o.search_vector, -1
                  FROM old_rows o JOIN new_rows n ON n.id = o.id
                  JOIN items i ON i.id = o.item_id
                  WHERE i.deleted_at IS NULL AND (o.search_vector IS DISTINCT FROM
                        n.search_vector OR o.workspace_id <> n.workspace_id)
                  UNION ALL
                  SELECT n.workspace_id::text, n.search_vector, 1
                  FROM old_rows o JOIN new_rows n ON n.id = o.id
                  JOIN items i ON i.id = n.item_id
                  WHERE i.deleted_at IS NULL AND (o.search_vector IS DISTINCT FROM
                        n.search_vector OR o.workspace_id <> n.workspace_id)) AS d(w, v, s);
        END IF;
        RETURN NULL;
    END $$""",
    """CREATE TRIGGER items_text_stats_ai AFTER INSERT ON items
        REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION relata_items_text_stats()""",
    """CREATE TRIGGER items_text_stats_au AFTER UPDATE ON items
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION relata_items_text_stats()""",
    """CREATE TRIGGER items_text_stats_ad AFTER DELETE ON items
        REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION relata_items_text_stats()""",
    """CREATE TRIGGER items_text_stats_bd BEFORE DELETE ON items
        FOR EACH ROW EXECUTE FUNCTION relata_items_text_stats_delete()""",
    """CREATE TRIGGER chunks_text_stats_ai AFTER INSERT ON chunks
        REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION relata_chunks_text_stats()""",
    """CREATE TRIGGER chunks_text_stats_au AFTER UPDATE ON chunks
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION relata_chunks_text_stats()""",
    """CREATE TRIGGER chunks_text_stats_ad AFTER DELETE ON chunks
        REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION relata_chunks_text_stats()""",
    # A deleted workspace's rows. Its items and chunks go by cascade, whose triggers may run
    # before or after this one: relata_text_stats_add skips workspaces that are gone.
    """CREATE FUNCTION relata_workspaces_text_stats() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM text_stats WHERE workspace_id IN (SELECT id FROM old_rows);
        DELETE FROM text_term_stats WHERE workspace_id IN (SELECT id FROM old_rows);
        RETURN NULL;
    END $$""",
    """CREATE TRIGGER workspaces_text_stats_ad AFTER DELETE ON workspaces
        REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION relata_workspaces_text_stats()""",
    # TRUNCATE fires no row or DELETE triggers (relata transfer --force empties a target
    # with it): every row of the table is gone, so are its statistics.
    """CREATE FUNCTION relata_text_stats_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM text_stats WHERE index_name = TG_ARGV[0];
        DELETE FROM text_term_stats WHERE index_name = TG_ARGV[0];
        IF TG_ARGV[0] = 'items' THEN  -- chunks count only under live items
            DELETE FROM text_stats WHERE index_name = 'chunks';
            DELETE FROM text_term_stats WHERE index_name = 'chunks';
        END IF;
        RETURN NULL;
    END $$""",
    """CREATE TRIGGER items_text_stats_at AFTER TRUNCATE ON items
        FOR EACH STATEMENT EXECUTE FUNCTION relata_text_stats_truncate('items')""",
    """CREATE TRIGGER chunks_text_stats_at AFTER TRUNCATE ON chunks
        FOR EACH STATEMENT EXECUTE FUNCTION relata_text_stats_truncate('chunks')""",
    # Recompute everything from the live rows (the backfill below; after a restore that
    # bypassed triggers). Takes the tables' write locks so no writer interleaves.
    """CREATE FUNCTION relata_text_stats_rebuild() RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
        LOCK TABLE items, chunks IN SHARE MODE;
        LOCK TABLE text_stats, text_term_stats IN EXCLUSIVE MODE;
        DELETE FROM text_stats;
        DELETE FROM text_term_stats;
        INSERT INTO text_stats (workspace_id, index_name, doc_count, total_length)
        SELECT workspace_id, 'items', count(*), sum(relata_tsv_length(search_vector))
        FROM items WHERE deleted_at IS NULL GROUP BY workspace_id;
        INSERT INTO text_stats (workspace_id, index_name, doc_count, total_length)
        SELECT c.workspace_id, 'chunks', count(*), sum(relata_tsv_length(c.search_vector))
        FROM chunks c JOIN items i ON i.id = c.item_id
        WHERE i.deleted_at IS NULL GROUP BY c.workspace_id;
        INSERT INTO text_term_stats (workspace_id, index_name, term, doc_count)
        SELECT i.workspace_id, 'items', u.lexeme, count(*)
        FROM items i, unnest(i.search_vector) AS u
        WHERE i.deleted_at IS NULL GROUP BY i.workspace_id, u.lexeme;
        INSERT INTO text_term_stats (workspace_id, index_name, term, doc_count)
        SELECT c.workspace_id, 'chunks', u.lexeme, count(*)
        FROM chunks c JOIN items i ON i.id = c.item_id, unnest(c.search_vector) AS u
        WHERE i.deleted_at IS NULL GROUP BY c.workspace_id, u.lexeme;
    END $$""",
    "SELECT relata_text_stats_rebuild()",
]

_PG_DOWN = [
    "DROP TRIGGER IF EXISTS chunks_text_stats_at ON chunks",
    "DROP TRIGGER IF EXISTS items_text_stats_at ON items",
    "DROP FUNCTION IF EXISTS relata_text_stats_truncate()",
    "DROP TRIGGER IF EXISTS workspaces_text_stats_ad ON workspaces",
    "DROP TRIGGER IF EXISTS chunks_text_stats_ad ON chunks",
    "DROP TRIGGER IF EXISTS chunks_text_stats_au ON chunks",
    "DROP TRIGGER IF EXISTS chunks_text_stats_ai ON chunks",
    "DROP TRIGGER IF EXISTS items_text_stats_bd ON items",
    "DROP TRIGGER IF EXISTS items_text_stats_ad ON items",
    "DROP TRIGGER IF EXISTS items_text_stats_au ON items",
    "DROP TRIGGER IF EXISTS items_text_stats_ai ON items",
    "DROP FUNCTION IF EXISTS relata_text_stats_rebuild()",
    "DROP FUNCTION IF EXISTS relata_workspaces_text_stats()",
    "DROP FUNCTION IF EXISTS relata_chunks_text_stats()",
    "DROP FUNCTION IF EXISTS relata_items_text_stats_delete()",
    "DROP FUNCTION IF EXISTS relata_items_text_stats()",
    "DROP FUNCTION IF EXISTS relata_text_stats_add(text, text[], tsvector[], int[])",
    "ALTER TABLE chunks DROP COLUMN IF EXISTS search_length",
    "ALTER TABLE items DROP COLUMN IF EXISTS search_length",
    "DROP FUNCTION IF EXISTS relata_tsv_length(tsvector)",
    "DROP TABLE IF EXISTS text_term_stats",
    "DROP TABLE IF EXISTS text_stats",
]


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in _PG_UP:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in _PG_DOWN:
        op.execute(statement)
