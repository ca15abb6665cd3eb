"""``PgvectorStore``: the ``VectorStore`` port in the authoritative PostgreSQL database, on the
pgvector extension (docs/decisions/0031-pgvector-store.md).

One ordinary table per vector width, ``vec_chunks_<width>`` (the name sqlite-vec uses), so
widths never mix and a width change fills a fresh table (docs/decisions/0008-vector-stores.md):
the thin payload as columns, the vector as ``vector(<width>)``, an HNSW index on it (cosine)
and a B-tree on ``(workspace_id, item_id)`` for counts, an item's vectors and deletes. The
table is created on first use, or at start-up by ``prepare`` (``relata migrate``, ``serve``,
``worker``), not by a migration: its shape depends on the configured embedder's width, and the
extension is needed only by deployments that choose this store.

A search is a filtered search inside the index scan: pgvector 0.8's iterative scan
(``hnsw.iterative_scan = relaxed_order``) keeps walking the graph until enough rows pass the
workspace and the other filters, with ``hnsw.ef_search`` raised to at least ``k``, both set
for the query's own transaction only. The scan is asked for ``2k`` rows and the best ``k`` by
exact distance are kept (relaxed order may yield a closer row after a farther one). When it
yields fewer than ``k`` rows (a filter so selective that the scan gives up at
``hnsw.max_scan_tuples``, or simply fewer rows), the same query is answered exactly from the
filtered rows, so a filtered search always returns its ``k`` rows when they exist. Scores are
computed from the stored vectors and the hits ordered by ``ranked`` (best first, ties by
chunk id), whatever order the relaxed scan produced them in.

Vectors cross the wire as pgvector's text form (``[x,y,...]``) with nine significant digits,
which round-trips every float32 exactly: no driver type to register on the shared engine.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from relata.domain.errors import ConfigError
from relata.domain.ports import VectorHit, VectorRecord
from relata.storage.sql.engine import Database
from relata.storage.vectors.validation import (
    MAX_K,
    SearchFilters,
    Vector,
    check_dimensions,
    check_export,
    check_limit,
    exported,
    prepare_batch,
    prepare_search,
    ranked_by_distance,
    require_workspace,
    unit_vector,
)

TABLE_PREFIX = "vec_chunks_"
#: pgvector's HNSW index takes ``vector`` columns of at most this many dimensions.
MAX_INDEXED_DIMENSIONS = 2000
#: The oldest pgvector with iterative index scans (``hnsw.iterative_scan``).
MIN_VERSION = (0, 8, 0)
#: HNSW build parameters: pgvector's defaults, measured at 10k-1M vectors of width 384 in
#: docs/decisions/0031-pgvector-store.md.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
#: Candidates the index scan keeps per step; raised to ``k`` for larger ``k`` (its limit is
#: 1000, ``MAX_K``).
DEFAULT_EF_SEARCH = 100
#: Rows a search takes from the index scan, as a multiple of ``k``, before keeping the best k.
OVERFETCH = 2
_DELETE_BATCH = 1000  # rows per transaction when a whole workspace is deleted
# One number for the advisory lock that serialises this module's DDL across processes
# (CREATE ... IF NOT EXISTS is not safe against a concurrent identical CREATE).
_DDL_LOCK = 0x72656C617461_7601  # "relata" + "v1"
_TABLE_NAME = re.compile(r"^vec_chunks_([1-9][0-9]*)$")

_EXTENSION = sa.text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
_AVAILABLE = sa.text("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
_TABLES = sa.text(
    "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
    "AND tablename LIKE 'vec\\_chunks\\_%'"
)
# For the search's own transaction (set_config(..., true) is SET LOCAL). A custom plan for
# every search: whether the index or the (workspace, item) B-tree is cheaper depends on the
# workspace and filters bound, which a generic plan of a prepared statement would not see.
_SCAN_SETTINGS = sa.text(
    "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
    "set_config('hnsw.ef_search', :ef, true), "
    "set_config('plan_cache_mode', 'force_custom_plan', true)"
)


class _Sql:
    """The statements on one width's table. Every value is a bound parameter; the only
    interpolated parts are the table name and width, built from a validated integer (hence
    the ``noqa: S608``)."""

    def __init__(self, dimensions: int) -> None:
        table = vector_table(dimensions)
        vector = f"vector({dimensions})"
        self.table = table
        self.index = f"ix_{table}_embedding"
        self.create_index = (
            f"CREATE INDEX IF NOT EXISTS {self.index} ON {table} "
            f"USING hnsw (embedding vector_cosine_ops) "
            f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
        )
        self.create = (
            f"CREATE TABLE IF NOT EXISTS {table} (chunk_id uuid PRIMARY KEY, "
            "workspace_id text NOT NULL, item_id text NOT NULL, source_type text NOT NULL, "
            "created_at double precision NOT NULL, embedding_model text NOT NULL, "
            f"embedding {vector} NOT NULL)",
            f"CREATE INDEX IF NOT EXISTS ix_{table}_workspace_item "
            f"ON {table} (workspace_id, item_id)",
            self.create_index,
        )
        self.upsert = sa.text(
            f"INSERT INTO {table} (chunk_id, workspace_id, item_id, source_type, "  # noqa: S608
            "created_at, embedding_model, embedding) VALUES (CAST(:chunk_id AS uuid), "
            ":workspace_id, :item_id, :source_type, :created_at, :embedding_model, "
            f"CAST(:embedding AS {vector})) ON CONFLICT (chunk_id) DO UPDATE SET "
            "workspace_id = excluded.workspace_id, item_id = excluded.item_id, "
            "source_type = excluded.source_type, created_at = excluded.created_at, "
            "embedding_model = excluded.embedding_model, embedding = excluded.embedding"
        )
        self.distance = f"embedding <=> CAST(:q AS {vector})"
        self.item_vectors = sa.text(
            f"SELECT CAST(embedding AS real[]) FROM {table} "  # noqa: S608
            "WHERE workspace_id = :w AND item_id = :i ORDER BY chunk_id LIMIT :n"
        )
        self.count = sa.text(f"SELECT count(*) FROM {table} WHERE workspace_id = :w")  # noqa: S608
        # A page of the workspace's rows in chunk-id order (``export``), from the primary
        # key: the first page, and the pages after a chunk id.
        export = (
            "SELECT CAST(chunk_id AS text), workspace_id, item_id, source_type, created_at, "  # noqa: S608
            f"embedding_model, CAST(embedding AS real[]) FROM {table} WHERE workspace_id = :w"
        )
        self.export_first = sa.text(f"{export} ORDER BY chunk_id LIMIT :n")
        self.export_after = sa.text(
            f"{export} AND chunk_id > CAST(:after AS uuid) ORDER BY chunk_id LIMIT :n"
        )


def vector_table(dimensions: int) -> str:
    return f"{TABLE_PREFIX}{check_dimensions(dimensions)}"


def vector_text(vector: Vector) -> str:
    """pgvector's text form of a float32 vector; nine significant digits give back exactly
    the same float32 values."""
    return "[" + ",".join(["%.9g"] * len(vector)) % tuple(vector.tolist()) + "]"


class PgvectorStore:
    """The ``VectorStore`` port on PostgreSQL with pgvector (see the module docstring)."""

    def __init__(
        self, db: Database, dimensions: int, *, ef_search: int = DEFAULT_EF_SEARCH
    ) -> None:
        if db.dialect != "postgresql":
            raise ConfigError(
                "RELATA_VECTOR_STORE=pgvector needs a PostgreSQL database "
                "(RELATA_DATABASE_URL=postgresql+psycopg://...); with SQLite leave "
                "RELATA_VECTOR_STORE unset (sqlite-vec) or choose qdrant"
            )
        self.dimensions = check_dimensions(dimensions)
        if self.dimensions > MAX_INDEXED_DIMENSIONS:
            raise ConfigError(
                f"RELATA_VECTOR_STORE=pgvector indexes vectors of at most "
                f"{MAX_INDEXED_DIMENSIONS} dimensions and the embedder's are "
                f"{self.dimensions} wide: choose a smaller model or RELATA_EMBEDDING_DIMENSIONS, "
                "or RELATA_VECTOR_STORE=qdrant"
            )
        if not 1 <= ef_search <= MAX_K:
            raise ConfigError(f"pgvector ef_search must be 1..{MAX_K}")
        self._db = db
        self._ef_search = ef_search
        self._sql = _Sql(self.dimensions)
        self._ready = False
        self._lock = threading.Lock()
        #: Searches the index scan left short of ``k`` rows, answered by the exact query
        #: (diagnostics; the filtered-recall test reads it).
        self.exact_searches = 0

    @property
    def table(self) -> str:
        """This store's table (of its width)."""
        return self._sql.table

    # ------------------------------------------------------------------ set-up
    def prepare(self) -> None:
        """The extension (created when missing, if this role may) and this width's table
        with its indexes. Idempotent; safe when several processes start at once. Raises
        ``ConfigError`` saying what the operator must do when the extension is not there."""
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            with self._db.write() as conn:
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _DDL_LOCK})
                _ensure_extension(conn)
                for ddl in self._sql.create:
                    conn.exec_driver_sql(ddl)
            self._ready = True

    @contextmanager
    def bulk_load(self, *, memory_mb: int = 1024) -> Iterator[None]:
        """For filling a table in bulk (a benchmark, a first load): the HNSW index is
        dropped on entry and built once over every row on exit, with ``memory_mb`` of
        ``maintenance_work_mem`` for the build (the graph should fit, or the build slows
        down many times). A build is much cheaper than growing the graph row by row.
        Searches in between are answered without the index (exact, slow)."""
        self.prepare()
        with self._db.write() as conn:
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _DDL_LOCK})
            conn.exec_driver_sql(f"DROP INDEX IF EXISTS {self._sql.index}")
        try:
            yield
        finally:
            with self._db.write() as conn:
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _DDL_LOCK})
                conn.execute(
                    sa.text("SELECT set_config('maintenance_work_mem', :m, true)"),
                    {"m": f"{int(memory_mb)}MB"},
                )
                conn.exec_driver_sql(self._sql.create_index)

    # ------------------------------------------------------------------ writes
    def upsert(self, records: Sequence[VectorRecord]) -> None:
        batch = prepare_batch(records, self.dimensions)
        if not batch:
            return
        self.prepare()
        # Rows locked in one order by every writer: two overlapping batches cannot deadlock.
        batch.sort(key=lambda r: r.chunk_id)
        ids = [r.chunk_id for r in batch]
        with self._db.write() as conn:
            for other in _tables(conn):
                if other != self.table:  # a chunk re-embedded at this width leaves the old one
                    conn.execute(
                        sa.text(
                            f"DELETE FROM {other} WHERE chunk_id = ANY(CAST(:ids AS uuid[]))"  # noqa: S608
                        ),
                        {"ids": ids},
                    )
            conn.execute(
                self._sql.upsert,
                [
                    {
                        "chunk_id": r.chunk_id,
                        "workspace_id": r.workspace_id,
                        "item_id": r.item_id,
                        "source_type": r.source_type,
                        "created_at": r.created_at,
                        "embedding_model": r.embedding_model,
                        "embedding": vector_text(r.vector),
                    }
                    for r in batch
                ],
            )

    def delete_by_item(self, workspace_id: str, item_id: str) -> int:
        """Delete the item's vectors of every width (stale widths included)."""
        require_workspace(workspace_id)
        self.prepare()
        deleted = 0
        with self._db.write() as conn:
            for table in _tables(conn):
                result = conn.execute(
                    sa.text(f"DELETE FROM {table} WHERE workspace_id = :w AND item_id = :i"),  # noqa: S608
                    {"w": workspace_id, "i": item_id},
                )
                deleted += result.rowcount
        return deleted

    def delete_by_workspace(self, workspace_id: str) -> int:
        """Delete the workspace's vectors of every width, ``_DELETE_BATCH`` rows a
        transaction: no long lock or huge transaction for a large workspace."""
        require_workspace(workspace_id)
        self.prepare()
        with self._db.read(shared=False) as conn:
            tables = _tables(conn)
        total = 0
        for table in tables:
            statement = sa.text(
                f"DELETE FROM {table} WHERE chunk_id IN (SELECT chunk_id FROM {table} "  # noqa: S608
                "WHERE workspace_id = :w LIMIT :n)"
            )
            while True:
                with self._db.write() as conn:
                    n = conn.execute(statement, {"w": workspace_id, "n": _DELETE_BATCH}).rowcount
                total += n
                if n < _DELETE_BATCH:
                    break
        return total

    # ------------------------------------------------------------------ reads
    def search(
        self,
        workspace_id: str,
        vector: Sequence[float],
        *,
        k: int,
        item_ids: Sequence[str] | None = None,
        source_types: Sequence[str] | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
    ) -> list[VectorHit]:
        query, filters = prepare_search(
            workspace_id,
            vector,
            self.dimensions,
            k=k,
            item_ids=item_ids,
            source_types=source_types,
            created_from=created_from,
            created_to=created_to,
        )
        if filters.matches_nothing:
            return []
        self.prepare()
        where, params = _filters(filters)
        params.update({"q": vector_text(query), "k": k, "w": workspace_id})
        candidates = (
            f"SELECT chunk_id, item_id, {self._sql.distance} AS distance "  # noqa: S608
            f"FROM {self.table} WHERE workspace_id = :w{where}"
        )
        with self._db.read(shared=False) as conn:
            conn.execute(_SCAN_SETTINGS, {"ef": str(max(self._ef_search, k))})
            # Twice k from the index scan, the best k kept: relaxed order may hand a closer
            # row over after a farther one, and the few extra rows cost little.
            rows = conn.execute(
                sa.text(f"{candidates} ORDER BY distance LIMIT :fetch"),
                {**params, "fetch": OVERFETCH * k},
            ).all()
            if len(rows) < k:
                self.exact_searches += 1
                # The index scan gave up before finding k rows, or there are fewer: the
                # distance of every row that passes the filters, the true top k. MATERIALIZED
                # keeps the planner from answering the ORDER BY from the HNSW index again.
                rows = conn.execute(
                    sa.text(
                        f"WITH filtered AS MATERIALIZED ({candidates}) "  # noqa: S608
                        "SELECT chunk_id, item_id, distance FROM filtered "
                        "ORDER BY distance LIMIT :k"
                    ),
                    params,
                ).all()
        return ranked_by_distance(rows)[:k]

    def item_vectors(
        self, workspace_id: str, item_id: str, *, limit: int = 256
    ) -> list[list[float]]:
        """The item's vectors of this store's width, in chunk-id order, at unit length (as
        the other stores return them). A uuid's byte order is its lowercase text's order."""
        require_workspace(workspace_id)
        check_limit(limit)
        self.prepare()
        params = {"w": workspace_id, "i": item_id, "n": limit}
        with self._db.read(shared=False) as conn:
            rows = conn.execute(self._sql.item_vectors, params).all()
        return [unit_vector(np.asarray(r[0], dtype=np.float32)) for r in rows]

    def count(self, workspace_id: str) -> int:
        require_workspace(workspace_id)
        self.prepare()
        with self._db.read(shared=False) as conn:
            return int(conn.execute(self._sql.count, {"w": workspace_id}).scalar_one())

    def export(
        self, workspace_id: str, *, after: str | None = None, limit: int = 256
    ) -> list[VectorRecord]:
        """A page of the workspace's rows, in chunk-id order (a uuid's byte order is its
        lowercase text's order), as stored: ``real[]`` gives back the float32 values."""
        start = check_export(workspace_id, after, limit)
        self.prepare()
        statement = self._sql.export_first if start is None else self._sql.export_after
        params = {"w": workspace_id, "after": start, "n": limit}
        with self._db.read(shared=False) as conn:
            rows = conn.execute(statement, params).all()
        return [exported(*r) for r in rows]

    def close(self) -> None:
        """Nothing to release: the container owns and disposes of the database engine."""


def _tables(conn: Connection) -> list[str]:
    """Every width's vector table in the current schema."""
    names = [str(r[0]) for r in conn.execute(_TABLES)]
    return sorted(n for n in names if _TABLE_NAME.match(n))


def _filters(filters: SearchFilters) -> tuple[str, dict[str, Any]]:
    """Conditions on the payload columns, checked inside the index scan."""
    clauses: list[str] = []
    params: dict[str, Any] = {}
    if filters.item_ids is not None:
        clauses.append("item_id = ANY(CAST(:item_ids AS text[]))")
        params["item_ids"] = filters.item_ids
    if filters.source_types is not None:
        clauses.append("source_type = ANY(CAST(:source_types AS text[]))")
        params["source_types"] = filters.source_types
    if filters.created_from is not None:
        clauses.append("created_at >= :created_from")
        params["created_from"] = filters.created_from
    if filters.created_to is not None:
        clauses.append("created_at < :created_to")
        params["created_to"] = filters.created_to
    return "".join(f" AND {c}" for c in clauses), params


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def _ensure_extension(conn: Connection) -> None:
    """pgvector in this database, at least ``MIN_VERSION``; created when the server has it
    and this role may create it; otherwise ``ConfigError`` with what the operator must do."""
    installed = conn.execute(_EXTENSION).scalar_one_or_none()
    if installed is None:
        available = conn.execute(_AVAILABLE).scalar_one_or_none()
        if available is None:
            raise ConfigError(
                "RELATA_VECTOR_STORE=pgvector: the PostgreSQL server has no pgvector "
                "extension installed. Install pgvector 0.8 or later on the database server "
                "(e.g. the postgresql-<version>-pgvector package; managed PostgreSQL services "
                "include it), or set RELATA_VECTOR_STORE=sqlite-vec"
            )
        try:
            conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS vector")
        except sa.exc.DBAPIError as exc:
            if getattr(exc.orig, "sqlstate", None) != "42501":  # insufficient_privilege
                raise
            raise ConfigError(
                "RELATA_VECTOR_STORE=pgvector: the extension `vector` is installed on the "
                "server but not enabled in this database, and Relata's database role may not "
                "enable it. As a superuser (on a managed service, its administrator role) run "
                "`CREATE EXTENSION vector;` in this database once, then start Relata again"
            ) from exc
        installed = conn.execute(_EXTENSION).scalar_one()
    if _version(str(installed)) < MIN_VERSION:
        want = ".".join(map(str, MIN_VERSION))
        raise ConfigError(
            f"RELATA_VECTOR_STORE=pgvector needs pgvector {want} or later (iterative index "
            f"scans) and this database has {installed}: install a newer pgvector on the "
            "server, then run `ALTER EXTENSION vector UPDATE;` in this database"
        )
