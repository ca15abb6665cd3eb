"""Recovery after a crash: what a killed process can leave half-done in ingestion, found and
repaired (``relata serve`` at start-up; ``relata doctor``, which reports, and repairs with
``--fix``).

An upload stores its original (fsynced, renamed into place) before its row exists, then
enqueues its first stage; a delete hides the row, removes the derived data and the original,
then the row. A process killed between two of those steps leaves:

- **stray originals**: a stored file no item refers to (killed after the file, before the
  row), or the temporary file of a write (killed mid-write). Removed.
- **unstarted uploads**: a pending item with its original but no processing run and no job
  (killed after the row, before the job). Its first stage is enqueued, so it becomes ready.
- **interrupted deletes**: a row marked deleted but still there. The delete is finished.
- **missing originals**: a live item whose stored file is gone (a disk restored from an
  older copy, a file removed by hand). Only reported: nothing can bring it back.

Only what is older than the **grace period** (``RELATA_RECOVERY_GRACE_SECONDS``, by the file's
modification time, the item's ingestion or last update) is repaired: anything younger may
belong to an upload or a delete still under way in another process on the same data dir
(another ``relata serve``, a ``relata ingest``), between two of its steps. An original is
never removed while any item row refers to it, a row marked deleted included: the check is
made per batch just before removing. Files of names Relata does not write are reported and
never touched.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

from relata.domain.errors import NotFound
from relata.domain.models import SYSTEM_ACTOR, Actor, Item
from relata.domain.ports import Clock
from relata.ingest.catalog import ItemCatalog
from relata.ingest.originals import FileKind, OriginalStore, StoredFile
from relata.ingest.validation import UNTITLED, title_from_filename
from relata.pipeline import Pipeline, StagePayload

log = logging.getLogger("relata.ingest")

#: Files checked against the database per query.
BATCH = 500
#: The most items one pass looks at per workspace and check (a pass can be run again).
MAX_ITEMS = 10_000


class IngestLedger(Protocol):
    """What recovery asks the database (``relata.storage.sql.ledger``)."""

    def workspace_ids(self) -> list[str]: ...

    def referenced_originals(self, workspace_id: str, paths: Sequence[str]) -> set[str]:
        """Those of ``paths`` that an item row of the workspace refers to, a row marked
        deleted included."""
        ...

    def unstarted(self, workspace_id: str, before: datetime, *, limit: int) -> list[Item]:
        """Pending items ingested before ``before`` without any processing run."""
        ...

    def existing_job_keys(self, keys: Sequence[str]) -> set[str]:
        """Those of ``keys`` some job (in any state) has as its idempotency key."""
        ...

    def marked_deleted(self, workspace_id: str, before: datetime, *, limit: int) -> list[Item]:
        """Rows marked deleted (a delete not finished) last updated before ``before``."""
        ...

    def live_originals(
        self, workspace_id: str, after: str, *, limit: int
    ) -> list[tuple[str, str | None]]:
        """``(item id, original path)`` of live items with ids after ``after``, by id."""
        ...


@dataclass
class Report:
    """What a pass found, and what it repaired (``fixed``)."""

    stray: list[StoredFile] = field(default_factory=list)
    young: list[StoredFile] = field(default_factory=list)  # unreferenced, within the grace
    unknown: list[StoredFile] = field(default_factory=list)
    unstarted: list[Item] = field(default_factory=list)
    interrupted_deletes: list[Item] = field(default_factory=list)
    missing_originals: list[tuple[str, str]] = field(default_factory=list)  # (ws, item id)
    fixed: bool = False
    scanned_files: int = 0

    @property
    def repairable(self) -> int:
        return len(self.stray) + len(self.unstarted) + len(self.interrupted_deletes)


class Recovery:
    def __init__(
        self,
        originals: OriginalStore,
        ledger: IngestLedger,
        catalog: ItemCatalog,
        pipeline: Pipeline,
        clock: Clock,
        *,
        grace: timedelta,
    ) -> None:
        if grace < timedelta(0):
            raise ValueError("grace must not be negative")
        self._originals = originals
        self._ledger = ledger
        self._catalog = catalog
        self._pipeline = pipeline
        self._clock = clock
        self.grace = grace

    def run(
        self,
        *,
        fix: bool,
        grace: timedelta | None = None,
        actor: Actor = SYSTEM_ACTOR,
        missing: bool = True,
    ) -> Report:
        """Every check; with ``fix`` the repairs too (see the module docstring). ``missing``
        looks for live items whose original is gone: a stat of every item's file, left out
        at start-up (it repairs nothing, and a large library would delay serving)."""
        cutoff = self._clock.now() - (self.grace if grace is None else grace)
        report = Report(fixed=fix)
        self._originals_pass(report, cutoff, fix)
        for ws in self._ledger.workspace_ids():
            self._unstarted_pass(report, ws, cutoff, fix)
            self._deletes_pass(report, ws, cutoff, fix, actor)
            if missing:
                self._missing_pass(report, ws)
        return report

    # ------------------------------------------------------------ the checks
    def _originals_pass(self, report: Report, cutoff: datetime, fix: bool) -> None:
        for batch in _batches(self._originals.scan(), BATCH):
            report.scanned_files += len(batch)
            by_ws: dict[str, list[StoredFile]] = {}
            for found in batch:
                if found.kind is FileKind.UNKNOWN or found.workspace_id is None:
                    report.unknown.append(found)
                else:
                    by_ws.setdefault(found.workspace_id, []).append(found)
            for ws, files in by_ws.items():
                complete = [f.rel for f in files if f.kind is FileKind.ORIGINAL]
                referenced = self._ledger.referenced_originals(ws, complete) if complete else set()
                for found in files:
                    if found.rel in referenced:
                        continue
                    if _when(found) >= cutoff:
                        report.young.append(found)
                        continue
                    report.stray.append(found)
                    if fix:
                        self._originals.remove_stray(found)
                        log.info(
                            "stray original removed",
                            extra={"fields": {"path": found.rel, "kind": found.kind.value}},
                        )

    def _unstarted_pass(self, report: Report, ws: str, cutoff: datetime, fix: bool) -> None:
        candidates = self._ledger.unstarted(ws, cutoff, limit=MAX_ITEMS)
        if not candidates:
            return
        first = self._pipeline.kinds[0]
        keys = {i.id: self._pipeline.job_for(first, StagePayload(ws, i.id, 1)) for i in candidates}
        present = self._ledger.existing_job_keys(
            [j.idempotency_key for j in keys.values() if j.idempotency_key]
        )
        for item in candidates:
            if keys[item.id].idempotency_key in present:
                continue  # its first job exists: it is queued, running or settled
            report.unstarted.append(item)
            if fix:
                # A default title (from the file name) may still be replaced by the
                # document's own; a title someone gave is kept.
                default = title_from_filename(item.original_filename) or UNTITLED
                payload = StagePayload(ws, item.id, 1, title_from_document=item.title == default)
                self._pipeline.start(payload)
                log.info("unstarted upload started", extra={"fields": {"item_id": item.id}})

    def _deletes_pass(
        self, report: Report, ws: str, cutoff: datetime, fix: bool, actor: Actor
    ) -> None:
        for item in self._ledger.marked_deleted(ws, cutoff, limit=MAX_ITEMS):
            report.interrupted_deletes.append(item)
            if fix:
                try:
                    self._catalog.finish_delete(item, actor=actor)
                except NotFound:  # finished meanwhile by its own process
                    continue

    def _missing_pass(self, report: Report, ws: str) -> None:
        after = ""
        while True:  # by increasing id: ends with the workspace's items
            page = self._ledger.live_originals(ws, after, limit=BATCH)
            for item_id, rel in page:
                if not self._originals.exists(rel):
                    report.missing_originals.append((ws, item_id))
            if len(page) < BATCH:
                return
            after = page[-1][0]


def _when(found: StoredFile) -> datetime:
    return datetime.fromtimestamp(found.modified, UTC)


def _batches(files: Iterator[StoredFile], size: int) -> Iterator[list[StoredFile]]:
    batch: list[StoredFile] = []
    for found in files:
        batch.append(found)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
