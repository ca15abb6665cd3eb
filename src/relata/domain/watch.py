"""A watched folder's state: the files it tracks and the watch's status, and the port that
keeps them (docs/decisions/0047-watched-folder.md).

The state is in the database, not in the watcher's memory, so a watcher started again
(after a stop or a SIGKILL) compares the folder with what it recorded and catches up, and the
settings page of any process reads the status.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol

#: A running watch whose owner has not written for this long is taken to be dead.
LEASE = timedelta(seconds=60)


class WatchState(StrEnum):
    RUNNING = "running"
    STOPPED = "stopped"


@dataclass(frozen=True, slots=True)
class WatchedFile:
    """One file of the folder as the watcher last saw it.

    ``path`` is relative to the folder, with ``/`` separators. ``item_id`` is the item it is
    (None when it was refused); ``error`` why it was refused or could not be updated (the
    item, if any, then still has the content it had before).
    """

    path: str
    item_id: str | None
    size_bytes: int
    mtime_ns: int
    sha256: str
    error: str | None = None


@dataclass(frozen=True, slots=True)
class WatchStatus:
    """A watch as the settings page shows it."""

    id: str
    workspace_id: str
    root: str
    state: WatchState
    started_at: datetime | None
    heartbeat_at: datetime | None
    last_scan_at: datetime | None
    ingested: int
    updated: int
    deleted: int
    tracked: int
    failed: int
    last_error: str | None
    owner_host: str | None
    owner_pid: int | None

    def live(self, now: datetime) -> bool:
        """Running, with a heartbeat within ``LEASE`` (a killed watcher stays "running")."""
        return (
            self.state is WatchState.RUNNING
            and self.heartbeat_at is not None
            and now - self.heartbeat_at <= LEASE
        )


@dataclass(frozen=True, slots=True)
class WatchCounts:
    """What one pass added to the watch's running totals."""

    ingested: int = 0
    updated: int = 0
    deleted: int = 0


class WatchStateRepository(Protocol):
    def open(self, workspace_id: str, root: str, now: datetime) -> str:
        """The id of the watch of ``root`` into the workspace, created when new."""
        ...

    def status(self, workspace_id: str, watch_id: str) -> WatchStatus: ...

    def statuses(self, workspace_id: str) -> list[WatchStatus]:
        """The workspace's watches (bounded), most recently started first."""
        ...

    def claim(self, workspace_id: str, watch_id: str, host: str, pid: int, now: datetime) -> None:
        """Mark the watch running, owned by ``host``/``pid``."""
        ...

    def beat(
        self,
        workspace_id: str,
        watch_id: str,
        now: datetime,
        *,
        counts: WatchCounts = WatchCounts(),
        scanned: bool = False,
        error: str | None = None,
        clear_error: bool = False,
    ) -> None:
        """Record that the watch is alive at ``now``, add ``counts`` to its totals, and set
        the last scan time (``scanned``) or the last error."""
        ...

    def release(self, workspace_id: str, watch_id: str, now: datetime) -> None:
        """Mark the watch stopped."""
        ...

    def files(
        self, workspace_id: str, watch_id: str, prefix: str | None = None
    ) -> dict[str, WatchedFile]:
        """The tracked files (under ``prefix``, a path or folder, when given) by path."""
        ...

    def put(self, workspace_id: str, watch_id: str, f: WatchedFile, now: datetime) -> None:
        """Insert or replace the row of ``f.path``."""
        ...

    def put_many(
        self, workspace_id: str, watch_id: str, files: list[WatchedFile], now: datetime
    ) -> None:
        """``put`` for each of ``files``, in one transaction."""
        ...

    def move(
        self, workspace_id: str, watch_id: str, old: str, f: WatchedFile, now: datetime
    ) -> None:
        """The row of ``old`` becomes ``f`` (a rename), in one transaction."""
        ...

    def remove(self, workspace_id: str, watch_id: str, path: str) -> None: ...

    def references(self, workspace_id: str, item_id: str) -> int:
        """How many tracked files (of any watch of the workspace) are ``item_id``."""
        ...
