"""The ``embed_item`` pipeline stage: an item's chunks become vectors in the vector store.

What is embedded is the chunk's *passage*: the item's title, the chunk's heading path and
the chunk's text, one per line (titles carry much of an abstract's meaning; MiniLM retrieves
clearly better with them). Title and heading path are cut short, and the whole passage is
bounded, so the context never crowds out the text (the local model reads 256 tokens).

``VectorWriter`` is the one path from chunks to stored vectors, shared by the stage, the
re-embed job (``relata.embeddings.reembed``) and ``relata bench embed``: it checks the
embedder's width against the store's first (another width is ``Permanent``, naming the fix,
and nothing is written), embeds up to ``max(256, RELATA_EMBEDDING_BATCH_SIZE)`` passages per
call (the embedder cuts them into batches of at most RELATA_EMBEDDING_BATCH_SIZE texts and,
for the local one, RELATA_EMBEDDING_BATCH_TOKENS padded tokens, sorted by length), passing
the job's ``cancel`` every time, and upserts each group's vectors with the thin payload.
Chunk ids are point ids, so running it again overwrites in place.

``EmbedStage`` (``relata.pipeline.Stage``, requires an embedder) reads the item's chunks once
and writes their vectors; its result stamps the chunks with the model, which the runner
commits with the run, the item's status and the next stage's job. ``model_versions`` is
updated at most once a minute per workspace (``ModelSeen``), not once per item. Failure,
retries and the skip without a provider are the runner's (``relata.pipeline.runner``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from datetime import datetime, timedelta

from relata.domain.cancel import Cancel
from relata.domain.errors import Permanent
from relata.domain.models import Chunk
from relata.domain.ports import (
    ChunkRepository,
    ChunkToEmbed,
    Clock,
    Embedder,
    ModelVersionRepository,
    StageTransaction,
    VectorRecord,
    VectorStore,
)
from relata.domain.vocabulary import StageKind
from relata.observability.metrics import Metrics
from relata.pipeline import Requirement, StagePayload, StageResult

MODEL_KIND = "embedding"

GROUP_TEXTS = 256
MAX_TITLE_CHARS = 200
MAX_HEADINGS_CHARS = 200
MAX_PASSAGE_CHARS = 8000


def passage(title: str, chunk: Chunk) -> str:
    """The text embedded for ``chunk``: title, heading path (without a leading repeat of the
    title) and text, one per line, bounded."""
    title = " ".join(title.split())[:MAX_TITLE_CHARS]
    path = list(chunk.heading_path)
    while path and " ".join(path[0].split()) == title:
        path.pop(0)
    headings = " > ".join(" ".join(h.split()) for h in path)[:MAX_HEADINGS_CHARS]
    lines = [line for line in (title, headings) if line]
    lines.append(chunk.text)
    return "\n".join(lines)[:MAX_PASSAGE_CHARS]


def provider_of(embedder: Embedder) -> str:
    """A bounded label for metrics and runs: local, ollama, openai (or ``other``)."""
    provider = embedder.provider
    return provider if provider in {"local", "ollama", "openai"} else "other"


def width_refused(model: str, got: int, want: int) -> Permanent:
    return Permanent(
        f"embedding model {model!r} makes {got}-dimensional vectors but the vector store "
        f"holds {want}-dimensional ones: set RELATA_EMBEDDING_DIMENSIONS={got}, then re-embed "
        "the workspace (`relata reembed`)"
    )


class VectorWriter:
    """Embeds chunks as passages and upserts their vectors (see the module docstring)."""

    def __init__(self, embedder: Embedder, vectors: VectorStore, *, batch_size: int) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        self.embedder = embedder
        self.vectors = vectors
        self._group = max(GROUP_TEXTS, batch_size)

    @property
    def model_id(self) -> str:
        return self.embedder.model_id

    @property
    def provider(self) -> str:
        return provider_of(self.embedder)

    def check_width(self) -> int:
        """The embedder's width, if the store holds vectors of it; ``Permanent`` otherwise."""
        got, want = self.embedder.dimensions, self.vectors.dimensions
        if got != want:
            raise width_refused(self.embedder.model_id, got, want)
        return got

    def write(self, work: Sequence[ChunkToEmbed], cancel: Cancel) -> int:
        """Embed and store ``work``; returns how many vectors were written."""
        if not work:
            return 0
        self.check_width()
        model = self.embedder.model_id
        for start in range(0, len(work), self._group):
            part = work[start : start + self._group]
            cancel.raise_if_cancelled()
            embedded = self.embedder.embed([passage(w.title, w.chunk) for w in part], cancel)
            if len(embedded) != len(part):
                raise Permanent(
                    f"embedding model {model!r} returned {len(embedded)} vectors for "
                    f"{len(part)} passages"
                )
            cancel.raise_if_cancelled()
            self.vectors.upsert(
                [
                    VectorRecord(
                        chunk_id=w.chunk.id,
                        workspace_id=w.chunk.workspace_id,
                        item_id=w.chunk.item_id,
                        source_type=w.source_type,
                        created_at=w.created_at,
                        embedding_model=model,
                        vector=vector,
                    )
                    for w, vector in zip(part, embedded, strict=True)
                ]
            )
        return len(work)


class ModelSeen:
    """Records in ``model_versions`` that a workspace has used an embedding model, at most
    once per ``interval`` per workspace and model, so no item pays an extra write."""

    def __init__(
        self,
        repo: ModelVersionRepository,
        clock: Clock,
        *,
        interval: timedelta = timedelta(minutes=1),
    ) -> None:
        self._repo = repo
        self._clock = clock
        self._interval = interval
        self._last: dict[tuple[str, str, int], datetime] = {}
        self._lock = threading.Lock()

    def record(self, workspace_id: str, model: str, dimensions: int) -> None:
        now = self._clock.now()
        key = (workspace_id, model, dimensions)
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self._interval:
                return
            self._last[key] = now
        try:
            self._repo.record_seen(workspace_id, MODEL_KIND, model, dimensions, now)
        except Exception:
            with self._lock:
                self._last.pop(key, None)
            raise


class EmbedStage:
    """``embed``: the item's chunks become vectors (see the module docstring)."""

    kind = StageKind.EMBED
    requires = frozenset({Requirement.EMBEDDER})

    def __init__(
        self,
        *,
        chunks: ChunkRepository,
        writer: VectorWriter | None,
        seen: ModelSeen,
        metrics: Metrics | None = None,
    ) -> None:
        self._chunks = chunks
        self._writer = writer
        self._seen = seen
        self._metrics = metrics

    @property
    def versions(self) -> dict[str, str]:
        return {"embedding_model": self._writer.model_id} if self._writer else {}

    def run(self, payload: StagePayload, cancel: Cancel) -> StageResult:
        writer = self._writer
        if writer is None:  # the runner skips the stage first; a direct call says the same
            return StageResult.skipped(Requirement.EMBEDDER.missing_reason)
        t0 = time.perf_counter()
        work = self._chunks.list_to_embed(payload.workspace_id, payload.item_id)
        dimensions = writer.check_width()
        written = writer.write(work, cancel)
        elapsed = time.perf_counter() - t0
        ids = [w.chunk.id for w in work]

        def write(tx: StageTransaction) -> None:
            tx.stamp_embedding_model(payload.item_id, ids, writer.model_id)

        def after_commit() -> None:
            self._seen.record(payload.workspace_id, writer.model_id, dimensions)
            if self._metrics is not None:
                self._metrics.embedded_chunks.labels(writer.provider, "stage").inc(written)
                self._metrics.embed_duration.labels(writer.provider, "stage").observe(elapsed)

        return StageResult(
            write=write,
            versions={"embedding_model": writer.model_id},
            details={
                "chunks": written,
                "dimensions": dimensions,
                "provider": writer.provider,
                "embed_ms": round(elapsed * 1000, 2),
            },
            after_commit=after_commit,
        )
