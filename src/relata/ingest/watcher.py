"""Running a watched folder (docs/decisions/0047-watched-folder.md): a ``Watcher`` claims
the watch (one live process per folder and workspace), catches up, then follows watchfiles'
debounced events, each burst compared over the paths it names (``relata.ingest.watch``); and
``FolderWatches``, which builds watchers and reads their status for the settings page.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from relata.domain.errors import Conflict, RelataError, ValidationError
from relata.domain.models import SYSTEM_ACTOR, Actor
from relata.domain.ports import Clock
from relata.domain.watch import LEASE, WatchState, WatchStateRepository, WatchStatus
from relata.ingest.catalog import ItemCatalog
from relata.ingest.folder import Folder, FolderGone, FolderTooBig, IgnoreRules
from relata.ingest.service import IngestService
from relata.ingest.versions import VersionService
from relata.ingest.watch import ON_DELETE, FolderSync, SyncReport

log = logging.getLogger("relata.watch")

#: How often (seconds) a watcher with nothing to do writes that it is alive.
HEARTBEAT = 5.0
#: How long (milliseconds) watchfiles waits for an event before yielding nothing, so that
#: deferred files are looked at again and the heartbeat is written.
TICK_MS = 1000
#: A file modified less than this long ago (nanoseconds) is left to a later pass while the
#: watcher follows events: it is probably still being written (a copy, a download).
SETTLE_NS = 1_000_000_000
#: The longest wait before a failed pass is tried again (seconds).
MAX_BACKOFF = 60.0


class WatchBusy(Conflict):
    """Another live process watches this folder into this workspace."""

    code = "watch_busy"


class Watcher:
    """One watch of a folder into a workspace: claimed, caught up, then fed by watchfiles'
    debounced events until ``stop`` is set."""

    def __init__(
        self,
        sync: FolderSync,
        state: WatchStateRepository,
        clock: Clock,
        *,
        workspace_id: str,
        watch_id: str,
        rescan_seconds: float,
        on_pass: Callable[[SyncReport], None] | None = None,
    ) -> None:
        self.sync = sync
        self._state = state
        self._clock = clock
        self.workspace_id = workspace_id
        self.watch_id = watch_id
        self._rescan = rescan_seconds
        self._on_pass = on_pass
        sync.heartbeat = self._beat
        self._last_beat = 0.0

    def _beat(self) -> None:
        self._state.beat(self.workspace_id, self.watch_id, self._clock.now())
        self._last_beat = time.monotonic()

    @property
    def root(self) -> Path:
        return self.sync.folder.root

    def status(self) -> WatchStatus:
        return self._state.status(self.workspace_id, self.watch_id)

    def claim(self) -> None:
        """Mark the watch as this process's; ``WatchBusy`` when a live process has it."""
        current = self.status()
        host, pid = socket.gethostname(), os.getpid()
        if current.state is WatchState.RUNNING and _owner_alive(current, host, pid, self._clock):
            raise WatchBusy(
                f"{current.root} is watched into this workspace by process {current.owner_pid} "
                f"on {current.owner_host} already"
            )
        self._state.claim(self.workspace_id, self.watch_id, host, pid, self._clock.now())

    def release(self) -> None:
        self._state.release(self.workspace_id, self.watch_id, self._clock.now())

    def catch_up(self) -> SyncReport:
        """One full pass: the folder against the state."""
        return self._pass(None)

    def _pass(self, scopes: Iterable[str] | None, *, settle_ns: int = 0) -> SyncReport:
        try:
            report = self.sync.reconcile(scopes, settle_ns=settle_ns)
        except (FolderTooBig, FolderGone) as exc:
            self._state.beat(self.workspace_id, self.watch_id, self._clock.now(), error=str(exc))
            raise
        self._state.beat(
            self.workspace_id,
            self.watch_id,
            self._clock.now(),
            counts=report.counts,
            scanned=scopes is None,
            clear_error=True,
        )
        self._last_beat = time.monotonic()
        if self._on_pass is not None and not report.empty():
            self._on_pass(report)
        return report

    def run(self, stop: threading.Event, *, debounce_ms: int = 800) -> None:
        """Catch up, then follow the folder's events until ``stop`` is set. A file still
        being written (modified in the last second) waits for a later pass. A failed pass
        (the database unreachable, ingestion busy) is recorded as the last error and the
        folder compared again in full after a growing pause."""
        import watchfiles

        folder = self.sync.folder

        def wanted(_: Any, path: str) -> bool:
            rel = folder.rel(path)
            return rel is not None and not folder.ignore.ignored(rel)

        backoff = 0.0
        need_full = True
        last_full = 0.0
        while not stop.is_set():
            try:
                if need_full:
                    self._pass(None)
                    need_full, backoff, last_full = False, 0.0, time.monotonic()
                # What changed between that pass and the start of the watch has no event:
                # the first yield (an event, or the tick) compares in full again.
                fresh = True
                pending: set[str] = set()
                for changes in watchfiles.watch(
                    folder.root,
                    watch_filter=wanted,
                    debounce=debounce_ms,
                    stop_event=stop,
                    rust_timeout=TICK_MS,
                    yield_on_timeout=True,
                    raise_interrupt=False,
                    ignore_permission_denied=True,
                ):
                    if fresh or time.monotonic() - last_full >= self._rescan:
                        self._pass(None)
                        fresh, last_full, pending = False, time.monotonic(), set()
                        continue
                    scopes = {r for _, p in changes if (r := folder.rel(p)) is not None}
                    scopes |= pending
                    if scopes:
                        report = self._pass(scopes, settle_ns=SETTLE_NS)
                        pending = set(report.deferred)
                    elif time.monotonic() - self._last_beat >= HEARTBEAT:
                        self._beat()
            except FolderTooBig:
                backoff = MAX_BACKOFF
                need_full = True
            except (RelataError, OSError, RuntimeError) as exc:
                # OSError: FolderGone among others; RuntimeError: watchfiles' own (the folder
                # vanished, the inotify watch limit).
                backoff = min(MAX_BACKOFF, max(1.0, backoff * 2))
                need_full = True
                log.warning(
                    "watch pass failed; comparing the whole folder again",
                    extra={"fields": {"error_type": type(exc).__name__, "retry_in": backoff}},
                )
                self.record_error(exc)
            if need_full and backoff:
                stop.wait(backoff)

    def record_error(self, exc: BaseException) -> None:
        """Set the watch's last error (the settings page shows it); never raises."""
        message = exc.message if isinstance(exc, RelataError) else f"{type(exc).__name__}: {exc}"
        try:
            self._state.beat(self.workspace_id, self.watch_id, self._clock.now(), error=message)
        except Exception as again:  # the database is what failed: the log has it
            log.warning(
                "could not record the watch error",
                extra={"fields": {"error_type": type(again).__name__}},
            )


def _owner_alive(status: WatchStatus, host: str, pid: int, clock: Clock) -> bool:
    """Whether the watch's recorded owner may still be running: its heartbeat is recent and,
    on this host, its process exists and is not this one (a restarted container reuses
    PIDs)."""
    if status.heartbeat_at is None or clock.now() - status.heartbeat_at > LEASE:
        return False
    if status.owner_host != host:
        return True
    if status.owner_pid is None or status.owner_pid == pid:
        return False
    try:
        os.kill(status.owner_pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---------------------------------------------------------------- the service
class FolderWatches:
    """Builds watchers over the container's services and reads watch statuses."""

    def __init__(
        self,
        state: WatchStateRepository,
        ingest: IngestService,
        versions: VersionService,
        items: ItemCatalog,
        clock: Clock,
        *,
        max_upload_bytes: int,
        on_delete: str,
        ignore: Iterable[str],
        rescan_seconds: float,
    ) -> None:
        self._state = state
        self._ingest = ingest
        self._versions = versions
        self._items = items
        self._clock = clock
        self.max_upload_bytes = max_upload_bytes
        self.on_delete = on_delete
        self.ignore = tuple(ignore)
        self.rescan_seconds = rescan_seconds

    def statuses(self, workspace_id: str) -> list[WatchStatus]:
        return self._state.statuses(workspace_id)

    def watcher(
        self,
        workspace_id: str,
        root: Path,
        *,
        ignore: Iterable[str] = (),
        on_delete: str | None = None,
        actor: Actor = SYSTEM_ACTOR,
        on_pass: Callable[[SyncReport], None] | None = None,
    ) -> Watcher:
        """A watcher of ``root`` (an existing folder) into the workspace; ``ValidationError``
        naming what is wrong with the folder or the patterns."""
        if not root.is_dir():
            raise ValidationError(f"{root} is not a folder", field="dir")
        resolved = root.resolve()
        try:
            rules = IgnoreRules((*self.ignore, *ignore))
        except ValueError as exc:
            raise ValidationError(str(exc), field="ignore") from None
        mode = on_delete or self.on_delete
        if mode not in ON_DELETE:
            raise ValidationError(
                f"on delete must be one of {', '.join(ON_DELETE)}", field="on_delete"
            )
        watch_id = self._state.open(workspace_id, str(resolved), self._clock.now())
        sync = FolderSync(
            state=self._state,
            ingest=self._ingest,
            versions=self._versions,
            items=self._items,
            clock=self._clock,
            workspace_id=workspace_id,
            watch_id=watch_id,
            folder=Folder(resolved, rules, max_bytes=self.max_upload_bytes),
            on_delete=mode,
            actor=actor,
        )
        return Watcher(
            sync,
            self._state,
            self._clock,
            workspace_id=workspace_id,
            watch_id=watch_id,
            rescan_seconds=self.rescan_seconds,
            on_pass=on_pass,
        )
