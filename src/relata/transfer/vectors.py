"""Vectors copied from one ``VectorStore`` to another without re-embedding, and compared.

A workspace's vectors are read a page at a time (``VectorStore.export``, chunk-id order)
and upserted into the target; an upsert by chunk id is idempotent, so a page written twice
(after an interruption between the write and the recorded position) changes nothing. Only
the configured width is copied: vectors a former model of another width left behind are
invisible to search and stay behind (ADR 8).

The comparison walks both stores' exports side by side: the same chunk ids in the same
order with the same payload, and the same vector — bit for bit between sqlite-vec and
pgvector (both keep float32); Qdrant stores vectors normalised, so there the same direction
(cosine similarity within 1e-6) is what can be checked.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from relata.domain.ports import VectorRecord, VectorStore

PAGE = 500
_MAX_PAGES = 10_000_000  # a bound on any loop over a store: 5 billion vectors


def pages(
    store: VectorStore, workspace_id: str, after: str | None = None, *, size: int = PAGE
) -> Iterator[list[VectorRecord]]:
    """The workspace's vectors, ``size`` at a time, from after chunk id ``after``."""
    for _ in range(_MAX_PAGES):
        page = store.export(workspace_id, after=after, limit=size)
        if not page:
            return
        yield page
        after = page[-1].chunk_id
    raise RuntimeError("a vector store kept returning pages past any possible size")


def copy_vectors(
    source: VectorStore,
    target: VectorStore,
    workspace_id: str,
    *,
    after: str | None = None,
    page: int = PAGE,
    progress: Callable[[str, int], None] | None = None,
) -> int:
    """Copy the workspace's vectors after chunk id ``after``; ``progress(last_chunk_id,
    copied)`` is called after each page is written (to record where to resume)."""
    copied = 0
    for batch in pages(source, workspace_id, after, size=page):
        target.upsert(batch)
        copied += len(batch)
        if progress is not None:
            progress(batch[-1].chunk_id, copied)
    return copied


@dataclass(frozen=True, slots=True)
class VectorCheck:
    workspace_id: str
    source: int
    target: int
    identical: int  # bit-for-bit equal vectors
    differing: list[str]  # chunk ids (at most 20) missing, extra or different

    @property
    def ok(self) -> bool:
        return self.source == self.target and not self.differing


def _same_direction(a: VectorRecord, b: VectorRecord) -> bool:
    dot = sum(x * y for x, y in zip(a.vector, b.vector, strict=True))
    na = math.sqrt(sum(x * x for x in a.vector))
    nb = math.sqrt(sum(y * y for y in b.vector))
    return bool(na and nb) and abs(dot / (na * nb) - 1.0) <= 1e-6


def _payload(r: VectorRecord) -> tuple[str, str, str, str, float, str]:
    return (
        r.chunk_id,
        r.workspace_id,
        r.item_id,
        r.source_type,
        r.created_at.timestamp(),
        r.embedding_model,
    )


def _records(store: VectorStore, workspace_id: str) -> Iterator[VectorRecord]:
    for page in pages(store, workspace_id):
        yield from page


def compare_vectors(source: VectorStore, target: VectorStore, workspace_id: str) -> VectorCheck:
    """Both stores' vectors of the workspace, walked side by side in chunk-id order."""
    n_source = n_target = identical = 0
    differing: list[str] = []
    left, right = _records(source, workspace_id), _records(target, workspace_id)
    a, b = next(left, None), next(right, None)
    while a is not None or b is not None:
        if b is None or (a is not None and a.chunk_id < b.chunk_id):
            assert a is not None
            n_source += 1
            wrong = a.chunk_id
            a = next(left, None)
        elif a is None or b.chunk_id < a.chunk_id:
            n_target += 1
            wrong = b.chunk_id
            b = next(right, None)
        else:
            n_source += 1
            n_target += 1
            wrong = ""
            if list(a.vector) == list(b.vector) and _payload(a) == _payload(b):
                identical += 1
            elif _payload(a) != _payload(b) or not _same_direction(a, b):
                wrong = a.chunk_id
            a, b = next(left, None), next(right, None)
        if wrong and len(differing) < 20:
            differing.append(wrong)
    return VectorCheck(workspace_id, n_source, n_target, identical, differing)
