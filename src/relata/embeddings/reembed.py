"""Re-embedding a workspace: every chunk not embedded with the current model gets a new vector.

``Reembedder.start`` enqueues one ``reembed_workspace`` job with the idempotency key
``reembed:<workspace>:<model>`` (asking again while it is pending returns that job). A run
of the job embeds one bounded batch, ``RELATA_REEMBED_BATCH_SIZE`` chunks (default 256), of
the chunks of live items whose ``embedding_model`` is missing or another model's, through
the stage's ``VectorWriter`` (same passages, same width check, point ids = chunk ids, so
whatever was stored for a chunk is overwritten), stamps them, and re-enqueues itself with
the same key for the rest. The running job is not *pending*, so the partial unique index
admits its follow-up; a request arriving meanwhile converges on that one pending job. So no
lease is held for longer than one batch, a crash loses at most one batch of work (redone
idempotently), and the loop ends with the first batch that makes no progress.

With ``all_chunks`` (``relata reembed --all``, ``POST .../reembed?all=true``) it rebuilds the
workspace's vectors from scratch: the first run deletes them and marks every chunk not
embedded, then the batches go as above. That is the fix when vectors were lost or orphaned
while the chunks say they are embedded (a new or wiped vector store, a vector count that
differs from the chunk count with no chunk of another model); meaning-based search is
incomplete until it is done. Its first job has its own key (``reembed-all:...``) so it is
never folded into a plain re-embedding; its follow-ups are plain batches.

Progress: each follow-up's payload carries ``done`` (chunks re-embedded so far) and
``batches``; ``GET /api/v1/settings/models`` shows it with the workspace's counts.

Items that failed at the embed stage (``items.failed_stage``; e.g. a width refused before
``RELATA_EMBEDDING_DIMENSIONS`` was fixed) are reprocessed from that stage by ``start``
(``Pipeline.reprocess_failed``), so they go on through the stages after it as well. With
nothing to do (every chunk embedded with the current model, no failed item) ``start``
queues nothing and returns None.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from relata.domain.errors import Conflict, Permanent
from relata.domain.models import SYSTEM_ACTOR, Actor, Job
from relata.domain.ports import AuditRecorder, ChunkRepository
from relata.domain.vocabulary import AuditAction, AuditTarget, StageKind
from relata.embeddings.stage import ModelSeen, VectorWriter
from relata.jobs.queue import JobQueue
from relata.jobs.registry import HandlerRegistry, JobContext
from relata.observability.metrics import Metrics
from relata.pipeline import Pipeline

log = logging.getLogger("relata.embeddings")

REEMBED_WORKSPACE = "reembed_workspace"
#: Below the ingestion stages (0 and up): re-embedding never holds up new documents.
REEMBED_PRIORITY = -1
NO_PROVIDER_MESSAGE = (
    "re-embedding needs an embedding provider, and none is configured "
    "(RELATA_EMBEDDING_PROVIDER=none)"
)


def reembed_key(workspace_id: str, model: str, *, all_chunks: bool = False) -> str:
    return f"{'reembed-all' if all_chunks else 'reembed'}:{workspace_id}:{model}"


def _count(payload: dict[str, Any], name: str) -> int:
    value = payload.get(name, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def chunks_done(job: Job) -> int:
    """Chunks re-embedded before ``job`` ran (its payload's ``done``)."""
    return _count(job.payload, "done")


class Reembedder:
    def __init__(
        self,
        *,
        queue: JobQueue,
        chunks: ChunkRepository,
        pipeline: Pipeline,
        writer: VectorWriter | None,
        seen: ModelSeen,
        batch_size: int,
        audit: AuditRecorder,
        metrics: Metrics | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        self._audit = audit
        self._queue = queue
        self._chunks = chunks
        self._pipeline = pipeline
        self._writer = writer
        self._seen = seen
        self._batch = batch_size
        self._metrics = metrics

    @property
    def available(self) -> bool:
        return self._writer is not None

    def start(
        self, workspace_id: str, *, all_chunks: bool = False, actor: Actor = SYSTEM_ACTOR
    ) -> Job | None:
        """Enqueue the re-embedding of the workspace (or return the one already pending);
        ``all_chunks`` rebuilds every vector, not only those of chunks not embedded with the
        current model. Items that failed at the embed stage are reprocessed from it. None
        when there is nothing to re-embed. Every request is audited (``reembed.started``,
        the workspace as target) as ``actor``, with whether a job was queued."""
        if self._writer is None:
            raise Conflict(NO_PROVIDER_MESSAGE, code="embedding_unavailable")
        model = self._writer.model_id
        restarted = self._pipeline.reprocess_failed(workspace_id, stage=StageKind.EMBED)
        job = None
        if all_chunks or self._chunks.list_unembedded(workspace_id, model, limit=1):
            job = self._enqueue(self._queue, workspace_id, model, 0, 0, all_chunks=all_chunks)
        self._audit.record(
            workspace_id,
            AuditAction.REEMBED_STARTED,
            actor,
            target_kind=AuditTarget.WORKSPACE,
            target_id=workspace_id,
            details={
                "all_chunks": all_chunks,
                "job_id": job.id if job is not None else None,
                "failed_items_restarted": len(restarted),
            },
        )
        return job

    def latest(self, workspace_id: str) -> Job | None:
        """The workspace's newest re-embed job (the pending follow-up while one is under way)."""
        jobs = self._queue.list(workspace_id, kind=REEMBED_WORKSPACE, limit=1)
        return jobs[0] if jobs else None

    def outstanding(self, workspace_id: str) -> bool:
        """Whether a re-embed job of the workspace is pending or running."""
        return self._queue.outstanding(workspace_id, kind=REEMBED_WORKSPACE)

    def _enqueue(
        self,
        queue: JobQueue,
        workspace_id: str,
        model: str,
        done: int,
        batches: int,
        *,
        all_chunks: bool = False,
    ) -> Job:
        payload: dict[str, Any] = {"model": model, "done": done, "batches": batches}
        if all_chunks:
            payload["all"] = True
        return queue.enqueue(
            REEMBED_WORKSPACE,
            workspace_id,
            payload,
            idempotency_key=reembed_key(workspace_id, model, all_chunks=all_chunks),
            priority=REEMBED_PRIORITY,
        )

    def run(self, ctx: JobContext) -> None:
        """One batch, then the follow-up job for the rest (see the module docstring)."""
        workspace_id = ctx.job.workspace_id
        if not workspace_id:
            raise Permanent("malformed reembed_workspace job: it has no workspace")
        writer = self._writer
        if writer is None:
            raise Permanent(NO_PROVIDER_MESSAGE)
        model = writer.model_id
        t0 = time.perf_counter()
        if ctx.job.payload.get("all") is True:
            # Both steps are idempotent and repeated if this job is retried; its follow-ups
            # are plain batches.
            writer.check_width()
            writer.vectors.delete_by_workspace(workspace_id)
            self._chunks.clear_embedding_model(workspace_id)
        batch = self._chunks.list_unembedded(workspace_id, model, limit=self._batch)
        stamped = 0
        if batch:
            dimensions = writer.check_width()
            written = writer.write(batch, ctx.cancel)
            ctx.cancel.raise_if_cancelled()
            stamped = self._chunks.set_embedding_model(
                workspace_id, [w.chunk.id for w in batch], model
            )
            self._seen.record(workspace_id, model, dimensions)
            if self._metrics is not None:
                elapsed = time.perf_counter() - t0
                self._metrics.embedded_chunks.labels(writer.provider, "reembed").inc(written)
                self._metrics.embed_duration.labels(writer.provider, "reembed").observe(elapsed)
        done = chunks_done(ctx.job) + stamped
        batches = _count(ctx.job.payload, "batches") + 1
        # Any progress gets a follow-up: the last one finds nothing left, ends the loop, and
        # its payload carries the final count that the model status page shows.
        more = stamped > 0
        if more:
            self._enqueue(ctx.queue, workspace_id, model, done, batches)
        log.info(
            "re-embed batch finished",
            extra={
                "fields": {
                    "workspace_id": workspace_id,
                    "model": model,
                    "chunks": stamped,
                    "done": done,
                    "more": more,
                    "duration_ms": round((time.perf_counter() - t0) * 1000, 1),
                }
            },
        )


def register_reembed(registry: HandlerRegistry, reembedder: Reembedder) -> None:
    registry.register(REEMBED_WORKSPACE, reembedder.run)
