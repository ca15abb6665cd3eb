"""Build the configured ``VectorStore`` from settings (called by ``relata.bootstrap``).

``RELATA_VECTOR_STORE`` (``auto`` by default, decided by the database):

* ``pgvector`` (the default with PostgreSQL): in the authoritative PostgreSQL database, on the
  pgvector extension (docs/decisions/0031-pgvector-store.md).
* ``sqlite-vec`` (the default with SQLite): in the authoritative SQLite file, or in
  ``vectors.db`` under the data dir when it is chosen beside PostgreSQL.
* ``qdrant``: the server at ``RELATA_QDRANT_URL``; with an empty URL, qdrant-client's local
  mode in ``qdrant/`` under the data dir.

Nothing connects here: the adapters open their storage on first use (``prepare`` does it at
start-up). Each adapter is imported only when chosen: qdrant-client alone takes most of a
second to import, and the default stores never use it.
"""

from __future__ import annotations

import logging

from relata.config.settings import Settings
from relata.domain.errors import ConfigError
from relata.domain.ports import VectorStore
from relata.storage.sql.engine import Database

STANDALONE_FILE = "vectors.db"
QDRANT_LOCAL_DIR = "qdrant"

log = logging.getLogger("relata.vectors")


def resolve_vector_store(setting: str, dialect: str) -> str:
    """The store ``RELATA_VECTOR_STORE`` means on a database of ``dialect``: ``auto`` (or
    empty) is pgvector on PostgreSQL and sqlite-vec on SQLite."""
    if setting in ("", "auto"):
        return "pgvector" if dialect == "postgresql" else "sqlite-vec"
    return setting


def build_vector_store(settings: Settings, db: Database, dimensions: int) -> VectorStore:
    """The store for ``dimensions``-wide vectors; ``db`` is the authoritative database."""
    kind = resolve_vector_store(settings.vector_store, db.dialect)
    if kind == "qdrant":
        from relata.storage.vectors.qdrant import QdrantVectorStore

        return QdrantVectorStore(
            dimensions=dimensions,
            collection=settings.qdrant_collection,
            url=settings.qdrant_url,
            api_key=settings.qdrant_api_key,
            path=None if settings.qdrant_url else settings.data_path / QDRANT_LOCAL_DIR,
            timeout=settings.qdrant_timeout,
        )
    if kind == "pgvector":
        from relata.storage.vectors.pgvector import PgvectorStore

        store = PgvectorStore(db, dimensions)  # refuses a SQLite database
        if (settings.data_path / STANDALONE_FILE).is_file():
            # Vectors an earlier default kept beside PostgreSQL: not read by this store.
            log.warning(
                "vectors.db in the data dir is not used: RELATA_VECTOR_STORE resolves to "
                "pgvector; set RELATA_VECTOR_STORE=sqlite-vec to keep using it, or re-embed "
                "every workspace into pgvector (`relata reembed --all`)"
            )
        return store
    if kind != "sqlite-vec":
        raise ConfigError(f"RELATA_VECTOR_STORE={kind!r} is not a vector store")
    from relata.storage.vectors.sqlite_vec import SqliteVecStore

    memory = settings.vector_memory_mb * 1024 * 1024
    if db.dialect == "sqlite":
        return SqliteVecStore(db, dimensions, resident_bytes=memory)
    return SqliteVecStore.standalone(
        settings.data_path / STANDALONE_FILE, dimensions, resident_bytes=memory
    )
