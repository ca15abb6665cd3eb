"""``QdrantVectorStore``: the ``VectorStore`` port on Qdrant (qdrant-client).

A server (``RELATA_QDRANT_URL`` + ``RELATA_QDRANT_API_KEY``) in production; with an empty
URL, qdrant-client's local mode (a folder under the data dir, or ``":memory:"`` in tests),
which speaks the same API but is brute force and allows one process per folder.

One collection per vector width, ``<RELATA_QDRANT_COLLECTION>_<width>``, cosine distance, so
widths never mix and re-embedding after a width change fills a fresh collection (the same
rule as ``SqliteVecStore``; docs/decisions/0008-vector-stores.md). Point id = chunk id. The
payload is exactly the thin set, every field with a payload index (``workspace_id`` marked
as the tenant key), so a workspace-filtered search stays a filtered search.

The client is created on first use, not at construction: building the container does no I/O
and takes no local-mode folder lock. Client errors become domain errors here: transport
failures, timeouts, 408/429/5xx are ``Unavailable``; other 4xx are ``Permanent``.
"""

from __future__ import annotations

import re
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import httpx
from qdrant_client import QdrantClient
from qdrant_client import models as qm
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from relata.domain.errors import ConfigError, Permanent, RelataError, Unavailable
from relata.domain.ports import VectorHit, VectorRecord
from relata.storage.vectors.validation import (
    SearchFilters,
    check_dimensions,
    check_limit,
    prepare_batch,
    prepare_search,
    ranked,
    require_workspace,
    unit_vector,
)

T = TypeVar("T")

MEMORY = ":memory:"
_UPSERT_BATCH = 256  # points per request: bounded request size for large items
_SCROLL_PAGE = 256  # points per scroll request when reading an item's vectors
_COLLECTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,100}$")
# Every payload field and its index. The set is the spec's thin payload, nothing more.
PAYLOAD_INDEXES: dict[str, qm.PayloadSchemaType | qm.KeywordIndexParams] = {
    "workspace_id": qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD, is_tenant=True),
    "item_id": qm.PayloadSchemaType.KEYWORD,
    "chunk_id": qm.PayloadSchemaType.KEYWORD,
    "source_type": qm.PayloadSchemaType.KEYWORD,
    "created_at": qm.PayloadSchemaType.FLOAT,  # Unix seconds, so date ranges are filters
    "embedding_model": qm.PayloadSchemaType.KEYWORD,
}


def _match(key: str, value: str) -> qm.FieldCondition:
    return qm.FieldCondition(key=key, match=qm.MatchValue(value=value))


class QdrantVectorStore:
    """The ``VectorStore`` port on Qdrant (a server, or qdrant-client's local mode)."""

    def __init__(
        self,
        *,
        dimensions: int,
        collection: str = "relata_chunks",
        url: str = "",
        api_key: str = "",
        path: Path | str | None = None,
        timeout: int = 10,
    ) -> None:
        """``url`` for a server; otherwise local mode at ``path`` (a folder, or ``:memory:``)."""
        if not _COLLECTION_NAME.match(collection):
            raise ConfigError(
                f"RELATA_QDRANT_COLLECTION={collection!r} is invalid; it accepts letters, "
                "digits, '_' and '-'"
            )
        if not url and path is None:
            raise ConfigError("QdrantVectorStore needs a server URL or a local-mode path")
        self.dimensions = check_dimensions(dimensions)
        self._prefix = collection
        self.collection = f"{collection}_{self.dimensions}"
        self._url = url
        self._api_key = api_key
        self._path = path
        self._timeout = timeout
        self._local = not url
        self._client: QdrantClient | None = None
        self._ready = False
        self._setup_lock = threading.Lock()
        # Local mode is an in-process engine without locking of its own; a server client is
        # thread-safe (httpx) and needs no lock.
        self._call_lock: threading.Lock | None = threading.Lock() if self._local else None

    # ------------------------------------------------------------------ plumbing
    def _new_client(self) -> QdrantClient:
        if self._url:
            return QdrantClient(
                url=self._url,
                api_key=self._api_key or None,
                timeout=self._timeout,
                check_compatibility=False,  # no request at construction
            )
        location = str(self._path)
        if location == MEMORY:
            return QdrantClient(location=MEMORY)
        Path(location).mkdir(parents=True, exist_ok=True)
        try:
            # Calls may come from any thread; _call_lock serialises them.
            return QdrantClient(path=location, force_disable_check_same_thread=True)
        except RuntimeError as exc:  # portalocker: the folder is held by another process
            raise Unavailable(
                "the local Qdrant folder is in use by another process; local mode allows one "
                "process per folder, so set RELATA_QDRANT_URL to share a Qdrant server",
                retry_after=5,
            ) from exc

    def _call(self, fn: Callable[[QdrantClient], T]) -> T:
        """Run one client call with the lock (local mode) and error translation."""
        guard: AbstractContextManager[Any] = self._call_lock or nullcontext()
        with guard, _translated():
            if self._client is None:
                self._client = self._new_client()
            return fn(self._client)

    def prepare(self) -> None:
        """Nothing checked ahead: the client connects on first use (a server that is down is
        a transient failure the job queue retries; local mode's folder lock is taken only
        by the process that stores vectors)."""

    def _ensure_collection(self) -> None:
        if self._ready:
            return
        with self._setup_lock:
            if self._ready:
                return
            self._call(self._create_or_check)
            self._ready = True

    def _create_or_check(self, client: QdrantClient) -> None:
        if not client.collection_exists(self.collection):
            try:
                client.create_collection(
                    self.collection,
                    vectors_config=qm.VectorParams(
                        size=self.dimensions, distance=qm.Distance.COSINE
                    ),
                )
            except UnexpectedResponse as exc:
                if exc.status_code != 409:  # 409: another process created it first
                    raise
        self._check_params(client)
        with warnings.catch_warnings():
            # Local mode warns that payload indexes are no-ops there; we create them anyway
            # so the code path is the one a server runs.
            warnings.filterwarnings("ignore", message="Payload indexes have no effect")
            for field, schema in PAYLOAD_INDEXES.items():
                client.create_payload_index(self.collection, field, field_schema=schema)

    def _check_params(self, client: QdrantClient) -> None:
        params = client.get_collection(self.collection).config.params.vectors
        if not isinstance(params, qm.VectorParams):
            raise Permanent(
                f"Qdrant collection {self.collection} uses named vectors; Relata expects one "
                "unnamed cosine vector per point: delete or rename that collection"
            )
        if params.size != self.dimensions or params.distance != qm.Distance.COSINE:
            raise Permanent(
                f"Qdrant collection {self.collection} holds {params.size}-dimensional "
                f"{params.distance.value} vectors, not {self.dimensions}-dimensional cosine "
                "ones: delete that collection (or set RELATA_QDRANT_COLLECTION), then re-embed"
            )

    def _width_collections(self, client: QdrantClient) -> list[str]:
        """This prefix's collections of every width: deletes reach stale widths too."""
        pattern = re.compile(rf"^{re.escape(self._prefix)}_\d+$")
        return [c.name for c in client.get_collections().collections if pattern.match(c.name)]

    # ------------------------------------------------------------------ writes
    def upsert(self, records: Sequence[VectorRecord]) -> None:
        batch = prepare_batch(records, self.dimensions)
        if not batch:
            return
        self._ensure_collection()
        points = [
            qm.PointStruct(
                id=r.chunk_id,
                vector=r.vector.tolist(),
                payload={
                    "workspace_id": r.workspace_id,
                    "item_id": r.item_id,
                    "chunk_id": r.chunk_id,
                    "source_type": r.source_type,
                    "created_at": r.created_at,
                    "embedding_model": r.embedding_model,
                },
            )
            for r in batch
        ]
        for start in range(0, len(points), _UPSERT_BATCH):
            self._call(partial(_upsert, self.collection, points[start : start + _UPSERT_BATCH]))

    def _delete(self, conditions: list[qm.FieldCondition]) -> int:
        """Count, then delete, in every width's collection (Qdrant returns no delete count)."""
        self._ensure_collection()
        selector = qm.Filter(must=list(conditions))

        def run(client: QdrantClient) -> int:
            total = 0
            for name in self._width_collections(client):
                n = client.count(name, count_filter=selector, exact=True).count
                if n:
                    client.delete(
                        name, points_selector=qm.FilterSelector(filter=selector), wait=True
                    )
                    total += n
            return total

        return self._call(run)

    def delete_by_item(self, workspace_id: str, item_id: str) -> int:
        require_workspace(workspace_id)
        return self._delete([_match("workspace_id", workspace_id), _match("item_id", item_id)])

    def delete_by_workspace(self, workspace_id: str) -> int:
        require_workspace(workspace_id)
        return self._delete([_match("workspace_id", workspace_id)])

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
        self._ensure_collection()
        query_filter = _search_filter(workspace_id, filters)
        response = self._call(
            lambda c: c.query_points(
                self.collection,
                query=query.tolist(),
                query_filter=query_filter,
                limit=k,
                with_payload=["item_id"],
                with_vectors=False,
            )
        )
        return ranked(
            [
                VectorHit(
                    chunk_id=str(p.id),
                    item_id=str((p.payload or {}).get("item_id", "")),
                    score=float(p.score),
                )
                for p in response.points
            ]
        )

    def count(self, workspace_id: str) -> int:
        require_workspace(workspace_id)
        self._ensure_collection()
        selector = qm.Filter(must=[_match("workspace_id", workspace_id)])
        result = self._call(lambda c: c.count(self.collection, count_filter=selector, exact=True))
        return int(result.count)

    def item_vectors(
        self, workspace_id: str, item_id: str, *, limit: int = 256
    ) -> list[list[float]]:
        """The item's vectors in this width's collection, in chunk-id order (a scroll is
        ordered by point id, which is the chunk id), in pages of bounded size."""
        require_workspace(workspace_id)
        check_limit(limit)
        self._ensure_collection()
        selector = qm.Filter(
            must=[_match("workspace_id", workspace_id), _match("item_id", item_id)]
        )
        vectors: list[list[float]] = []
        offset: qm.ExtendedPointId | None = None
        while len(vectors) < limit:
            page, offset = self._call(
                partial(
                    _scroll_vectors,
                    self.collection,
                    selector,
                    min(_SCROLL_PAGE, limit - len(vectors)),
                    offset,
                )
            )
            vectors.extend(page)
            if offset is None:
                break
        return vectors

    def payload(self, chunk_id: str) -> dict[str, Any] | None:
        """The stored payload of one point (for checks and tests); ``None`` when absent."""
        self._ensure_collection()
        records = self._call(
            lambda c: c.retrieve(self.collection, ids=[chunk_id], with_payload=True)
        )
        return dict(records[0].payload or {}) if records else None

    def close(self) -> None:
        guard: AbstractContextManager[Any] = self._call_lock or nullcontext()
        with guard:
            if self._client is not None:
                self._client.close()
                self._client = None
                self._ready = False


def _upsert(collection: str, points: list[qm.PointStruct], client: QdrantClient) -> None:
    client.upsert(collection, points=points, wait=True)


def _scroll_vectors(
    collection: str,
    selector: qm.Filter,
    limit: int,
    offset: qm.ExtendedPointId | None,
    client: QdrantClient,
) -> tuple[list[list[float]], qm.ExtendedPointId | None]:
    """One page of a filtered scroll: the points' vectors and the next page's offset."""
    records, next_offset = client.scroll(
        collection,
        scroll_filter=selector,
        limit=limit,
        offset=offset,
        with_payload=False,
        with_vectors=True,
    )
    vectors: list[list[float]] = []
    for record in records:
        if not isinstance(record.vector, list):  # named vectors: refused by _check_params
            raise Permanent(f"Qdrant collection {collection} returned a point without its vector")
        vectors.append(unit_vector(record.vector))
    return vectors, next_offset


def _search_filter(workspace_id: str, filters: SearchFilters) -> qm.Filter:
    must: list[qm.Condition] = [_match("workspace_id", workspace_id)]
    if filters.item_ids is not None:
        must.append(qm.FieldCondition(key="item_id", match=qm.MatchAny(any=filters.item_ids)))
    if filters.source_types is not None:
        must.append(
            qm.FieldCondition(key="source_type", match=qm.MatchAny(any=filters.source_types))
        )
    if filters.created_from is not None or filters.created_to is not None:
        must.append(
            qm.FieldCondition(
                key="created_at",
                range=qm.Range(gte=filters.created_from, lt=filters.created_to),
            )
        )
    return qm.Filter(must=must)


@contextmanager
def _translated() -> Iterator[None]:
    """Client exceptions become domain errors; the message carries no payload or key."""
    try:
        yield
    except RelataError:
        raise
    except UnexpectedResponse as exc:
        status = exc.status_code or 0
        if status in (408, 429) or status >= 500:
            raise Unavailable(f"Qdrant answered {status}", retry_after=1) from exc
        raise Permanent(f"Qdrant refused the request ({status} {exc.reason_phrase})") from exc
    except (ResponseHandlingException, httpx.TransportError, TimeoutError, ConnectionError) as exc:
        raise Unavailable(f"Qdrant is unreachable ({type(exc).__name__})", retry_after=1) from exc
    except ValueError as exc:  # local mode reports bad requests as ValueError
        raise Permanent(f"Qdrant refused the request: {str(exc)[:200]}") from exc
