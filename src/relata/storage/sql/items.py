"""Items: the source records of a workspace (their chunks are in ``chunks.py``).

The statements a pipeline stage commits inside its unit of work (``unit_of_work.py``) are
module functions taking a ``Connection``; the repository methods run the same functions in
a transaction of their own, so each write is written once.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from relata.domain.clock import SystemClock
from relata.domain.errors import DuplicateItem, NotFound
from relata.domain.models import Item, ItemStatus, ProcessingRun, SourceType
from relata.domain.ports import Clock
from relata.ids import title_key
from relata.storage.sql.base import require_workspace, ws_filter
from relata.storage.sql.engine import Database
from relata.storage.sql.errors import translate
from relata.storage.sql.tables import item_versions, items, processing_runs

_MAX_PAGE = 1000
_ID_BATCH = 500
_HEAVY = frozenset({"text", "structure"})


def _item(row: Any) -> Item:
    # A light row (``get_many(with_text=False)``) has no text; asking a row for a column it
    # lacks costs SQLAlchemy an exception, so whether it has one is asked first.
    fields = row._mapping
    return Item(
        id=row.id,
        workspace_id=row.workspace_id,
        title=row.title,
        source_type=SourceType(row.source_type),
        content_hash=row.content_hash,
        size_bytes=row.size_bytes,
        ingested_at=row.ingested_at,
        created_at=row.created_at,
        status=ItemStatus(row.status),
        deliberate_duplicate=row.deliberate_duplicate,
        text=row.text if "text" in fields else None,
        original_path=row.original_path,
        original_filename=row.original_filename,
        media_type=row.media_type,
        metadata=dict(row.metadata or {}),
        chunk_count=row.chunk_count,
        error=row.error,
        updated_at=row.updated_at,
        failed_stage=row.failed_stage if "failed_stage" in fields else None,
    )


def _item_row(item: Item) -> dict[str, Any]:
    return {
        "id": item.id,
        "workspace_id": item.workspace_id,
        "title": item.title,
        "title_key": title_key(item.title),
        "source_type": item.source_type.value,
        "status": item.status.value,
        "content_hash": item.content_hash,
        "deliberate_duplicate": item.deliberate_duplicate,
        "size_bytes": item.size_bytes,
        "text": item.text,
        "original_path": item.original_path,
        "original_filename": item.original_filename,
        "media_type": item.media_type,
        "metadata": dict(item.metadata),
        "chunk_count": item.chunk_count,
        "created_at": item.created_at,
        "ingested_at": item.ingested_at,
        "updated_at": item.updated_at,
    }


def _first_version_row(item: Item) -> dict[str, Any]:
    """Version 1 of a new item: its content as uploaded (``item_versions``)."""
    return {
        "item_id": item.id,
        "number": 1,
        "workspace_id": item.workspace_id,
        "sha256": item.content_hash,
        "size_bytes": item.size_bytes,
        "source_type": SourceType(item.source_type).value,
        "filename": item.original_filename,
        "media_type": item.media_type,
        "original_path": item.original_path,
        "created_at": item.ingested_at,
    }


def item_filters(
    source_type: str | None,
    created_from: datetime | None,
    created_to: datetime | None,
    *,
    status: str | None = None,
) -> list[sa.ColumnElement[bool]]:
    """The optional type, status and date filters on items; the date is the document's own
    creation date when known, else when it was ingested (``from <= date < to``)."""
    where: list[sa.ColumnElement[bool]] = []
    if source_type:
        where.append(items.c.source_type == source_type)
    if status:
        where.append(items.c.status == status)
    date = sa.func.coalesce(items.c.created_at, items.c.ingested_at)
    if created_from:
        where.append(date >= created_from)
    if created_to:
        where.append(date < created_to)
    return where


def _contains(text: str) -> sa.ColumnElement[bool]:
    """The title or the original file name holds ``text``: case-insensitive on both
    dialects (``ILIKE`` on PostgreSQL; ``lower() LIKE lower()`` on SQLite, ASCII case only
    there), its ``%``, ``_`` and ``\\`` matched literally."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    pattern = f"%{escaped}%"
    return sa.or_(
        items.c.title.ilike(pattern, escape="\\"),
        items.c.original_filename.ilike(pattern, escape="\\"),
    )


def live(workspace_id: str) -> sa.ColumnElement[bool]:
    return sa.and_(ws_filter(items, workspace_id), items.c.deleted_at.is_(None))


class SqlItemRepository:
    def __init__(self, db: Database, clock: Clock | None = None) -> None:
        self._db = db
        self._clock = clock or SystemClock()

    def create(self, item: Item) -> Item:
        ws_filter(items, item.workspace_id)
        try:
            with self._db.write() as conn:
                conn.execute(items.insert(), _item_row(item))
                conn.execute(item_versions.insert(), _first_version_row(item))
        except sa.exc.IntegrityError as exc:
            err = translate(exc, "an item with the same content already exists")
            if isinstance(err, DuplicateItem):
                existing = self.find_by_content_hash(item.workspace_id, item.content_hash)
                err.existing_id = existing.id if existing else None
            raise err from exc
        return item

    def create_many(self, new: Sequence[Item]) -> None:
        """Insert several items in one transaction: all of them, or (``DuplicateItem`` for a
        live copy of some content, existing id unknown) none."""
        for item in new:
            ws_filter(items, item.workspace_id)
        if not new:
            return
        with self._db.write() as conn:
            insert_items(conn, new)

    def get(self, workspace_id: str, item_id: str) -> Item:
        with self._db.read() as conn:
            row = conn.execute(
                _GET_LIVE, {"ws": require_workspace(items, workspace_id), "item_id": item_id}
            ).first()
        if row is None:
            raise NotFound("item not found")
        return _item(row)

    def get_many(
        self, workspace_id: str, item_ids: Sequence[str], *, with_text: bool = True
    ) -> list[Item]:
        """The live items of this workspace among ``item_ids``, in the order given.

        ``with_text=False`` leaves out the extracted text and structure (``text`` is None):
        search re-reads hundreds of candidates per query and needs neither.
        """
        ws = require_workspace(items, workspace_id)
        if not item_ids:
            return []
        ids = list(dict.fromkeys(item_ids))
        query = _LIVE_BY_IDS if with_text else _LIVE_BY_IDS_LIGHT
        rows: list[Any] = []
        with self._db.read() as conn:
            for i in range(0, len(ids), _ID_BATCH):
                rows += conn.execute(query, {"ws": ws, "ids": ids[i : i + _ID_BATCH]}).all()
        by_id = {r.id: _item(r) for r in rows}
        return [by_id[i] for i in item_ids if i in by_id]

    def filter_live(
        self,
        workspace_id: str,
        item_ids: Sequence[str],
        *,
        source_type: str | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
    ) -> set[str]:
        """Which of ``item_ids`` are live items of this workspace matching the filters.

        Answered from the covering index ``ix_items_search_filter`` alone: search checks
        hundreds of candidates per query and reads full rows only for the page it returns.
        """
        if not item_ids:
            ws_filter(items, workspace_id)
            return set()
        q = sa.select(items.c.id).where(live(workspace_id), items.c.id.in_(list(item_ids)))
        q = q.where(*item_filters(source_type, created_from, created_to))
        with self._db.read() as conn:
            return {r.id for r in conn.execute(q)}

    def find_by_content_hash(self, workspace_id: str, content_hash: str) -> Item | None:
        with self._db.read() as conn:
            row = conn.execute(
                sa.select(items)
                .where(
                    live(workspace_id),
                    items.c.content_hash == content_hash,
                    items.c.deliberate_duplicate.is_(False),
                )
                .limit(1)
            ).first()
        return _item(row) if row else None

    def find_by_content_hashes(
        self, workspace_id: str, content_hashes: Sequence[str]
    ) -> dict[str, str]:
        """Content hash -> id of the live, non-deliberate item holding it, for those found."""
        found: dict[str, str] = {}
        hashes = sorted(set(content_hashes))
        ws_filter(items, workspace_id)
        with self._db.read() as conn:
            for i in range(0, len(hashes), _ID_BATCH):
                rows = conn.execute(
                    sa.select(items.c.content_hash, items.c.id).where(
                        live(workspace_id),
                        items.c.content_hash.in_(hashes[i : i + _ID_BATCH]),
                        items.c.deliberate_duplicate.is_(False),
                    )
                ).all()
                for digest, item_id in rows:
                    found.setdefault(digest, item_id)
        return found

    def list(
        self,
        workspace_id: str,
        *,
        limit: int,
        offset: int = 0,
        source_type: str | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
        status: str | None = None,
        contains: str | None = None,
        item_ids: Sequence[str] | None = None,
    ) -> list[Item]:
        q = sa.select(items).where(live(workspace_id))
        q = q.where(*item_filters(source_type, created_from, created_to, status=status))
        if contains:
            q = q.where(_contains(contains))
        if item_ids is not None:
            q = q.where(items.c.id.in_(builtins.list(item_ids)[:_ID_BATCH]))
        q = q.order_by(items.c.ingested_at.desc(), items.c.id)
        q = q.limit(max(1, min(limit, _MAX_PAGE))).offset(max(0, offset))
        with self._db.read() as conn:
            return [_item(r) for r in conn.execute(q).all()]

    def count(self, workspace_id: str) -> int:
        ws = require_workspace(items, workspace_id)
        with self._db.read() as conn:
            return int(conn.execute(COUNT_LIVE_ITEMS, {"ws": ws}).scalar_one())

    def set_status(
        self,
        workspace_id: str,
        item_id: str,
        status: ItemStatus,
        *,
        error: str | None = None,
        failed_stage: str | None = None,
    ) -> None:
        with self._db.write() as conn:
            set_item_status(
                conn,
                workspace_id,
                item_id,
                status,
                self._clock.now(),
                error=error,
                failed_stage=failed_stage,
            )

    def set_text(self, workspace_id: str, item_id: str, text: str) -> None:
        self._update(workspace_id, item_id, text=text)

    def set_details(
        self, workspace_id: str, item_id: str, *, title: str, metadata: dict[str, str]
    ) -> Item:
        """Set the item's title (with its ``title_key``) and metadata; the full-text indexes
        follow the title by themselves (SQLite's triggers, PostgreSQL's generated column)."""
        self._update(
            workspace_id, item_id, title=title, title_key=title_key(title), metadata=dict(metadata)
        )
        return self.get(workspace_id, item_id)

    def set_original_path(self, workspace_id: str, item_id: str, path: str) -> None:
        self._update(workspace_id, item_id, original_path=path)

    def get_parsed(self, workspace_id: str, item_id: str) -> tuple[Item, dict[str, Any] | None]:
        """The live item with its stored structure (None before the parse stage ran)."""
        with self._db.read() as conn:
            row = conn.execute(
                _GET_LIVE, {"ws": require_workspace(items, workspace_id), "item_id": item_id}
            ).first()
        if row is None:
            raise NotFound("item not found")
        structure = row.structure
        return _item(row), dict(structure) if isinstance(structure, dict) else None

    def status_counts(self, workspace_id: str, item_ids: Sequence[str]) -> dict[str, int]:
        """How many of the given live items are in each status (batched for long lists)."""
        counts: dict[str, int] = {}
        ids = list(item_ids)
        ws_filter(items, workspace_id)
        with self._db.read() as conn:
            for i in range(0, len(ids), _ID_BATCH):
                rows = conn.execute(
                    sa.select(items.c.status, sa.func.count())
                    .where(live(workspace_id), items.c.id.in_(ids[i : i + _ID_BATCH]))
                    .group_by(items.c.status)
                ).all()
                for status, n in rows:
                    counts[status] = counts.get(status, 0) + int(n)
        return counts

    def list_failed(
        self, workspace_id: str, *, stage: str | None = None, limit: int
    ) -> builtins.list[Item]:
        """Up to ``limit`` failed live items (those that failed at ``stage``), oldest first,
        without their text (recovery needs ids and stages only)."""
        columns = [c for c in items.c if c.name not in _HEAVY]
        q = sa.select(*columns).where(live(workspace_id), items.c.status == ItemStatus.FAILED.value)
        if stage is not None:
            q = q.where(items.c.failed_stage == stage)
        q = q.order_by(items.c.ingested_at, items.c.id).limit(max(1, min(limit, _MAX_PAGE)))
        with self._db.read() as conn:
            return [_item(r) for r in conn.execute(q).all()]

    def find_named(
        self,
        workspace_id: str,
        *,
        titles: Sequence[str] = (),
        filenames: Sequence[str] = (),
        exclude_item: str | None = None,
        limit: int = 50,
    ) -> builtins.list[Item]:
        """Live items (without text) titled one of ``titles`` (compared by ``title_key``) or
        whose original file name is one of ``filenames`` (exactly), oldest first: the
        ``(workspace, title_key)`` and ``(workspace, original_filename)`` indexes, never a
        scan. Blank names are ignored; at most 500 distinct of each kind are looked up."""
        keys = sorted({k for k in (title_key(t) for t in titles) if k})[:_ID_BATCH]
        names = sorted({f for f in filenames if f and f.strip()})[:_ID_BATCH]
        where = [live(workspace_id)]
        if exclude_item is not None:
            where.append(items.c.id != exclude_item)
        # One query per index (SQLite does not combine them for an OR), oldest first, merged.
        lookups = [
            c.in_(v)
            for c, v in ((items.c.title_key, keys), (items.c.original_filename, names))
            if v
        ]
        if not lookups:
            return []
        limit = max(1, min(limit, _MAX_PAGE))
        # SQLite's planner, without statistics, would rather walk the workspace's items in
        # the (workspace, ingested_at) index to skip the sort than look up the few named ones;
        # a unary plus on the sort key (its documented way) rules that index out.
        oldest = (
            sa.literal_column("+items.ingested_at")
            if self._db.dialect == "sqlite"
            else items.c.ingested_at
        )
        columns = [c for c in items.c if c.name not in _HEAVY]
        found: dict[str, Item] = {}
        with self._db.read() as conn:
            for lookup in lookups:
                q = sa.select(*columns).where(*where, lookup).order_by(oldest, items.c.id)
                for row in conn.execute(q.limit(limit)):
                    found.setdefault(row.id, _item(row))
        return sorted(found.values(), key=lambda i: (i.ingested_at, i.id))[:limit]

    def mark_deleted(self, workspace_id: str, item_id: str) -> Item:
        """First step of a delete: the item disappears from every read at once (and its
        content hash is free again), so running pipeline stages meet ``NotFound``; the row
        and what cascades from it go with ``delete``. Returns the item as it was."""
        now = self._clock.now()
        with self._db.write() as conn:
            row = conn.execute(
                _GET_LIVE, {"ws": require_workspace(items, workspace_id), "item_id": item_id}
            ).first()
            if row is None:
                raise NotFound("item not found")
            conn.execute(
                items.update()
                .where(ws_filter(items, workspace_id), items.c.id == item_id)
                .values(deleted_at=now, updated_at=now)
            )
        return _item(row)

    def _update(self, workspace_id: str, item_id: str, **values: Any) -> None:
        values["updated_at"] = self._clock.now()
        with self._db.write() as conn:
            n = conn.execute(
                items.update().where(live(workspace_id), items.c.id == item_id).values(**values)
            ).rowcount
        if n == 0:
            raise NotFound("item not found")

    def delete(self, workspace_id: str, item_id: str) -> None:
        """Remove the item; its chunks, claims, contradictions, relationships and runs go
        with it (ON DELETE CASCADE)."""
        with self._db.write() as conn:
            n = conn.execute(
                items.delete().where(ws_filter(items, workspace_id), items.c.id == item_id)
            ).rowcount
        if n == 0:
            raise NotFound("item not found")


# The statements every stage's transaction runs, built once: constructing SQLAlchemy
# statements per call was the larger part of a job's CPU (docs/benchmarks.md).
_LIVE_BY_ID = sa.and_(
    items.c.workspace_id == sa.bindparam("ws"),
    items.c.id == sa.bindparam("item_id"),
    items.c.deleted_at.is_(None),
)
_GET_LIVE = sa.select(items).where(_LIVE_BY_ID)
_LIVE_IN = sa.and_(
    items.c.workspace_id == sa.bindparam("ws"),
    items.c.id.in_(sa.bindparam("ids", expanding=True)),
    items.c.deleted_at.is_(None),
)
_LIVE_BY_IDS = sa.select(items).where(_LIVE_IN)
_LIVE_BY_IDS_LIGHT = sa.select(*[c for c in items.c if c.name not in _HEAVY]).where(_LIVE_IN)
#: The workspace's live items (``ws``): the ``ix_items_search_filter`` index.
COUNT_LIVE_ITEMS = (
    sa.select(sa.func.count())
    .select_from(items)
    .where(items.c.workspace_id == sa.bindparam("ws"), items.c.deleted_at.is_(None))
)
_SET_STATUS = (
    items.update()
    .where(_LIVE_BY_ID)
    .values(
        status=sa.bindparam("p_status"),
        error=sa.bindparam("p_error"),
        failed_stage=sa.bindparam("p_failed_stage"),
        updated_at=sa.bindparam("p_now"),
    )
)
_STORE_PARSED = (
    items.update()
    .where(_LIVE_BY_ID)
    .values(
        text=sa.bindparam("p_text"),
        structure=sa.bindparam("p_structure", type_=items.c.structure.type),
        updated_at=sa.bindparam("p_now"),
    )
)
_STORE_PARSED_TITLED = _STORE_PARSED.values(
    title=sa.bindparam("p_title"), title_key=sa.bindparam("p_title_key")
)
_INSERT_RUN = processing_runs.insert()


def set_item_status(
    conn: Connection,
    workspace_id: str,
    item_id: str,
    status: ItemStatus,
    now: datetime,
    *,
    error: str | None = None,
    failed_stage: str | None = None,
) -> None:
    """Set a live item's status (an error and failed stage only with ``failed``; any other
    status clears them); ``NotFound`` when the item is gone. The update doubles as the
    liveness check of a stage's transaction."""
    failed = status is ItemStatus.FAILED
    params = {
        "ws": require_workspace(items, workspace_id),
        "item_id": item_id,
        "p_status": status.value,
        "p_error": error if failed else None,
        "p_failed_stage": failed_stage if failed else None,
        "p_now": now,
    }
    if conn.execute(_SET_STATUS, params).rowcount == 0:
        raise NotFound("item not found")


def store_parsed(
    conn: Connection,
    workspace_id: str,
    item_id: str,
    now: datetime,
    *,
    text: str,
    structure: dict[str, Any],
    title: str | None,
) -> None:
    """The parse stage's result on the item: text, structure (blocks as offsets into the
    text) and, when given, a title (with its ``title_key``); ``NotFound`` when the item is
    gone."""
    params: dict[str, Any] = {
        "ws": require_workspace(items, workspace_id),
        "item_id": item_id,
        "p_text": text,
        "p_structure": structure,
        "p_now": now,
    }
    statement = _STORE_PARSED
    if title is not None:
        params["p_title"] = title
        params["p_title_key"] = title_key(title)
        statement = _STORE_PARSED_TITLED
    if conn.execute(statement, params).rowcount == 0:
        raise NotFound("item not found")


def insert_run(conn: Connection, run: ProcessingRun) -> None:
    """A stage's processing run (the row ``SqlProcessingRunRepository.add`` writes)."""
    require_workspace(processing_runs, run.workspace_id)
    conn.execute(
        _INSERT_RUN,
        {
            "id": run.id,
            "workspace_id": run.workspace_id,
            "item_id": run.item_id,
            "stage": run.stage,
            "outcome": str(run.outcome),
            "versions": dict(run.versions),
            "details": dict(run.details),
            "error": run.error,
            "started_at": run.started_at,
            "finished_at": run.finished_at,
        },
    )


def insert_items(conn: Connection, new: Sequence[Item]) -> None:
    """New items with their version 1 (``create_many``, and a message's new attachments in
    the unit of work of its new version); ``DuplicateItem`` (existing id unknown) when some
    content is live already."""
    if not new:
        return
    for item in new:
        require_workspace(items, item.workspace_id)
    try:
        conn.execute(items.insert(), [_item_row(item) for item in new])
        conn.execute(item_versions.insert(), [_first_version_row(item) for item in new])
    except sa.exc.IntegrityError as exc:
        raise translate(exc, "an item with the same content already exists") from exc


def mark_items_deleted(
    conn: Connection, workspace_id: str, item_ids: Sequence[str], now: datetime
) -> None:
    """The first step of deleting these live items (``SqlItemRepository.mark_deleted``): gone
    from every read, their content hashes free; the rest of the delete follows the commit."""
    if not item_ids:
        return
    conn.execute(
        items.update()
        .where(live(workspace_id), items.c.id.in_(builtins.list(item_ids)))
        .values(deleted_at=now, updated_at=now)
    )
