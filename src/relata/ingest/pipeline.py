"""The ingestion pipeline's shape: its stage kinds, their idempotency keys, and what runs
after chunking.

``parse_item`` → ``chunk_item`` → the stages later features add (``embed_item``, ...), one
after another in the order they were added. Each stage is a job that enqueues the next
(``advance``) with the key ``<kind>:<item_id>:<generation>``: a generation is one pass of the
pipeline over an item (1 at ingestion, one more per reprocess), so re-enqueuing a stage of
the same pass is a no-op while a new pass is new work. The last stage (``next_after`` is
None) marks the item ``ready``, in the transaction that stores its result. Later features
append their stage with ``Pipeline.add_after_chunk`` at composition time; a stage this
deployment leaves out (``add_skipped``: no embedding provider) is recorded as a ``skipped``
run by the chunk stage. Later stages get a higher job priority than earlier ones, so
workers finish items already under way before starting new ones: during a large import
items become ready one after another instead of all at the end.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from relata.domain.errors import Permanent
from relata.domain.models import Job, ProcessingRun
from relata.ids import new_id
from relata.jobs.queue import JobQueue

PARSE_ITEM = "parse_item"
CHUNK_ITEM = "chunk_item"


def stage_key(kind: str, item_id: str, generation: int) -> str:
    return f"{kind}:{item_id}:{generation}"


@dataclass(frozen=True, slots=True)
class StagePayload:
    """What every stage job carries: ids and options, never document content."""

    workspace_id: str
    item_id: str
    generation: int
    title_from_document: bool = False

    @classmethod
    def from_job(cls, job: Job) -> StagePayload:
        p = job.payload
        item_id = p.get("item_id")
        generation = p.get("generation", 1)
        if (
            not job.workspace_id
            or not isinstance(item_id, str)
            or not item_id
            or not isinstance(generation, int)
            or isinstance(generation, bool)
        ):
            raise Permanent(f"malformed {job.kind} payload")
        return cls(
            workspace_id=job.workspace_id,
            item_id=item_id,
            generation=generation,
            title_from_document=bool(p.get("title_from_document", False)),
        )

    def to_payload(self) -> dict[str, Any]:
        payload: dict[str, Any] = {"item_id": self.item_id, "generation": self.generation}
        if self.title_from_document:
            payload["title_from_document"] = True
        return payload


class Pipeline:
    """Enqueues stages; knows which stage kinds follow chunking."""

    def __init__(self, queue: JobQueue) -> None:
        self._queue = queue
        self._after_chunk: list[str] = []
        self._skipped: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def add_after_chunk(self, kind: str) -> None:
        """Run ``kind`` (with the same payload) once an item's chunks are stored."""
        with self._lock:
            if kind in self._after_chunk or kind in (PARSE_ITEM, CHUNK_ITEM):
                raise ValueError(f"stage {kind!r} is already part of the pipeline")
            self._after_chunk.append(kind)

    @property
    def after_chunk(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._after_chunk)

    def add_skipped(self, stage: str, reason: str) -> None:
        """Record, on every pass, that ``stage`` does not run here and why (a ``skipped`` run)."""
        with self._lock:
            self._skipped.append((stage, reason))

    @property
    def skipped(self) -> tuple[tuple[str, str], ...]:
        """``(stage, reason)`` of the stages this deployment leaves out."""
        with self._lock:
            return tuple(self._skipped)

    def next_after(self, kind: str) -> str | None:
        """The stage that follows ``kind``; None when ``kind`` is the last one."""
        if kind == PARSE_ITEM:
            return CHUNK_ITEM
        after = self.after_chunk
        if kind == CHUNK_ITEM:
            return after[0] if after else None
        if kind not in after:
            raise ValueError(f"stage {kind!r} is not part of the pipeline")
        position = after.index(kind) + 1
        return after[position] if position < len(after) else None

    def advance(
        self, kind: str, payload: StagePayload, queue: JobQueue | None = None
    ) -> Job | None:
        """Enqueue the stage after ``kind`` for the same pass, if there is one."""
        following = self.next_after(kind)
        if following is None:
            return None
        return self.enqueue(following, payload, queue)

    def start(self, payload: StagePayload, queue: JobQueue | None = None) -> Job:
        """Enqueue the first stage of a pass over an item."""
        return self.enqueue(PARSE_ITEM, payload, queue)

    def priority(self, kind: str) -> int:
        """The stage's position in the pipeline: parse 0, chunk 1, then the later stages."""
        if kind == PARSE_ITEM:
            return 0
        if kind == CHUNK_ITEM:
            return 1
        after = self.after_chunk
        return 2 + after.index(kind) if kind in after else 0

    def enqueue(self, kind: str, payload: StagePayload, queue: JobQueue | None = None) -> Job:
        q = queue or self._queue
        return q.enqueue(
            kind,
            payload.workspace_id,
            payload.to_payload(),
            idempotency_key=stage_key(kind, payload.item_id, payload.generation),
            priority=self.priority(kind),
        )


def stage_run(
    workspace_id: str,
    item_id: str,
    stage: str,
    started: datetime,
    finished: datetime,
    versions: dict[str, str],
    details: dict[str, Any],
    *,
    outcome: str = "succeeded",
    error: str | None = None,
) -> ProcessingRun:
    """The processing run a stage records for one pass over an item (every stage, every
    outcome: succeeded, skipped, failed)."""
    return ProcessingRun(
        id=new_id(),
        workspace_id=workspace_id,
        item_id=item_id,
        stage=stage,
        started_at=started,
        outcome=outcome,
        finished_at=finished,
        versions=versions,
        details=details,
        error=error,
    )
