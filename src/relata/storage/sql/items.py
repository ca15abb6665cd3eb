"""Items and their chunks."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from relata.domain.clock import SystemClock
from relata.domain.errors import DuplicateItem, NotFound
from relata.domain.models import Chunk, Item, ItemStatus, ProcessingRun, SourceType
from relata.domain.ports import ChunkToEmbed, Clock
from relata.storage.sql.base import ws_filter
from relata.storage.sql.engine import Database
from relata.storage.sql.errors import translate
from relata.storage.sql.tables import chunks, items, processing_runs

_MAX_PAGE = 1000
_ID_BATCH = 500
_HEAVY = frozenset({"text", "structure"})


def _item(row: Any) -> Item:
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
        text=row._mapping.get("text"),
        original_path=row.original_path,
        original_filename=row.original_filename,
        media_type=row.media_type,
        metadata=dict(row.metadata or {}),
        chunk_count=row.chunk_count,
        error=row.error,
        updated_at=row.updated_at,
    )


def _item_row(item: Item) -> dict[str, Any]:
    return {
        "id": item.id,
        "workspace_id": item.workspace_id,
        "title": item.title,
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


def _live(workspace_id: str) -> sa.ColumnElement[bool]:
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
        try:
            with self._db.write() as conn:
                conn.execute(items.insert(), [_item_row(item) for item in new])
        except sa.exc.IntegrityError as exc:
            raise translate(exc, "an item with the same content already exists") from exc

    def get(self, workspace_id: str, item_id: str) -> Item:
        with self._db.read() as conn:
            row = conn.execute(
                sa.select(items).where(_live(workspace_id), items.c.id == item_id)
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
        if not item_ids:
            ws_filter(items, workspace_id)
            return []
        columns = items.c if with_text else [c for c in items.c if c.name not in _HEAVY]
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(*columns).where(_live(workspace_id), items.c.id.in_(list(item_ids)))
            ).all()
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
        q = sa.select(items.c.id).where(_live(workspace_id), items.c.id.in_(list(item_ids)))
        q = q.where(*item_filters(source_type, created_from, created_to))
        with self._db.read() as conn:
            return {r.id for r in conn.execute(q)}

    def find_by_content_hash(self, workspace_id: str, content_hash: str) -> Item | None:
        with self._db.read() as conn:
            row = conn.execute(
                sa.select(items)
                .where(
                    _live(workspace_id),
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
                        _live(workspace_id),
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
    ) -> list[Item]:
        q = sa.select(items).where(_live(workspace_id))
        q = q.where(*item_filters(source_type, created_from, created_to, status=status))
        q = q.order_by(items.c.ingested_at.desc(), items.c.id)
        q = q.limit(max(1, min(limit, _MAX_PAGE))).offset(max(0, offset))
        with self._db.read() as conn:
            return [_item(r) for r in conn.execute(q).all()]

    def count(self, workspace_id: str) -> int:
        with self._db.read() as conn:
            return int(
                conn.execute(
                    sa.select(sa.func.count()).select_from(items).where(_live(workspace_id))
                ).scalar_one()
            )

    def set_status(
        self, workspace_id: str, item_id: str, status: ItemStatus, *, error: str | None = None
    ) -> None:
        self._update(workspace_id, item_id, status=status.value, error=error)

    def set_text(self, workspace_id: str, item_id: str, text: str) -> None:
        self._update(workspace_id, item_id, text=text)

    def set_original_path(self, workspace_id: str, item_id: str, path: str) -> None:
        self._update(workspace_id, item_id, original_path=path)

    def set_parsed(
        self,
        workspace_id: str,
        item_id: str,
        *,
        text: str,
        structure: dict[str, Any],
        title: str | None = None,
        status: ItemStatus = ItemStatus.PROCESSING,
        run: ProcessingRun | None = None,
    ) -> None:
        """Store the parse stage's result: the document text, its structure (blocks as
        offsets into ``text``) and, when given, a title; clears any previous error. ``run``
        (the stage's processing run) is recorded in the same transaction."""
        values: dict[str, Any] = {
            "text": text,
            "structure": structure,
            "status": status.value,
            "error": None,
            "updated_at": self._clock.now(),
        }
        if title is not None:
            values["title"] = title
        with self._db.write() as conn:
            n = conn.execute(
                items.update().where(_live(workspace_id), items.c.id == item_id).values(**values)
            ).rowcount
            if n == 0:
                raise NotFound("item not found")
            if run is not None:
                _insert_run(conn, workspace_id, item_id, run)

    def get_parsed(self, workspace_id: str, item_id: str) -> tuple[Item, dict[str, Any] | None]:
        """The live item with its stored structure (None before the parse stage ran)."""
        with self._db.read() as conn:
            row = conn.execute(
                sa.select(items).where(_live(workspace_id), items.c.id == item_id)
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
                    .where(_live(workspace_id), items.c.id.in_(ids[i : i + _ID_BATCH]))
                    .group_by(items.c.status)
                ).all()
                for status, n in rows:
                    counts[status] = counts.get(status, 0) + int(n)
        return counts

    def mark_deleted(self, workspace_id: str, item_id: str) -> Item:
        """First step of a delete: the item disappears from every read at once (and its
        content hash is free again), so running pipeline stages meet ``NotFound``; the row
        and what cascades from it go with ``delete``. Returns the item as it was."""
        now = self._clock.now()
        with self._db.write() as conn:
            row = conn.execute(
                sa.select(items).where(_live(workspace_id), items.c.id == item_id)
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
                items.update().where(_live(workspace_id), items.c.id == item_id).values(**values)
            ).rowcount
        if n == 0:
            raise NotFound("item not found")

    def delete(self, workspace_id: str, item_id: str) -> None:
        """Remove the item; its chunks, claims and runs go with it (ON DELETE CASCADE)."""
        with self._db.write() as conn:
            n = conn.execute(
                items.delete().where(ws_filter(items, workspace_id), items.c.id == item_id)
            ).rowcount
        if n == 0:
            raise NotFound("item not found")


def _insert_run(conn: Connection, workspace_id: str, item_id: str, run: ProcessingRun) -> None:
    """A stage's processing run, written in the transaction that stores the stage's result
    (the same row ``SqlProcessingRunRepository.add`` writes)."""
    if run.workspace_id != workspace_id or run.item_id != item_id:
        raise ValueError("processing run does not belong to the item being updated")
    conn.execute(
        processing_runs.insert(),
        {
            "id": run.id,
            "workspace_id": run.workspace_id,
            "item_id": run.item_id,
            "stage": run.stage,
            "outcome": run.outcome,
            "versions": dict(run.versions),
            "details": dict(run.details),
            "error": run.error,
            "started_at": run.started_at,
            "finished_at": run.finished_at,
        },
    )


def _chunk(row: Any) -> Chunk:
    return Chunk(
        id=row.id,
        workspace_id=row.workspace_id,
        item_id=row.item_id,
        sequence=row.sequence,
        text=row.text,
        content_hash=row.content_hash,
        start_offset=row.start_offset,
        end_offset=row.end_offset,
        heading_path=tuple(row.heading_path or ()),
        page=row.page,
        token_count=row.token_count,
        embedding_model=row.embedding_model,
    )


class SqlChunkRepository:
    def __init__(self, db: Database, clock: Clock | None = None) -> None:
        self._db = db
        self._clock = clock or SystemClock()

    def replace_for_item(
        self,
        workspace_id: str,
        item_id: str,
        new: Sequence[Chunk],
        *,
        item_status: ItemStatus | None = None,
        runs: Sequence[ProcessingRun] = (),
    ) -> None:
        """Delete then insert in one transaction, so exactly one generation exists.

        In the same transaction, when given: the item's new status and the chunk stage's
        processing runs, so a stage's result and its record are committed together."""
        now = self._clock.now()
        for c in new:
            if c.workspace_id != workspace_id or c.item_id != item_id:
                raise ValueError("chunk does not belong to the item being replaced")
        values: dict[str, Any] = {"chunk_count": len(new), "updated_at": now}
        if item_status is not None:
            values["status"] = item_status.value
            values["error"] = None
        with self._db.write() as conn:
            # The update doubles as the liveness check: a deleted item matches no row.
            n = conn.execute(
                items.update().where(_live(workspace_id), items.c.id == item_id).values(**values)
            ).rowcount
            if n == 0:
                raise NotFound("item not found")
            conn.execute(
                chunks.delete().where(ws_filter(chunks, workspace_id), chunks.c.item_id == item_id)
            )
            if new:
                conn.execute(
                    chunks.insert(),
                    [
                        {
                            "id": c.id,
                            "workspace_id": c.workspace_id,
                            "item_id": c.item_id,
                            "sequence": c.sequence,
                            "text": c.text,
                            "content_hash": c.content_hash,
                            "heading_path": list(c.heading_path),
                            "start_offset": c.start_offset,
                            "end_offset": c.end_offset,
                            "page": c.page,
                            "token_count": c.token_count,
                            "embedding_model": c.embedding_model,
                            "created_at": now,
                        }
                        for c in new
                    ],
                )
            for run in runs:
                _insert_run(conn, workspace_id, item_id, run)

    def list_for_item(self, workspace_id: str, item_id: str) -> list[Chunk]:
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(chunks)
                .where(ws_filter(chunks, workspace_id), chunks.c.item_id == item_id)
                .order_by(chunks.c.sequence)
            ).all()
        return [_chunk(r) for r in rows]

    def get_many(self, workspace_id: str, chunk_ids: Sequence[str]) -> list[Chunk]:
        if not chunk_ids:
            ws_filter(chunks, workspace_id)
            return []
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(chunks).where(
                    ws_filter(chunks, workspace_id), chunks.c.id.in_(list(chunk_ids))
                )
            ).all()
        by_id = {r.id: _chunk(r) for r in rows}
        return [by_id[i] for i in chunk_ids if i in by_id]

    def count(self, workspace_id: str) -> int:
        with self._db.read() as conn:
            return int(
                conn.execute(
                    sa.select(sa.func.count())
                    .select_from(chunks)
                    .where(ws_filter(chunks, workspace_id))
                ).scalar_one()
            )

    # ------------------------------------------------------------ embeddings
    def list_to_embed(self, workspace_id: str, item_id: str) -> list[ChunkToEmbed]:
        """The live item's chunks in order, with the item fields their vectors need (one
        read transaction; the item's text is not loaded)."""
        with self._db.read() as conn:
            head = conn.execute(
                sa.select(
                    items.c.title, items.c.source_type, items.c.created_at, items.c.ingested_at
                ).where(_live(workspace_id), items.c.id == item_id)
            ).first()
            if head is None:
                raise NotFound("item not found")
            rows = conn.execute(
                sa.select(chunks)
                .where(ws_filter(chunks, workspace_id), chunks.c.item_id == item_id)
                .order_by(chunks.c.sequence)
            ).all()
        date = head.created_at or head.ingested_at
        return [ChunkToEmbed(_chunk(r), head.title, head.source_type, date) for r in rows]

    def list_unembedded(self, workspace_id: str, model: str, *, limit: int) -> list[ChunkToEmbed]:
        """Up to ``limit`` chunks of live items whose ``embedding_model`` is not ``model``
        (served by the ``(workspace_id, embedding_model)`` index; no ORDER BY, so a batch
        never sorts every remaining chunk)."""
        q = (
            sa.select(
                chunks,
                items.c.title.label("item_title"),
                items.c.source_type.label("item_source_type"),
                items.c.created_at.label("item_created_at"),
                items.c.ingested_at.label("item_ingested_at"),
            )
            .join(items, items.c.id == chunks.c.item_id)
            .where(
                ws_filter(chunks, workspace_id),
                sa.or_(chunks.c.embedding_model.is_(None), chunks.c.embedding_model != model),
                _live(workspace_id),
            )
            .limit(max(1, limit))
        )
        with self._db.read() as conn:
            rows = conn.execute(q).all()
        return [
            ChunkToEmbed(
                _chunk(r), r.item_title, r.item_source_type, r.item_created_at or r.item_ingested_at
            )
            for r in rows
        ]

    def set_embedding_model(
        self,
        workspace_id: str,
        chunk_ids: Sequence[str],
        model: str,
        *,
        item_id: str | None = None,
        item_status: ItemStatus | None = None,
        run: ProcessingRun | None = None,
    ) -> int:
        """Stamp the chunks with ``model``; with ``item_id``, in the same transaction the
        item's status (``NotFound`` when the item is gone) and the embed stage's run."""
        ids = list(chunk_ids)
        stamped = 0
        with self._db.write() as conn:
            if item_id is not None:
                values: dict[str, Any] = {"updated_at": self._clock.now()}
                if item_status is not None:
                    values["status"] = item_status.value
                    values["error"] = None
                n = conn.execute(
                    items.update()
                    .where(_live(workspace_id), items.c.id == item_id)
                    .values(**values)
                ).rowcount
                if n == 0:
                    raise NotFound("item not found")
            for i in range(0, len(ids), _ID_BATCH):
                where = [ws_filter(chunks, workspace_id), chunks.c.id.in_(ids[i : i + _ID_BATCH])]
                if item_id is not None:
                    where.append(chunks.c.item_id == item_id)
                stamped += conn.execute(
                    chunks.update().where(*where).values(embedding_model=model)
                ).rowcount
            if run is not None and item_id is not None:
                _insert_run(conn, workspace_id, item_id, run)
        return stamped

    def count_by_embedding_model(self, workspace_id: str) -> dict[str | None, int]:
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(chunks.c.embedding_model, sa.func.count())
                .where(ws_filter(chunks, workspace_id))
                .group_by(chunks.c.embedding_model)
            ).all()
        return {model: int(n) for model, n in rows}

    def clear_embedding_model(self, workspace_id: str) -> int:
        with self._db.write() as conn:
            return int(
                conn.execute(
                    chunks.update()
                    .where(ws_filter(chunks, workspace_id), chunks.c.embedding_model.is_not(None))
                    .values(embedding_model=None)
                ).rowcount
            )

    def mark_ready_when_embedded(
        self, workspace_id: str, item_ids: Sequence[str], model: str, *, error_prefix: str
    ) -> int:
        """Items that failed at the embed stage (``error`` starts with ``error_prefix``) and
        now have every chunk embedded with ``model`` become ``ready`` again."""
        ids = sorted(set(item_ids))
        ws_filter(items, workspace_id)
        unembedded = (
            sa.select(chunks.c.id)
            .where(
                ws_filter(chunks, workspace_id),
                chunks.c.item_id == items.c.id,
                sa.or_(chunks.c.embedding_model.is_(None), chunks.c.embedding_model != model),
            )
            .exists()
        )
        changed = 0
        with self._db.write() as conn:
            for i in range(0, len(ids), _ID_BATCH):
                changed += conn.execute(
                    items.update()
                    .where(
                        _live(workspace_id),
                        items.c.id.in_(ids[i : i + _ID_BATCH]),
                        items.c.status == ItemStatus.FAILED.value,
                        items.c.error.startswith(error_prefix, autoescape=True),
                        ~unembedded,
                    )
                    .values(status=ItemStatus.READY.value, error=None, updated_at=self._clock.now())
                ).rowcount
        return changed
