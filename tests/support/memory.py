"""In-memory fakes of the item, chunk, job and processing-run repositories and of the
pipeline's unit of work, for service tests that need no database.

They implement the ports of ``relata.domain.ports`` and pass the same contract suite as the
SQL adapters (tests/integration/test_repository_contract.py). Where a port's docstring leaves
a behaviour unsaid, they do what the SQL adapter does: it is the reference.

Every fake built on one ``MemoryStore`` sees the same rows, as tables of one database do: the
chunk fake sees which items are live, a unit of work writes items, chunks, runs and jobs
together, and deleting an item takes its chunks and runs with it (``ON DELETE CASCADE``).
One re-entrant lock serialises every operation, like SQLite's single writer. A unit of work
holds it for its whole block and puts back a snapshot of the rows if the block raises, so a
transaction applies all or nothing and no other thread sees it half done. Records are
frozen dataclasses; the dicts inside them are copied in and out, so a caller never shares
state with the store, as with rows read back from a database.

Entities, claims and relationships are not modelled: ``MemoryStageTransaction
.replace_entities`` (``replace_claims``, ``replace_relationships``) checks the item, as SQL
does, then refuses, so those stages are tested on SQL.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from relata.domain.clock import SystemClock
from relata.domain.errors import DuplicateItem, DuplicateKey, LeaseLost, MissingWorkspace, NotFound
from relata.domain.models import (
    Attachment,
    Chunk,
    Claim,
    FoundContradiction,
    Item,
    ItemStatus,
    ItemVersion,
    Job,
    JobStatus,
    ObservedMention,
    ProcessingRun,
    ProposedAlias,
    ProposedRelationship,
)
from relata.domain.ports import ChunkToEmbed, Clock
from relata.ids import title_key
from relata.storage.sql.jobs import SUPERSEDED

_MAX_PAGE = 1000  # the SQL adapters' page bound
_ERROR_LEN = 2000  # jobs.last_error's width
_PENDING_KEY_INDEX = "uq_jobs_pending_idempotency_key"
_LEASE_LOST = "the job's lease is no longer held by this worker"


def require_workspace(workspace_id: str | None, table: str) -> str:
    """``MissingWorkspace`` for an empty workspace, as ``storage.sql.base.ws_filter``."""
    if not isinstance(workspace_id, str) or not workspace_id.strip():
        raise MissingWorkspace(f"a {table} query was made without a workspace")
    return workspace_id


def _page(rows: Sequence[Any], limit: int, offset: int) -> builtins.list[Any]:
    start = max(0, offset)
    return list(rows[start : start + max(1, min(limit, _MAX_PAGE))])


@dataclass(frozen=True, slots=True)
class _ItemRow:
    item: Item
    structure: dict[str, Any] | None = None
    deleted_at: datetime | None = None

    @property
    def live(self) -> bool:
        return self.deleted_at is None


def _item_out(item: Item, *, with_text: bool = True) -> Item:
    return replace(item, metadata=dict(item.metadata), text=item.text if with_text else None)


def _job_out(job: Job) -> Job:
    return replace(job, payload=copy.deepcopy(job.payload))


def _run_out(run: ProcessingRun) -> ProcessingRun:
    return replace(run, versions=dict(run.versions), details=copy.deepcopy(run.details))


def _date(item: Item) -> datetime:
    """The date filters bound: the document's own date, else when it was ingested."""
    return item.created_at or item.ingested_at


def _passes(
    item: Item,
    source_type: str | None,
    created_from: datetime | None,
    created_to: datetime | None,
    status: str | None = None,
) -> bool:
    return (
        (not source_type or item.source_type == source_type)
        and (not status or item.status == status)
        and (not created_from or _date(item) >= created_from)
        and (not created_to or _date(item) < created_to)
    )


def _failed_at(item: Item, stage: str | None) -> bool:
    return item.status is ItemStatus.FAILED and (stage is None or item.failed_stage == stage)


class MemoryStore:
    """The rows every fake of one "database" shares, and the statements they run on them
    (the counterparts of the module functions in ``storage/sql/items.py``, ``chunks.py`` and
    ``jobs.py``, which the repositories and the unit of work also share there)."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock: Clock = clock or SystemClock()
        self.lock = threading.RLock()
        self.items: dict[str, _ItemRow] = {}
        self.chunks: dict[str, Chunk] = {}
        self.jobs: dict[str, Job] = {}
        self.runs: dict[str, ProcessingRun] = {}

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All the writes of the block, or none of them if it raises."""
        with self.lock:
            saved = (dict(self.items), dict(self.chunks), dict(self.jobs), dict(self.runs))
            try:
                yield
            except BaseException:
                self.items, self.chunks, self.jobs, self.runs = saved
                raise

    # ------------------------------------------------------------ items
    def live_item(self, workspace_id: str, item_id: str) -> _ItemRow:
        require_workspace(workspace_id, "items")
        row = self.items.get(item_id)
        if row is None or row.item.workspace_id != workspace_id or not row.live:
            raise NotFound("item not found")
        return row

    def live_items(self, workspace_id: str) -> builtins.list[Item]:
        require_workspace(workspace_id, "items")
        return [
            r.item for r in self.items.values() if r.live and r.item.workspace_id == workspace_id
        ]

    def update_item(
        self, workspace_id: str, item_id: str, now: datetime, **changes: Any
    ) -> _ItemRow:
        """Change a live item (``NotFound`` when it is gone), stamping ``updated_at``."""
        with self.lock:
            row = self.live_item(workspace_id, item_id)
            structure = changes.pop("structure", row.structure)
            new = replace(
                row, item=replace(row.item, updated_at=now, **changes), structure=structure
            )
            self.items[item_id] = new
            return new

    def set_item_status(
        self,
        workspace_id: str,
        item_id: str,
        status: ItemStatus,
        now: datetime,
        *,
        error: str | None = None,
        failed_stage: str | None = None,
    ) -> None:
        """An error and failed stage only with ``failed``; any other status clears them."""
        failed = status is ItemStatus.FAILED
        self.update_item(
            workspace_id,
            item_id,
            now,
            status=status,
            error=error if failed else None,
            failed_stage=failed_stage if failed else None,
        )

    def store_parsed(
        self,
        workspace_id: str,
        item_id: str,
        now: datetime,
        *,
        text: str,
        structure: dict[str, Any],
        title: str | None,
    ) -> None:
        changes: dict[str, Any] = {"text": text, "structure": copy.deepcopy(structure)}
        if title is not None:
            changes["title"] = title
        self.update_item(workspace_id, item_id, now, **changes)

    # ------------------------------------------------------------ chunks
    def chunks_of(self, workspace_id: str, item_id: str) -> builtins.list[Chunk]:
        require_workspace(workspace_id, "chunks")
        found = [
            c
            for c in self.chunks.values()
            if c.workspace_id == workspace_id and c.item_id == item_id
        ]
        return sorted(found, key=lambda c: c.sequence)

    def replace_chunks(
        self, workspace_id: str, item_id: str, new: Sequence[Chunk], now: datetime
    ) -> None:
        """The item's chunks become exactly ``new``; its ``chunk_count`` follows."""
        for c in new:
            if c.workspace_id != workspace_id or c.item_id != item_id:
                raise ValueError("chunk does not belong to the item being replaced")
        with self.transaction():
            self.update_item(workspace_id, item_id, now, chunk_count=len(new))
            for old in self.chunks_of(workspace_id, item_id):
                del self.chunks[old.id]
            sequences: set[int] = set()
            for c in new:
                # SQL raises its driver's IntegrityError here (pk_chunks, or the sequence
                # constraint); the fake says which key in the domain's terms.
                if c.id in self.chunks:
                    raise DuplicateKey(
                        "a chunk with this id already exists", constraint="pk_chunks"
                    )
                if c.sequence in sequences:
                    raise DuplicateKey(
                        "two chunks of the item have the same sequence",
                        constraint="uq_chunks_workspace_id_item_id_sequence",
                    )
                sequences.add(c.sequence)
                self.chunks[c.id] = c

    def stamp(
        self,
        workspace_id: str,
        chunk_ids: Sequence[str],
        model: str,
        *,
        item_id: str | None = None,
    ) -> int:
        require_workspace(workspace_id, "chunks")
        stamped = 0
        with self.lock:
            for chunk_id in set(chunk_ids):
                c = self.chunks.get(chunk_id)
                if c is None or c.workspace_id != workspace_id:
                    continue
                if item_id is not None and c.item_id != item_id:
                    continue
                self.chunks[chunk_id] = replace(c, embedding_model=model)
                stamped += 1
        return stamped

    # ------------------------------------------------------------ runs
    def insert_run(self, run: ProcessingRun) -> None:
        require_workspace(run.workspace_id, "processing_runs")
        with self.lock:
            if run.id in self.runs:
                raise DuplicateKey(
                    "a run with this id already exists", constraint="pk_processing_runs"
                )
            self.runs[run.id] = _run_out(run)

    # ------------------------------------------------------------ jobs
    def pending_twin(self, key: str | None, *, other_than: str | None = None) -> Job | None:
        if key is None:
            return None
        for job in self.jobs.values():
            if (
                job.idempotency_key == key
                and job.status is JobStatus.PENDING
                and job.id != other_than
            ):
                return job
        return None

    def insert_pending(self, job: Job) -> bool:
        """Store ``job`` as a new pending job; False when a pending job already has its key."""
        if job.workspace_id is not None:
            require_workspace(job.workspace_id, "jobs")
        with self.lock:
            if self.pending_twin(job.idempotency_key) is not None:
                return False
            if job.id in self.jobs:
                raise DuplicateKey("a job with this id already exists", constraint="pk_jobs")
            self.jobs[job.id] = replace(
                _job_out(job),
                status=JobStatus.PENDING,
                attempts=0,
                lease_owner=None,
                lease_expires_at=None,
                last_error=None,
                started_at=None,
                finished_at=None,
            )
            return True

    def running(self, job_id: str, owner: str) -> Job:
        """The running job leased to ``owner``; ``LeaseLost`` otherwise."""
        job = self.jobs.get(job_id)
        if job is None or job.status is not JobStatus.RUNNING or job.lease_owner != owner:
            raise LeaseLost(_LEASE_LOST)
        return job

    def settle(self, job: Job, **changes: Any) -> Job:
        new = replace(job, **changes)
        self.jobs[job.id] = new
        return _job_out(new)

    def succeed(self, job_id: str, owner: str, now: datetime) -> Job:
        with self.lock:
            job = self.running(job_id, owner)
            return self.settle(
                job, status=JobStatus.SUCCEEDED, lease_expires_at=None, finished_at=now
            )

    def back_to_pending(
        self, job: Job, now: datetime, run_after: datetime, error: str | None
    ) -> Job:
        """Running -> pending, or -> cancelled when a pending twin holds the key."""
        if self.pending_twin(job.idempotency_key, other_than=job.id) is not None:
            return self.settle(
                job,
                status=JobStatus.CANCELLED,
                lease_expires_at=None,
                last_error=SUPERSEDED,
                finished_at=now,
            )
        return self.settle(
            job,
            status=JobStatus.PENDING,
            lease_owner=None,
            lease_expires_at=None,
            run_after=run_after,
            last_error=error[:_ERROR_LEN] if error else None,
        )


class MemoryItemRepository:
    """``ItemRepository`` on a ``MemoryStore`` (``SqlItemRepository``'s behaviour)."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def create(self, item: Item) -> Item:
        require_workspace(item.workspace_id, "items")
        with self._store.lock:
            self._check_new(item, self._live_hashes(item.workspace_id))
            self._insert(item)
        return item

    def create_many(self, items: Sequence[Item]) -> None:
        """All of them, or (``DuplicateItem``, existing id unknown) none."""
        for item in items:
            require_workspace(item.workspace_id, "items")
        with self._store.transaction():
            for item in items:
                try:
                    self._check_new(item, self._live_hashes(item.workspace_id))
                except DuplicateItem as exc:
                    exc.existing_id = None
                    raise
                self._insert(item)

    def get(self, workspace_id: str, item_id: str) -> Item:
        return _item_out(self._store.live_item(workspace_id, item_id).item)

    def get_many(
        self, workspace_id: str, item_ids: Sequence[str], *, with_text: bool = True
    ) -> list[Item]:
        """The live items among ``item_ids``, in the order given."""
        with self._store.lock:
            by_id = {i.id: i for i in self._store.live_items(workspace_id)}
        return [_item_out(by_id[i], with_text=with_text) for i in item_ids if i in by_id]

    def filter_live(
        self,
        workspace_id: str,
        item_ids: Sequence[str],
        *,
        source_type: str | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
    ) -> set[str]:
        wanted = set(item_ids)
        with self._store.lock:
            return {
                i.id
                for i in self._store.live_items(workspace_id)
                if i.id in wanted and _passes(i, source_type, created_from, created_to)
            }

    def find_by_content_hash(self, workspace_id: str, content_hash: str) -> Item | None:
        with self._store.lock:
            for item in self._store.live_items(workspace_id):
                if item.content_hash == content_hash and not item.deliberate_duplicate:
                    return _item_out(item)
        return None

    def find_by_content_hashes(
        self, workspace_id: str, content_hashes: Sequence[str]
    ) -> dict[str, str]:
        wanted = set(content_hashes)
        with self._store.lock:
            live = self._live_hashes(workspace_id)
        return {h: item_id for h, item_id in live.items() if h in wanted}

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
        """Newest ingested first (then by id)."""
        wanted = (contains or "").lower()
        among = None if item_ids is None else set(item_ids)
        with self._store.lock:
            found = [
                i
                for i in self._store.live_items(workspace_id)
                if _passes(i, source_type, created_from, created_to, status)
                and (among is None or i.id in among)
                and (
                    not wanted
                    or any(wanted in (s or "").lower() for s in (i.title, i.original_filename))
                )
            ]
        found.sort(key=lambda i: i.id)
        found.sort(key=lambda i: i.ingested_at, reverse=True)
        return [_item_out(i) for i in _page(found, limit, offset)]

    def count(self, workspace_id: str) -> int:
        with self._store.lock:
            return len(self._store.live_items(workspace_id))

    def set_status(
        self,
        workspace_id: str,
        item_id: str,
        status: ItemStatus,
        *,
        error: str | None = None,
        failed_stage: str | None = None,
    ) -> None:
        self._store.set_item_status(
            workspace_id,
            item_id,
            status,
            self._store.clock.now(),
            error=error,
            failed_stage=failed_stage,
        )

    def list_failed(
        self, workspace_id: str, *, stage: str | None = None, limit: int
    ) -> builtins.list[Item]:
        """Oldest first, without their text."""
        with self._store.lock:
            found = [i for i in self._store.live_items(workspace_id) if _failed_at(i, stage)]
        found.sort(key=lambda i: (i.ingested_at, i.id))
        return [_item_out(i, with_text=False) for i in _page(found, limit, 0)]

    def set_text(self, workspace_id: str, item_id: str, text: str) -> None:
        self._store.update_item(workspace_id, item_id, self._store.clock.now(), text=text)

    def set_details(
        self, workspace_id: str, item_id: str, *, title: str, metadata: dict[str, str]
    ) -> Item:
        now = self._store.clock.now()
        row = self._store.update_item(
            workspace_id, item_id, now, title=title, metadata=dict(metadata)
        )
        return _item_out(row.item)

    def set_original_path(self, workspace_id: str, item_id: str, path: str) -> None:
        self._store.update_item(workspace_id, item_id, self._store.clock.now(), original_path=path)

    def get_parsed(self, workspace_id: str, item_id: str) -> tuple[Item, dict[str, Any] | None]:
        """The live item with its stored structure (None before the parse stage ran)."""
        with self._store.lock:
            row = self._store.live_item(workspace_id, item_id)
        return _item_out(row.item), copy.deepcopy(row.structure)

    def status_counts(self, workspace_id: str, item_ids: Sequence[str]) -> dict[str, int]:
        wanted = set(item_ids)
        with self._store.lock:
            statuses = [
                i.status.value for i in self._store.live_items(workspace_id) if i.id in wanted
            ]
        return dict(Counter(statuses))

    def find_named(
        self,
        workspace_id: str,
        *,
        titles: Sequence[str] = (),
        filenames: Sequence[str] = (),
        exclude_item: str | None = None,
        limit: int = 50,
    ) -> builtins.list[Item]:
        """Titles by ``title_key``, file names exactly, blanks ignored; oldest first,
        without their text."""
        keys = {k for k in (title_key(t) for t in titles) if k}
        names = {f for f in filenames if f and f.strip()}
        with self._store.lock:
            found = [
                i
                for i in self._store.live_items(workspace_id)
                if i.id != exclude_item
                and (title_key(i.title) in keys or i.original_filename in names)
            ]
        found.sort(key=lambda i: (i.ingested_at, i.id))
        return [_item_out(i, with_text=False) for i in _page(found, limit, 0)]

    def mark_deleted(self, workspace_id: str, item_id: str) -> Item:
        """Hide the item from every read at once (its content hash is free again); the row
        goes with ``delete``. Returns the item as it was."""
        now = self._store.clock.now()
        with self._store.lock:
            row = self._store.live_item(workspace_id, item_id)
            self._store.items[item_id] = replace(
                row, item=replace(row.item, updated_at=now), deleted_at=now
            )
        return _item_out(row.item)

    def delete(self, workspace_id: str, item_id: str) -> None:
        """Remove the item (live or marked deleted) with its chunks and runs."""
        require_workspace(workspace_id, "items")
        store = self._store
        with store.lock:
            row = store.items.get(item_id)
            if row is None or row.item.workspace_id != workspace_id:
                raise NotFound("item not found")
            del store.items[item_id]
            for table in (store.chunks, store.runs):
                for key in [k for k, v in table.items() if v.item_id == item_id]:
                    del table[key]

    # ------------------------------------------------------------ helpers
    def _live_hashes(self, workspace_id: str) -> dict[str, str]:
        """Content hash -> id of the live, non-deliberate item holding it."""
        return {
            i.content_hash: i.id
            for i in self._store.live_items(workspace_id)
            if not i.deliberate_duplicate
        }

    def _check_new(self, item: Item, live_hashes: dict[str, str]) -> None:
        """The unique keys of ``items``: the id, and live non-deliberate content."""
        if item.id in self._store.items:
            raise DuplicateKey("an item with this id already exists", constraint="pk_items")
        if not item.deliberate_duplicate and item.content_hash in live_hashes:
            raise DuplicateItem(
                "an item with the same content already exists",
                existing_id=live_hashes[item.content_hash],
            )

    def _insert(self, item: Item) -> None:
        # Created items carry no error yet: the SQL insert does not write those columns.
        self._store.items[item.id] = _ItemRow(
            replace(_item_out(item), error=None, failed_stage=None)
        )


class MemoryChunkRepository:
    """``ChunkRepository`` on a ``MemoryStore`` (``SqlChunkRepository``'s behaviour): reads
    by item or id do not look at the item's liveness; the embedding reads do."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def replace_for_item(self, workspace_id: str, item_id: str, chunks: Sequence[Chunk]) -> None:
        self._store.replace_chunks(workspace_id, item_id, chunks, self._store.clock.now())

    def list_for_item(self, workspace_id: str, item_id: str) -> list[Chunk]:
        with self._store.lock:
            return self._store.chunks_of(workspace_id, item_id)

    def get_many(self, workspace_id: str, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The chunks among ``chunk_ids`` of this workspace, in the order given."""
        require_workspace(workspace_id, "chunks")
        with self._store.lock:
            found = [self._store.chunks.get(i) for i in chunk_ids]
        return [c for c in found if c is not None and c.workspace_id == workspace_id]

    def count(self, workspace_id: str) -> int:
        return sum(self.count_by_embedding_model(workspace_id).values())

    def list_to_embed(self, workspace_id: str, item_id: str) -> list[ChunkToEmbed]:
        with self._store.lock:
            item = self._store.live_item(workspace_id, item_id).item
            found = self._store.chunks_of(workspace_id, item_id)
        return [_to_embed(c, item) for c in found]

    def list_unembedded(self, workspace_id: str, model: str, *, limit: int) -> list[ChunkToEmbed]:
        """Up to ``limit`` chunks of live items not embedded with ``model`` (in no promised
        order; here by item and sequence)."""
        with self._store.lock:
            live = {i.id: i for i in self._store.live_items(workspace_id)}
            found = [
                c
                for c in self._store.chunks.values()
                if c.workspace_id == workspace_id
                and c.item_id in live
                and c.embedding_model != model
            ]
        found.sort(key=lambda c: (c.item_id, c.sequence))
        return [_to_embed(c, live[c.item_id]) for c in found[: max(1, limit)]]

    def set_embedding_model(self, workspace_id: str, chunk_ids: Sequence[str], model: str) -> int:
        return self._store.stamp(workspace_id, chunk_ids, model)

    def count_by_embedding_model(self, workspace_id: str) -> dict[str | None, int]:
        require_workspace(workspace_id, "chunks")
        with self._store.lock:
            return dict(
                Counter(
                    c.embedding_model
                    for c in self._store.chunks.values()
                    if c.workspace_id == workspace_id
                )
            )

    def clear_embedding_model(self, workspace_id: str) -> int:
        require_workspace(workspace_id, "chunks")
        cleared = 0
        with self._store.lock:
            for c in list(self._store.chunks.values()):
                if c.workspace_id == workspace_id and c.embedding_model is not None:
                    self._store.chunks[c.id] = replace(c, embedding_model=None)
                    cleared += 1
        return cleared


def _to_embed(chunk: Chunk, item: Item) -> ChunkToEmbed:
    return ChunkToEmbed(chunk, item.title, item.source_type.value, _date(item))


class MemoryProcessingRunRepository:
    """``ProcessingRunRepository`` on a ``MemoryStore``: the history the unit of work adds to."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def add(self, run: ProcessingRun) -> ProcessingRun:
        self._store.insert_run(run)
        return run

    def finish(
        self,
        workspace_id: str,
        run_id: str,
        *,
        outcome: str,
        finished_at: datetime,
        details: dict[str, object] | None = None,
        error: str | None = None,
    ) -> None:
        require_workspace(workspace_id, "processing_runs")
        with self._store.lock:
            run = self._store.runs.get(run_id)
            if run is None or run.workspace_id != workspace_id:
                raise NotFound("processing run not found")
            changes: dict[str, Any] = {
                "outcome": outcome,
                "finished_at": finished_at,
                "error": error,
            }
            if details is not None:
                changes["details"] = copy.deepcopy(details)
            self._store.runs[run_id] = replace(run, **changes)

    def list_for_item(self, workspace_id: str, item_id: str) -> list[ProcessingRun]:
        require_workspace(workspace_id, "processing_runs")
        with self._store.lock:
            found = [
                r
                for r in self._store.runs.values()
                if r.workspace_id == workspace_id and r.item_id == item_id
            ]
        found.sort(key=lambda r: (r.started_at, r.id))
        return [_run_out(r) for r in found]


class MemoryJobRepository:
    """``JobRepository`` on a ``MemoryStore`` (``SqlJobRepository``'s behaviour)."""

    def __init__(self, store: MemoryStore | None = None) -> None:
        self._store = store or MemoryStore()

    def enqueue(self, job: Job, *, durable: bool = True) -> Job:
        """Store a pending job, or return the pending job that already has its key."""
        store = self._store
        with store.lock:
            if store.insert_pending(job):
                return _job_out(store.jobs[job.id])
            twin = store.pending_twin(job.idempotency_key)
            assert twin is not None  # insert_pending found it under the same lock
            if twin.workspace_id != job.workspace_id:
                raise DuplicateKey(
                    "idempotency key is in use by another workspace", constraint=_PENDING_KEY_INDEX
                )
            return _job_out(twin)

    def get(self, workspace_id: str, job_id: str) -> Job:
        require_workspace(workspace_id, "jobs")
        with self._store.lock:
            job = self._store.jobs.get(job_id)
        if job is None or job.workspace_id != workspace_id:
            raise NotFound("job not found")
        return _job_out(job)

    def list(
        self,
        workspace_id: str,
        *,
        status: JobStatus | None = None,
        kind: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Job]:
        """Newest first (then by id)."""
        require_workspace(workspace_id, "jobs")
        with self._store.lock:
            found = [
                j
                for j in self._store.jobs.values()
                if j.workspace_id == workspace_id
                and (status is None or j.status is status)
                and (kind is None or j.kind == kind)
            ]
        found.sort(key=lambda j: j.id)
        found.sort(key=lambda j: j.created_at, reverse=True)
        return [_job_out(j) for j in _page(found, limit, offset)]

    def claim(self, owner: str, now: datetime, lease_until: datetime) -> Job | None:
        """Lease the next due pending job: priority first, then run_after, created_at, id."""
        store = self._store
        with store.lock:
            due = [
                j
                for j in store.jobs.values()
                if j.status is JobStatus.PENDING and j.run_after <= now
            ]
            if not due:
                return None
            job = min(due, key=lambda j: (-j.priority, j.run_after, j.created_at, j.id))
            return store.settle(
                job,
                status=JobStatus.RUNNING,
                lease_owner=owner,
                lease_expires_at=lease_until,
                attempts=job.attempts + 1,
                started_at=now,
            )

    def renew(self, job_id: str, owner: str, lease_until: datetime, now: datetime) -> None:
        with self._store.lock:
            self._store.settle(self._store.running(job_id, owner), lease_expires_at=lease_until)

    def succeed(self, job_id: str, owner: str, now: datetime) -> Job:
        return self._store.succeed(job_id, owner, now)

    def fail(self, job_id: str, owner: str, now: datetime, error: str) -> Job:
        with self._store.lock:
            return self._store.settle(
                self._store.running(job_id, owner),
                status=JobStatus.FAILED,
                lease_expires_at=None,
                last_error=error[:_ERROR_LEN],
                finished_at=now,
            )

    def reschedule(
        self, job_id: str, owner: str, now: datetime, run_after: datetime, error: str
    ) -> Job:
        with self._store.lock:
            return self._store.back_to_pending(
                self._store.running(job_id, owner), now, run_after, error
            )

    def has_outstanding(self, workspace_id: str, *, kind: str | None = None) -> bool:
        require_workspace(workspace_id, "jobs")
        with self._store.lock:
            return any(
                j.workspace_id == workspace_id
                and j.status in (JobStatus.PENDING, JobStatus.RUNNING)
                and (kind is None or j.kind == kind)
                for j in self._store.jobs.values()
            )

    def release_expired(self, now: datetime, *, limit: int = 100) -> builtins.list[Job]:
        """Running jobs whose lease expired go back to pending, or fail once their attempt
        budget is spent; the earliest-expired first."""
        store = self._store
        released: builtins.list[Job] = []
        with store.lock:
            expired = [
                j
                for j in store.jobs.values()
                if j.status is JobStatus.RUNNING
                and j.lease_expires_at is not None
                and j.lease_expires_at < now
            ]
            expired.sort(key=lambda j: j.lease_expires_at or now)
            for job in expired[: max(1, limit)]:
                if job.attempts >= job.max_attempts:
                    released.append(
                        store.settle(
                            job,
                            status=JobStatus.FAILED,
                            lease_expires_at=None,
                            last_error=(
                                f"lease expired on attempt {job.attempts} of "
                                f"{job.max_attempts} (worker lost); attempt budget spent"
                            ),
                            finished_at=now,
                        )
                    )
                else:
                    released.append(store.back_to_pending(job, now, now, job.last_error))
        return released


class MemoryStageTransaction:
    """``StageTransaction`` on a ``MemoryStore``, inside ``MemoryUnitOfWork.begin``."""

    def __init__(self, store: MemoryStore, workspace_id: str, now: datetime) -> None:
        self._store = store
        self._ws = workspace_id
        self._now = now
        self.open = True

    def store_parsed(
        self, item_id: str, *, text: str, structure: dict[str, Any], title: str | None
    ) -> None:
        self._check_open()
        self._store.store_parsed(
            self._ws, item_id, self._now, text=text, structure=structure, title=title
        )

    def replace_chunks(self, item_id: str, chunks: Sequence[Chunk]) -> None:
        self._check_open()
        self._store.replace_chunks(self._ws, item_id, chunks, self._now)

    def stamp_embedding_model(self, item_id: str, chunk_ids: Sequence[str], model: str) -> int:
        self._check_open()
        return self._store.stamp(self._ws, chunk_ids, model, item_id=item_id)

    def replace_entities(
        self,
        item_id: str,
        mentions: Sequence[ObservedMention],
        aliases: Sequence[ProposedAlias],
    ) -> int:
        """``NotFound`` when the item is gone, as on SQL; otherwise refused: the fakes hold
        no entities (their identity, counts and alias decisions live in SQL only), so a
        test of the entity stage runs on a database."""
        self._check_open()
        self._store.live_item(self._ws, item_id)
        raise NotImplementedError("the in-memory fakes do not store entities: use SQL")

    def replace_claims(self, item_id: str, claims: Sequence[Claim]) -> None:
        """As ``replace_entities``: the fakes hold no claims; a claims test uses SQL."""
        self._check_open()
        self._store.live_item(self._ws, item_id)
        raise NotImplementedError("the in-memory fakes do not store claims: use SQL")

    def claims_written_after(
        self, after: int, subjects: Sequence[str], *, exclude_item: str, limit: int
    ) -> list[Claim]:
        self._check_open()
        raise NotImplementedError("the in-memory fakes do not store claims: use SQL")

    def repeats_written_after(
        self, after: int, keys: Sequence[str], *, exclude_item: str, limit: int
    ) -> list[Claim]:
        self._check_open()
        raise NotImplementedError("the in-memory fakes do not store claims: use SQL")

    def items_claims_written_after(
        self, after: int, item_ids: Sequence[str], *, exclude_item: str, limit: int
    ) -> list[Claim]:
        self._check_open()
        raise NotImplementedError("the in-memory fakes do not store claims: use SQL")

    def record_contradictions(self, found: Sequence[FoundContradiction]) -> int:
        self._check_open()
        raise NotImplementedError("the in-memory fakes hold no contradiction ledger: use SQL")

    def replace_relationships(
        self,
        item_id: str,
        proposed: Sequence[ProposedRelationship],
        drop: Sequence[str],
    ) -> int:
        """As ``replace_claims``: the fakes hold no relationships; a relationships test
        uses SQL."""
        self._check_open()
        self._store.live_item(self._ws, item_id)
        raise NotImplementedError("the in-memory fakes do not store relationships: use SQL")

    def add_run(self, run: ProcessingRun) -> None:
        self._own(run.workspace_id)
        self._store.insert_run(run)

    def set_item_status(
        self,
        item_id: str,
        status: ItemStatus,
        *,
        error: str | None = None,
        failed_stage: str | None = None,
    ) -> None:
        self._check_open()
        self._store.set_item_status(
            self._ws, item_id, status, self._now, error=error, failed_stage=failed_stage
        )

    def create_items(self, items: Sequence[Item]) -> None:
        for item in items:
            self._own(item.workspace_id)
        MemoryItemRepository(self._store).create_many(items)

    def mark_deleted(self, item_ids: Sequence[str]) -> None:
        self._check_open()
        for item_id in item_ids:
            with contextlib.suppress(NotFound):
                MemoryItemRepository(self._store).mark_deleted(self._ws, item_id)

    def replace_attachments(self, message_id: str, attachments: Sequence[Attachment]) -> None:
        self._check_open()
        raise NotImplementedError("the in-memory fakes hold no attachments: use SQL")

    def switch_version(self, version: ItemVersion) -> None:
        """The item takes the version's content, its text and chunks gone, as on SQL (the
        fakes keep no version history: that is SQL's)."""
        self._own(version.workspace_id)
        self._store.update_item(
            self._ws,
            version.item_id,
            self._now,
            content_hash=version.sha256,
            size_bytes=version.size_bytes,
            source_type=version.source_type,
            original_path=version.original_path,
            original_filename=version.filename,
            media_type=version.media_type,
            text=None,
            structure=None,
        )
        self._store.replace_chunks(self._ws, version.item_id, [], self._now)

    def enqueue(self, job: Job) -> Job:
        """The job as given when stored; else the latest job with its key (as SQL does)."""
        self._own(job.workspace_id)
        if self._store.insert_pending(job) or job.idempotency_key is None:
            return job
        same_key = [
            j for j in self._store.jobs.values() if j.idempotency_key == job.idempotency_key
        ]
        return _job_out(max(same_key, key=lambda j: j.created_at))

    def complete_job(self, job_id: str, owner: str, now: datetime) -> None:
        self._check_open()
        self._store.succeed(job_id, owner, now)

    def _own(self, workspace_id: str | None) -> None:
        self._check_open()
        if workspace_id != self._ws:
            raise MissingWorkspace("a record of another workspace in this unit of work")

    def _check_open(self) -> None:
        if not self.open:
            raise RuntimeError("the unit of work has ended: its transaction is closed")


class MemoryUnitOfWork:
    """``UnitOfWork`` on a ``MemoryStore``: the block's writes apply together or not at all."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    @contextmanager
    def begin(self, workspace_id: str, *, durable: bool = True) -> Iterator[MemoryStageTransaction]:
        if not workspace_id:
            raise MissingWorkspace("a unit of work needs a workspace")
        with self._store.transaction():
            tx = MemoryStageTransaction(self._store, workspace_id, self._store.clock.now())
            try:
                yield tx
            finally:
                tx.open = False

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        yield  # no read transactions to share: reads go straight to the dictionaries


@dataclass(frozen=True, slots=True)
class MemoryRepositories:
    """Every fake on one store, for a service test to pick from."""

    store: MemoryStore
    items: MemoryItemRepository
    chunks: MemoryChunkRepository
    runs: MemoryProcessingRunRepository
    jobs: MemoryJobRepository
    unit_of_work: MemoryUnitOfWork

    @classmethod
    def build(cls, clock: Clock | None = None) -> MemoryRepositories:
        store = MemoryStore(clock)
        return cls(
            store=store,
            items=MemoryItemRepository(store),
            chunks=MemoryChunkRepository(store),
            runs=MemoryProcessingRunRepository(store),
            jobs=MemoryJobRepository(store),
            unit_of_work=MemoryUnitOfWork(store),
        )
