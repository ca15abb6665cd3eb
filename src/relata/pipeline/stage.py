"""What a pipeline stage is: its payload, its requirements, its result, and the protocol.

A stage is one module with one class: its ``kind`` (a ``StageKind``), what it ``requires``
(an embedder, a language model), and ``run(payload, cancel) -> StageResult``. ``run`` reads
what it needs and does its work outside any transaction; the ``StageResult`` it returns
carries a ``write`` that the runner calls *inside* the transaction that also records the
run, sets the item's status, enqueues the next stage and completes the job. Everything else
(timing, runs, failure, skip, ordering) is the runner's (``relata.pipeline.runner``).

A stage whose ``run`` makes many small reads and waits on nothing slow (no language model
call) may say so with a true ``one_snapshot`` attribute (``reads_in_one_snapshot``): the
runner then runs it inside ``UnitOfWork.snapshot``, so its reads share one read transaction
and see one state of the database.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from relata.domain.cancel import Cancel
from relata.domain.errors import Permanent
from relata.domain.models import Job
from relata.domain.ports import StageTransaction
from relata.domain.vocabulary import RunOutcome


class Requirement(enum.StrEnum):
    """Something a stage needs that a deployment may not have. A stage whose requirement is
    missing is recorded as ``skipped`` with the reason below, and the item goes on."""

    EMBEDDER = "embedder"
    ANALYSER = "analyser"

    @property
    def missing_reason(self) -> str:
        return _MISSING[self]


_MISSING = {
    Requirement.EMBEDDER: "no embedding provider",
    Requirement.ANALYSER: "analysis disabled (no language model configured)",
}


def stage_key(kind: str, item_id: str, generation: int) -> str:
    """The idempotency key of a stage's job for one pass (``generation``) over an item."""
    return f"{kind}:{item_id}:{generation}"


@dataclass(frozen=True, slots=True)
class StagePayload:
    """What every stage job carries: ids and options, never document content.

    A generation is one pass of the pipeline over an item (1 at ingestion, one more per
    reprocess), so re-enqueuing a stage of the same pass is a no-op while a new pass is new
    work."""

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


def _nothing(_tx: StageTransaction) -> None:
    return None


@dataclass(frozen=True, slots=True)
class StageResult:
    """What a stage's run produced.

    ``write`` stores the result through the runner's transaction; ``versions`` and
    ``details`` go on the processing run (ids, counts, timings: never document content);
    ``after_commit`` runs once the transaction has committed (metrics, caches).
    ``outcome`` is ``skipped`` when the stage found nothing it could do here (``details``
    then says why under ``reason``)."""

    write: Callable[[StageTransaction], object] = _nothing
    versions: dict[str, str] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    after_commit: Callable[[], object] | None = None
    outcome: RunOutcome = RunOutcome.SUCCEEDED

    @classmethod
    def skipped(cls, reason: str, versions: dict[str, str] | None = None) -> StageResult:
        return cls(versions=versions or {}, details={"reason": reason}, outcome=RunOutcome.SKIPPED)


class Stage(Protocol):
    """One pipeline stage (see the module docstring)."""

    @property
    def kind(self) -> str:
        """A ``StageKind`` value; the stage runs as the job kind ``<kind>_item``."""
        ...

    @property
    def requires(self) -> frozenset[Requirement]: ...

    @property
    def versions(self) -> dict[str, str]:
        """The versions recorded on a failed or skipped run (parser, model, ...)."""
        ...

    def run(self, payload: StagePayload, cancel: Cancel) -> StageResult: ...


def reads_in_one_snapshot(stage: Stage) -> bool:
    """Whether ``stage`` asks for its reads to share one read transaction (its optional
    ``one_snapshot`` attribute: see the module docstring)."""
    return getattr(stage, "one_snapshot", False) is True
