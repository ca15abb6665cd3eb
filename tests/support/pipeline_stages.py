"""Stages that tests add to the pipeline (one class each, one entry in a declared order),
and a process that dies inside a stage's transaction (run as ``python -m``)."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from relata.bootstrap import Container, build
from relata.config.settings import load_settings
from relata.domain.cancel import Cancel
from relata.domain.errors import NotConfigured, Permanent, Unavailable
from relata.domain.models import Chunk
from relata.domain.ports import StageTransaction
from relata.ids import chunk_id, content_hash
from relata.pipeline import Requirement, StagePayload, StageResult
from relata.storage.sql import migrate

#: The declared order with the test stage between chunking and embedding.
TAG = "tag"
ORDER = ("parse", "chunk", TAG, "embed", "entities", "claims", "relationships")
#: The stages after the test stage, as their jobs run.
AFTER_TAG = ["embed_item", "entities_item", "claims_item", "relationships_item"]


def marker_chunk(p: StagePayload, text: str) -> Chunk:
    digest = content_hash(text)
    return Chunk(
        id=chunk_id(p.workspace_id, p.item_id, 0, digest),
        workspace_id=p.workspace_id,
        item_id=p.item_id,
        sequence=0,
        text=text,
        content_hash=digest,
        start_offset=0,
        end_offset=len(text),
    )


@dataclass
class TagStage:
    """Replaces the item's chunks with one marker chunk. ``failures`` lists what the first
    runs raise (then it succeeds); ``requires`` may name a requirement the deployment lacks."""

    failures: list[Exception] = field(default_factory=list)
    requires: frozenset[Requirement] = frozenset()
    calls: int = 0
    kind: str = TAG
    versions: dict[str, str] = field(default_factory=lambda: {"tagger": "1"})

    def run(self, payload: StagePayload, cancel: Cancel) -> StageResult:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)

        def write(tx: StageTransaction) -> None:
            tx.replace_chunks(payload.item_id, [marker_chunk(payload, "tagged")])

        return StageResult(write=write, versions=dict(self.versions), details={"tags": 1})


@dataclass
class SnapshotStage(TagStage):
    """Counts the workspace's items, lets ``meanwhile`` commit something, and counts again
    (``counts``); ``one_snapshot`` asks the runner for one read transaction."""

    one_snapshot: bool = False
    count: Callable[[str], int] | None = None
    meanwhile: Callable[[], object] | None = None
    counts: list[tuple[int, int]] = field(default_factory=list)

    def run(self, payload: StagePayload, cancel: Cancel) -> StageResult:
        assert self.count is not None
        before = self.count(payload.workspace_id)
        if self.meanwhile is not None:
            self.meanwhile()
            self.meanwhile = None
        self.counts.append((before, self.count(payload.workspace_id)))
        return super().run(payload, cancel)


FAILURES: dict[str, Exception] = {
    "transient": Unavailable("the tagging service is down"),
    "permanent": Permanent("the tagger refused the item"),
    "bug": KeyError("a document key"),
    "skip": NotConfigured("no tagger configured"),
}


class DyingTagStage(TagStage):
    """Dies (SIGKILL) inside the transaction, right after writing its result, or right after
    the transaction committed (``after_commit``)."""

    def __init__(self, when: str) -> None:
        super().__init__()
        self.when = when

    def run(self, payload: StagePayload, cancel: Cancel) -> StageResult:
        def write(tx: StageTransaction) -> None:
            tx.replace_chunks(payload.item_id, [marker_chunk(payload, "tagged")])
            if self.when == "inside":
                os.kill(os.getpid(), signal.SIGKILL)

        def after() -> None:
            os.kill(os.getpid(), signal.SIGKILL)

        return StageResult(
            write=write, after_commit=after if self.when == "after" else None, details={}
        )


def container(data_dir: Path) -> Container:
    os.environ["RELATA_DATA_DIR"] = str(data_dir)
    os.environ["RELATA_EMBEDDING_PROVIDER"] = "none"
    c = build(load_settings(), stage_order=ORDER)
    migrate.upgrade(c.db)
    c.workspaces.ensure(c.settings.default_workspace)
    return c


def main(argv: list[str]) -> int:
    """``DATA_DIR inside|after``: run the pending jobs until the tag stage kills us."""
    c = container(Path(argv[0]))
    c.pipeline.add(DyingTagStage(argv[1]))
    pool = c.worker_pool(workers=1, name="dying")
    for _ in range(10):
        if pool.run_one() is None:
            return 0
    return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
