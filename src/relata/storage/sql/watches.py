"""Watched folders: a watch's status (``watches``) and the files it tracks (``watched_files``),
the ``WatchStateRepository`` port (docs/decisions/0047-watched-folder.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa

from relata.domain.errors import NotFound
from relata.domain.watch import WatchCounts, WatchedFile, WatchState, WatchStatus
from relata.ids import new_id
from relata.storage.sql.base import insert_for, ws_filter
from relata.storage.sql.engine import Database
from relata.storage.sql.tables import watched_files, watches

#: The most watches one workspace lists on the settings page.
MAX_LISTED = 50
#: The longest error text kept (a message, never document content).
MAX_ERROR = 1000


def _clip(text: str | None) -> str | None:
    return None if text is None else text[:MAX_ERROR]


def _like_escape(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _file(row: Any) -> WatchedFile:
    return WatchedFile(
        path=row.path,
        item_id=row.item_id,
        size_bytes=int(row.size_bytes),
        mtime_ns=int(row.mtime_ns),
        sha256=row.sha256,
        error=row.error,
    )


class SqlWatchStateRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    # ------------------------------------------------------------ the watch
    def open(self, workspace_id: str, root: str, now: datetime) -> str:
        with self._db.write() as conn:
            stmt = (
                insert_for(self._db.dialect, watches)
                .values(id=new_id(), workspace_id=workspace_id, root=root, created_at=now)
                .on_conflict_do_nothing(index_elements=["workspace_id", "root"])
            )
            conn.execute(stmt)
            found = conn.execute(
                sa.select(watches.c.id).where(
                    ws_filter(watches, workspace_id), watches.c.root == root
                )
            ).scalar_one()
        return str(found)

    def _status_query(self) -> sa.Select[Any]:
        tracked = (
            sa.select(sa.func.count())
            .where(watched_files.c.watch_id == watches.c.id, watched_files.c.item_id.is_not(None))
            .scalar_subquery()
        )
        failed = (
            sa.select(sa.func.count())
            .where(watched_files.c.watch_id == watches.c.id, watched_files.c.error.is_not(None))
            .scalar_subquery()
        )
        return sa.select(watches, tracked.label("tracked"), failed.label("failed"))

    @staticmethod
    def _status(row: Any) -> WatchStatus:
        return WatchStatus(
            id=row.id,
            workspace_id=row.workspace_id,
            root=row.root,
            state=WatchState(row.state),
            started_at=row.started_at,
            heartbeat_at=row.heartbeat_at,
            last_scan_at=row.last_scan_at,
            ingested=int(row.ingested),
            updated=int(row.updated),
            deleted=int(row.deleted),
            tracked=int(row.tracked),
            failed=int(row.failed),
            last_error=row.last_error,
            owner_host=row.owner_host,
            owner_pid=row.owner_pid,
        )

    def status(self, workspace_id: str, watch_id: str) -> WatchStatus:
        with self._db.read() as conn:
            row = conn.execute(
                self._status_query().where(
                    ws_filter(watches, workspace_id), watches.c.id == watch_id
                )
            ).first()
        if row is None:
            raise NotFound("watch not found")
        return self._status(row)

    def statuses(self, workspace_id: str) -> list[WatchStatus]:
        with self._db.read() as conn:
            rows = conn.execute(
                self._status_query()
                .where(ws_filter(watches, workspace_id))
                .order_by(watches.c.started_at.desc(), watches.c.root)
                .limit(MAX_LISTED)
            ).all()
        return [self._status(r) for r in rows]

    def _update(self, workspace_id: str, watch_id: str, **values: Any) -> None:
        with self._db.write() as conn:
            n = conn.execute(
                watches.update()
                .where(ws_filter(watches, workspace_id), watches.c.id == watch_id)
                .values(**values)
            ).rowcount
        if n == 0:
            raise NotFound("watch not found")

    def claim(self, workspace_id: str, watch_id: str, host: str, pid: int, now: datetime) -> None:
        self._update(
            workspace_id,
            watch_id,
            state=WatchState.RUNNING.value,
            owner_host=host[:255],
            owner_pid=pid,
            started_at=now,
            heartbeat_at=now,
        )

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
        values: dict[str, Any] = {
            "heartbeat_at": now,
            "ingested": watches.c.ingested + counts.ingested,
            "updated": watches.c.updated + counts.updated,
            "deleted": watches.c.deleted + counts.deleted,
        }
        if scanned:
            values["last_scan_at"] = now
        if error is not None:
            values["last_error"] = _clip(error)
        elif clear_error:
            values["last_error"] = None
        self._update(workspace_id, watch_id, **values)

    def release(self, workspace_id: str, watch_id: str, now: datetime) -> None:
        self._update(
            workspace_id, watch_id, state=WatchState.STOPPED.value, heartbeat_at=now, owner_pid=None
        )

    # ------------------------------------------------------------ its files
    def files(
        self, workspace_id: str, watch_id: str, prefix: str | None = None
    ) -> dict[str, WatchedFile]:
        query = sa.select(watched_files).where(
            ws_filter(watched_files, workspace_id), watched_files.c.watch_id == watch_id
        )
        if prefix:
            query = query.where(
                sa.or_(
                    watched_files.c.path == prefix,
                    watched_files.c.path.like(_like_escape(prefix) + "/%", escape="\\"),
                )
            )
        with self._db.read() as conn:
            rows = conn.execute(query).all()
        return {r.path: _file(r) for r in rows}

    def _row(
        self, workspace_id: str, watch_id: str, f: WatchedFile, now: datetime
    ) -> dict[str, Any]:
        return {
            "watch_id": watch_id,
            "path": f.path,
            "workspace_id": workspace_id,
            "item_id": f.item_id,
            "size_bytes": f.size_bytes,
            "mtime_ns": f.mtime_ns,
            "sha256": f.sha256,
            "error": _clip(f.error),
            "updated_at": now,
        }

    def put(self, workspace_id: str, watch_id: str, f: WatchedFile, now: datetime) -> None:
        self.put_many(workspace_id, watch_id, [f], now)

    def put_many(
        self, workspace_id: str, watch_id: str, files: list[WatchedFile], now: datetime
    ) -> None:
        with self._db.write() as conn:
            for f in files:
                row = self._row(workspace_id, watch_id, f, now)
                stmt = insert_for(self._db.dialect, watched_files).values(**row)
                stmt = stmt.on_conflict_do_update(
                    index_elements=["watch_id", "path"],
                    set_={k: v for k, v in row.items() if k not in {"watch_id", "path"}},
                )
                conn.execute(stmt)

    def move(
        self, workspace_id: str, watch_id: str, old: str, f: WatchedFile, now: datetime
    ) -> None:
        with self._db.write() as conn:
            conn.execute(
                watched_files.delete().where(
                    ws_filter(watched_files, workspace_id),
                    watched_files.c.watch_id == watch_id,
                    watched_files.c.path.in_([old, f.path]),
                )
            )
            conn.execute(watched_files.insert(), self._row(workspace_id, watch_id, f, now))

    def remove(self, workspace_id: str, watch_id: str, path: str) -> None:
        with self._db.write() as conn:
            conn.execute(
                watched_files.delete().where(
                    ws_filter(watched_files, workspace_id),
                    watched_files.c.watch_id == watch_id,
                    watched_files.c.path == path,
                )
            )

    def references(self, workspace_id: str, item_id: str) -> int:
        with self._db.read() as conn:
            n = conn.execute(
                sa.select(sa.func.count()).where(
                    ws_filter(watched_files, workspace_id), watched_files.c.item_id == item_id
                )
            ).scalar_one()
        return int(n)
