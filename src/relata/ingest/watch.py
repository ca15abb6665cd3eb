"""A watched folder kept in step with a workspace (``relata watch DIR``; ``relata serve``
with RELATA_WATCH_DIR): docs/decisions/0047-watched-folder.md.

    start: claim the watch → catch up (the whole folder against the recorded state)
    → then, for each debounced burst of file events, the same comparison over the paths
    the events name; a full pass again every RELATA_WATCH_RESCAN_SECONDS and after an error

One comparison (``FolderSync.reconcile``) serves the catch-up and the events:

- a file the state does not know is ingested by the ingest service; if its bytes are those
  of a file that went away in the same pass, it is that file renamed (the state row moves,
  the item stays); if its bytes are already an item of the workspace, it is linked to that
  item (``DuplicateItem``) instead of ingested again;
- a known file whose size or mtime changed is read and hashed; other bytes than recorded
  become a new version of its item (``VersionService.upload``), the same bytes only update
  the recorded mtime;
- a known file that is gone loses its row; its item is deleted (RELATA_WATCH_ON_DELETE=delete,
  the default) once no tracked file is that item any more, or kept (``keep``).

Crash safety: the state is written only after the item exists, and every step is idempotent
when repeated from the folder and the state. A watcher killed between the item's creation and
the row finds the file unknown, ingests it again and gets ``DuplicateItem`` (the partial
unique index on the workspace's content hashes), whose item it records: no second item. Killed
after a version, it finds the bytes are the item's current content already (the upload says
``unchanged``). Killed after a delete, it deletes again (``NotFound``) and drops the row.

Refused files (too large, unsupported type, empty, a link out of the folder) are recorded with
their reason, counted as failed on the settings page, and tried again when they change.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from relata.domain.errors import (
    DuplicateItem,
    NotFound,
    RelataError,
    ValidationError,
)
from relata.domain.models import Actor
from relata.domain.ports import Clock
from relata.domain.watch import (
    WatchCounts,
    WatchedFile,
    WatchStateRepository,
)
from relata.ids import content_hash
from relata.ingest.catalog import ItemCatalog
from relata.ingest.folder import Folder, FolderEmptied, TooBig
from relata.ingest.service import IngestRequest, IngestService
from relata.ingest.versions import VersionService

log = logging.getLogger("relata.watch")

#: What happens to a deleted file's item.
ON_DELETE = ("delete", "keep")
#: New files ingested together (``IngestService.ingest_many``): at most this many, and the
#: batch goes as soon as its files reach this many bytes (they are held in memory).
BATCH_FILES = 16
BATCH_BYTES = 32 * 1024 * 1024


@dataclass
class SyncReport:
    """What one pass did, by relative path."""

    ingested: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)
    linked: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    unchanged: int = 0
    #: Files left for a later pass: modified too recently (still being written).
    deferred: list[str] = field(default_factory=list)

    @property
    def counts(self) -> WatchCounts:
        return WatchCounts(
            ingested=len(self.ingested), updated=len(self.updated), deleted=len(self.deleted)
        )

    def line(self) -> str:
        return (
            f"ingested {len(self.ingested)}, updated {len(self.updated)}, renamed "
            f"{len(self.renamed)}, linked {len(self.linked)}, removed {len(self.deleted)}, "
            f"refused {len(self.refused)}, unchanged {self.unchanged}"
        )

    def empty(self) -> bool:
        return not (
            self.ingested
            or self.updated
            or self.renamed
            or self.linked
            or self.deleted
            or self.refused
        )


class FolderSync:
    """The comparison of a folder with its recorded state (see the module docstring)."""

    def __init__(
        self,
        *,
        state: WatchStateRepository,
        ingest: IngestService,
        versions: VersionService,
        items: ItemCatalog,
        clock: Clock,
        workspace_id: str,
        watch_id: str,
        folder: Folder,
        on_delete: str,
        actor: Actor,
    ) -> None:
        if on_delete not in ON_DELETE:
            raise ValueError(f"on_delete must be one of {', '.join(ON_DELETE)}")
        self._state = state
        self._ingest = ingest
        self._versions = versions
        self._items = items
        self._clock = clock
        self._ws = workspace_id
        self._watch = watch_id
        self.folder = folder
        self._on_delete = on_delete
        self._actor = actor
        #: Whether a full pass may find the folder empty and delete every tracked file's
        #: item (otherwise ``FolderEmptied``).
        self.allow_empty = False
        #: Called every hundred files of a pass, so a long one keeps the watch's lease.
        self.heartbeat: Callable[[], None] | None = None
        self._batch: list[tuple[WatchedFile, bytes]] = []
        self._batch_bytes = 0

    def reconcile(self, scopes: Iterable[str] | None = None, *, settle_ns: int = 0) -> SyncReport:
        """Compare the folder (or only ``scopes``: relative files or folders) with the state
        and act on every difference; additions before removals, so a rename seen as two
        events keeps its item. A new or changed file modified less than ``settle_ns`` ago
        is left alone (``deferred``): it is probably still being written."""
        report = SyncReport()
        now_ns = time.time_ns()
        known: dict[str, WatchedFile] = {}
        seen: dict[str, Any] = {}
        for scope in _outermost(scopes):
            known.update(self._state.files(self._ws, self._watch, scope))
            for s in self.folder.scan(scope):
                seen[s.rel] = s
        if scopes is None and not seen and not self.allow_empty:
            tracked = sum(1 for f in known.values() if f.item_id)
            if tracked:
                raise FolderEmptied(
                    f"the watched folder {self.folder.root} is empty, but {tracked} of its "
                    "files have items: nothing was deleted (an unmounted drive?). If it is "
                    "meant to be empty, run `relata watch DIR --once --allow-empty`"
                )
        gone = {rel: f for rel, f in known.items() if rel not in seen}
        gone_by_hash = {f.sha256: rel for rel, f in gone.items() if f.item_id and f.sha256}
        for n, rel in enumerate(sorted(seen)):
            if self.heartbeat is not None and n % 100 == 99:
                self.heartbeat()
            s = seen[rel]
            old = known.get(rel)
            if s.refusal is not None:
                self._refuse(rel, s.size_bytes, s.mtime_ns, s.refusal, old, report)
                continue
            if old is not None and (old.size_bytes, old.mtime_ns) == (s.size_bytes, s.mtime_ns):
                report.unchanged += 1
                continue
            if settle_ns and 0 <= now_ns - s.mtime_ns < settle_ns:
                report.deferred.append(rel)
                continue
            try:
                data = self.folder.read(rel)
            except TooBig as exc:
                self._refuse(rel, s.size_bytes, s.mtime_ns, str(exc), old, report)
                continue
            except FileNotFoundError:
                continue  # gone since the scan: its own event follows
            except OSError as exc:  # unreadable (permissions, say): said, tried when changed
                reason = f"cannot read the file ({exc.strerror or exc})"
                self._refuse(rel, s.size_bytes, s.mtime_ns, reason, old, report)
                continue
            digest = content_hash(data)
            now_file = WatchedFile(rel, None, len(data), s.mtime_ns, digest)
            if old is not None and old.sha256 == digest and old.error is None:
                self._put(_with(now_file, old.item_id))
                report.unchanged += 1
                continue
            source = gone_by_hash.pop(digest, None) if old is None else None
            if source is not None:
                self._state.move(
                    self._ws,
                    self._watch,
                    source,
                    _with(now_file, gone.pop(source).item_id),
                    self._clock.now(),
                )
                report.renamed.append((source, rel))
                continue
            if old is not None and old.item_id is not None:
                self._new_version(now_file, data, old, report)
            else:
                self._new_item(now_file, data, report)
        self._flush(report)
        if report.deferred:
            # A file being written may be a gone one's copy: both wait for the next pass, so
            # the copy keeps the item.
            report.deferred.extend(sorted(gone))
            return report
        for rel in sorted(gone):
            self._forget(gone[rel], report)
        return report

    # ------------------------------------------------------------ the actions
    def _put(self, f: WatchedFile) -> None:
        self._state.put(self._ws, self._watch, f, self._clock.now())

    def _refuse(
        self,
        rel: str,
        size: int,
        mtime: int,
        reason: str,
        old: WatchedFile | None,
        report: SyncReport,
    ) -> None:
        if (
            old is not None
            and old.error == reason
            and (old.size_bytes, old.mtime_ns)
            == (
                size,
                mtime,
            )
        ):
            report.unchanged += 1
            return
        item_id = old.item_id if old is not None else None
        self._put(WatchedFile(rel, item_id, size, mtime, old.sha256 if old else "", reason))
        report.refused.append((rel, reason))

    def _new_item(self, f: WatchedFile, data: bytes, report: SyncReport) -> None:
        """Queue a new file for ingestion; the batch goes at ``BATCH_FILES`` files or
        ``BATCH_BYTES`` bytes (one filesystem sync and one transaction for the batch)."""
        self._batch.append((f, data))
        self._batch_bytes += len(data)
        if len(self._batch) >= BATCH_FILES or self._batch_bytes >= BATCH_BYTES:
            self._flush(report)

    def _flush(self, report: SyncReport) -> None:
        batch, self._batch, self._batch_bytes = self._batch, [], 0
        if not batch:
            return
        requests = [IngestRequest(data=d, filename=f.path.rsplit("/", 1)[-1]) for f, d in batch]
        results = self._ingest.ingest_many(self._ws, requests, actor=self._actor)
        rows: list[WatchedFile] = []
        for (f, _), result in zip(batch, results, strict=True):
            if isinstance(result, DuplicateItem):
                # Its bytes are an item already: this file's own, ingested by a watcher
                # killed before it wrote the row, or another path's (a copy). Linked, never
                # ingested twice. (No id: a race lost to a delete; the next pass sees it.)
                if result.existing_id is not None:
                    rows.append(_with(f, result.existing_id))
                    report.linked.append(f.path)
            elif isinstance(result, RelataError):  # unsupported type, empty, too large
                rows.append(
                    WatchedFile(f.path, None, f.size_bytes, f.mtime_ns, f.sha256, result.message)
                )
                report.refused.append((f.path, result.message))
            else:
                rows.append(_with(f, result.id))
                report.ingested.append(f.path)
        # The rows after their items, in one transaction (a kill before it: see the module
        # docstring, the items are linked on the next pass).
        self._state.put_many(self._ws, self._watch, rows, self._clock.now())

    def _new_version(
        self, f: WatchedFile, data: bytes, old: WatchedFile, report: SyncReport
    ) -> None:
        assert old.item_id is not None
        name = f.path.rsplit("/", 1)[-1]
        try:
            with self._versions.admit():
                done = self._versions.upload(
                    self._ws, old.item_id, data, filename=name, actor=self._actor
                )
        except NotFound:  # the item was deleted from the workspace meanwhile
            self._new_item(f, data, report)
            return
        except DuplicateItem as exc:
            # The file now holds another item's bytes: it is that item; its old item goes
            # as a deleted file's would, first (killed between, the next pass finds the row
            # without an item and links the file then).
            self._drop_item(old.item_id, report, f.path, leaving=f.path)
            self._put(_with(f, exc.existing_id))
            report.linked.append(f.path)
            return
        except ValidationError as exc:
            self._put(
                WatchedFile(f.path, old.item_id, f.size_bytes, f.mtime_ns, f.sha256, exc.message)
            )
            report.refused.append((f.path, exc.message))
            return
        self._put(_with(f, old.item_id))
        if done.unchanged:  # a version made by a watcher killed before its row
            report.unchanged += 1
        else:
            report.updated.append(f.path)

    def _forget(self, f: WatchedFile, report: SyncReport) -> None:
        """A file that is gone: its item first (so a crash repeats the delete), then the row."""
        if f.item_id is not None:
            self._drop_item(f.item_id, report, f.path, leaving=f.path)
        self._state.remove(self._ws, self._watch, f.path)

    def _drop_item(
        self, item_id: str, report: SyncReport, label: str, *, leaving: str | None = None
    ) -> None:
        """Delete the item (RELATA_WATCH_ON_DELETE=delete) unless another tracked file is it."""
        if self._on_delete != "delete":
            return
        still = self._state.references(self._ws, item_id) - (1 if leaving else 0)
        if still > 0:
            return
        # NotFound: deleted already (by a watcher killed before it dropped the row, or a person).
        with contextlib.suppress(NotFound):
            self._items.delete(self._ws, item_id, actor=self._actor)
        report.deleted.append(label)


def _with(f: WatchedFile, item_id: str | None) -> WatchedFile:
    return WatchedFile(f.path, item_id, f.size_bytes, f.mtime_ns, f.sha256, f.error)


def _outermost(scopes: Iterable[str] | None) -> list[str | None]:
    """The scopes without those inside another (None, the whole folder, covers all)."""
    if scopes is None:
        return [None]
    out: list[str] = []
    for s in sorted(set(scopes)):
        if not any(s == o or s.startswith(o + "/") for o in out):
            out.append(s)
    return list(out)
