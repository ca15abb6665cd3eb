"""The ``embed_item`` pipeline stage: an item's chunks become vectors in the vector store.

What is embedded is the chunk's *passage*: the item's title, the chunk's heading path and
the chunk's text, one per line (titles carry much of an abstract's meaning; MiniLM retrieves
clearly better with them). Title and heading path are cut short, and the whole passage is
bounded, so the context never crowds out the text (the local model reads 256 tokens).

``VectorWriter`` is the one path from chunks to stored vectors, shared by the stage, the
re-embed job (``relata.embeddings.reembed``) and ``relata bench embed``: it checks the
embedder's width against the store's first (another width is ``Permanent``, naming the fix,
and nothing is written), embeds up to ``max(256, RELATA_EMBEDDING_BATCH_SIZE)`` passages per
call (the embedder cuts them into batches of RELATA_EMBEDDING_BATCH_SIZE, the local one sorted
by length), passing the job's ``cancel`` every time, and upserts each group's vectors with the
thin payload. Chunk ids are point ids, so running it again overwrites in place.

The stage reads the item's chunks once, writes their vectors, then in one transaction stamps
the chunks with the model, records its processing run and, when it is the pipeline's last
stage, marks the item ``ready``; then it enqueues the next stage, if any. ``model_versions``
is updated at most once a minute per workspace (``ModelSeen``), not once per item. A
deleted item is ``NotFound`` (the job fails at once); a permanent failure, or a transient
one on the last attempt, marks the item ``failed`` with ``could not embed: <reason>``. With
no embedding provider the stage is not in the pipeline at all (the chunk stage records it
as ``skipped``); a job left over from before is recorded as skipped the same way.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from relata.domain.cancel import Cancel, Cancelled
from relata.domain.errors import LeaseLost, NotFound, Permanent
from relata.domain.models import Chunk, ItemStatus, ProcessingRun
from relata.domain.ports import (
    ChunkRepository,
    ChunkToEmbed,
    Clock,
    Embedder,
    ItemRepository,
    ModelVersionRepository,
    ProcessingRunRepository,
    VectorRecord,
    VectorStore,
)
from relata.ingest.pipeline import Pipeline, StagePayload, stage_run
from relata.jobs.registry import HandlerRegistry, JobContext
from relata.observability.metrics import Metrics

log = logging.getLogger("relata.embeddings")

EMBED_ITEM = "embed_item"
EMBED_STAGE = "embed"
NO_PROVIDER = "no embedding provider"
#: Every error the stage leaves on an item starts so; re-embedding recovers those items.
ERROR_PREFIX = "could not embed:"
MODEL_KIND = "embedding"

GROUP_TEXTS = 256
MAX_TITLE_CHARS = 200
MAX_HEADINGS_CHARS = 200
MAX_PASSAGE_CHARS = 8000
_ERROR_CHARS = 500


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
    provider = getattr(embedder, "provider", "")
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


def _short(exc: BaseException) -> str:
    message = getattr(exc, "message", None) or type(exc).__name__
    return " ".join(str(message).split())[:_ERROR_CHARS]


class EmbedStage:
    def __init__(
        self,
        *,
        items: ItemRepository,
        chunks: ChunkRepository,
        runs: ProcessingRunRepository,
        pipeline: Pipeline,
        clock: Clock,
        writer: VectorWriter | None,
        seen: ModelSeen,
        metrics: Metrics | None = None,
    ) -> None:
        self._items = items
        self._chunks = chunks
        self._runs = runs
        self._pipeline = pipeline
        self._clock = clock
        self._writer = writer
        self._seen = seen
        self._metrics = metrics

    def embed_item(self, ctx: JobContext) -> None:
        p = StagePayload.from_job(ctx.job)
        started, t0 = self._clock.now(), time.perf_counter()
        work = self._chunks.list_to_embed(p.workspace_id, p.item_id)
        following = self._following()
        status = ItemStatus.READY if following is None else None
        writer = self._writer
        if writer is None:
            run = self._run(
                p,
                started,
                {},
                {"generation": p.generation, "reason": NO_PROVIDER},
                outcome="skipped",
            )
            # No chunk to stamp: only the item's status and the run.
            self._chunks.set_embedding_model(
                p.workspace_id, [], "", item_id=p.item_id, item_status=status, run=run
            )
        else:
            dimensions = writer.check_width()
            written = writer.write(work, ctx.cancel)
            elapsed = time.perf_counter() - t0
            run = self._run(
                p,
                started,
                {"embedding_model": writer.model_id},
                {
                    "generation": p.generation,
                    "chunks": written,
                    "dimensions": dimensions,
                    "provider": writer.provider,
                    "duration_ms": round(elapsed * 1000, 2),
                },
                outcome="succeeded",
            )
            self._chunks.set_embedding_model(
                p.workspace_id,
                [w.chunk.id for w in work],
                writer.model_id,
                item_id=p.item_id,
                item_status=status,
                run=run,
            )
            self._seen.record(p.workspace_id, writer.model_id, dimensions)
            if self._metrics is not None:
                self._metrics.embedded_chunks.labels(writer.provider, "stage").inc(written)
                self._metrics.embed_duration.labels(writer.provider, "stage").observe(elapsed)
        if following is not None:
            self._pipeline.enqueue(
                following, StagePayload(p.workspace_id, p.item_id, p.generation), ctx.queue
            )

    def _following(self) -> str | None:
        """The stage after this one; None when it is the last (or, for a job left from a
        deployment with a provider, not in this pipeline at all: the pass ends here)."""
        try:
            return self._pipeline.next_after(EMBED_ITEM)
        except ValueError:
            return None

    def handle(self, ctx: JobContext) -> None:
        """``embed_item`` for the worker: marks the item failed when the failure is final."""
        try:
            self.embed_item(ctx)
        except (Cancelled, LeaseLost, NotFound):
            raise
        except Permanent as exc:
            self._fail(ctx, f"{ERROR_PREFIX} {_short(exc)}")
            raise
        except Exception as exc:
            if ctx.job.attempts >= ctx.job.max_attempts:
                self._fail(
                    ctx,
                    f"{ERROR_PREFIX} failed after {ctx.job.attempts} attempts "
                    f"({type(exc).__name__}: {_short(exc)})",
                )
            raise

    def _run(
        self,
        p: StagePayload,
        started: datetime,
        versions: dict[str, str],
        details: dict[str, Any],
        *,
        outcome: str,
        error: str | None = None,
    ) -> ProcessingRun:
        return stage_run(
            p.workspace_id,
            p.item_id,
            EMBED_STAGE,
            started,
            self._clock.now(),
            versions,
            details,
            outcome=outcome,
            error=error,
        )

    def _fail(self, ctx: JobContext, error: str) -> None:
        """Mark the item failed and record the failed run (best effort: it may be gone)."""
        try:
            p = StagePayload.from_job(ctx.job)
            versions = {"embedding_model": self._writer.model_id} if self._writer else {}
            self._items.set_status(p.workspace_id, p.item_id, ItemStatus.FAILED, error=error)
            self._runs.add(
                self._run(
                    p,
                    self._clock.now(),
                    versions,
                    {"generation": p.generation},
                    outcome="failed",
                    error=error,
                )
            )
        except NotFound:
            pass
        except Exception:  # the job's own failure is recorded by the queue
            log.warning("could not mark an item failed", extra={"fields": {"job_id": ctx.job.id}})


def register_embed_stage(registry: HandlerRegistry, stage: EmbedStage) -> None:
    registry.register(EMBED_ITEM, stage.handle)
