"""Watched folders' status: ``GET /api/v1/settings/watches`` (docs/decisions/0047).

Read from the database, so any HTTP process answers for the watcher of the process that runs
it (``relata watch``, or ``relata serve`` with RELATA_WATCH_DIR). The folder's path on the
server is given to editors and owners only; a viewer sees null.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field

from relata.api.deps import ContainerDep, PrincipalDep
from relata.domain.vocabulary import Role
from relata.domain.watch import WatchState, WatchStatus

router = APIRouter(tags=["models"])

State = Literal["watching", "not_responding", "stopped"]


class WatchOut(BaseModel):
    id: str
    root: str | None = Field(description="the folder on the server; null for a viewer")
    state: State = Field(
        description="watching; not_responding: marked running, but no heartbeat for a "
        "minute (the process was killed); stopped"
    )
    started_at: datetime | None
    heartbeat_at: datetime | None
    last_scan_at: datetime | None = Field(description="the last full comparison of the folder")
    tracked: int = Field(description="files that are an item of the workspace")
    ingested: int = Field(description="files ingested as new items, in total")
    updated: int = Field(description="new versions made from changed files, in total")
    deleted: int = Field(description="items deleted with their files, in total")
    failed: int = Field(description="files refused now (too large, unsupported type, ...)")
    last_error: str | None

    @classmethod
    def of(cls, w: WatchStatus, now: datetime, *, show_root: bool) -> WatchOut:
        state: State = (
            "watching"
            if w.live(now)
            else "not_responding"
            if w.state is WatchState.RUNNING
            else "stopped"
        )
        return cls(
            id=w.id,
            root=w.root if show_root else None,
            state=state,
            started_at=w.started_at,
            heartbeat_at=w.heartbeat_at,
            last_scan_at=w.last_scan_at,
            tracked=w.tracked,
            ingested=w.ingested,
            updated=w.updated,
            deleted=w.deleted,
            failed=w.failed,
            last_error=w.last_error,
        )


@router.get("/settings/watches", response_model=list[WatchOut])
def watches(p: PrincipalDep, c: ContainerDep) -> list[WatchOut]:
    """The workspace's watched folders and their status."""
    now = c.clock.now()
    show = p.role.at_least(Role.EDITOR)
    return [WatchOut.of(w, now, show_root=show) for w in c.watches.statuses(p.workspace_id)]
