"""Build the configured ``VectorStore`` from settings (called by ``relata.bootstrap``).

* ``sqlite-vec`` (default): in the authoritative SQLite file, or in ``vectors.db`` under the
  data dir when the authoritative store is PostgreSQL.
* ``qdrant``: the server at ``RELATA_QDRANT_URL``; with an empty URL, qdrant-client's local
  mode in ``qdrant/`` under the data dir.

Nothing connects here: both adapters open their storage on first use. Each adapter is imported
only when chosen: qdrant-client alone takes most of a second to import, and the default store
never uses it.
"""

from __future__ import annotations

from relata.config.settings import Settings
from relata.domain.ports import VectorStore
from relata.storage.sql.engine import Database

STANDALONE_FILE = "vectors.db"
QDRANT_LOCAL_DIR = "qdrant"


def build_vector_store(settings: Settings, db: Database, dimensions: int) -> VectorStore:
    """The store for ``dimensions``-wide vectors; ``db`` is the authoritative database."""
    if settings.vector_store == "qdrant":
        from relata.storage.vectors.qdrant import QdrantVectorStore

        return QdrantVectorStore(
            dimensions=dimensions,
            collection=settings.qdrant_collection,
            url=settings.qdrant_url,
            api_key=settings.qdrant_api_key,
            path=None if settings.qdrant_url else settings.data_path / QDRANT_LOCAL_DIR,
            timeout=settings.qdrant_timeout,
        )
    from relata.storage.vectors.sqlite_vec import SqliteVecStore

    memory = settings.vector_memory_mb * 1024 * 1024
    if db.dialect == "sqlite":
        return SqliteVecStore(db, dimensions, resident_bytes=memory)
    return SqliteVecStore.standalone(
        settings.data_path / STANDALONE_FILE, dimensions, resident_bytes=memory
    )
