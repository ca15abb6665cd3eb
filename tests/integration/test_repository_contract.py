"""One contract suite for the item, chunk, processing-run and job repositories and the
pipeline's unit of work, run on the in-memory fakes (``tests/support/memory.py``), on the SQL
adapters over SQLite and on the SQL adapters over PostgreSQL.

Each test states a port's documented behaviour (``relata.domain.ports`` and the adapters'
docstrings); where a port leaves something unsaid, the SQL adapters are the reference the
fakes follow. The SQL databases are migrated once per module and emptied before each test.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from relata.domain.clock import ManualClock
from relata.domain.errors import (
    DuplicateItem,
    DuplicateKey,
    LeaseLost,
    MissingWorkspace,
    NotFound,
    RelataError,
)
from relata.domain.models import (
    Chunk,
    Item,
    ItemStatus,
    Job,
    JobStatus,
    ProcessingRun,
    SourceType,
    Workspace,
)
from relata.domain.ports import (
    ChunkRepository,
    ItemRepository,
    JobRepository,
    ProcessingRunRepository,
    StageTransaction,
    UnitOfWork,
)
from relata.domain.vocabulary import RunOutcome
from relata.ids import chunk_id, content_hash, new_id
from relata.storage.sql.accounts import SqlWorkspaceRepository
from relata.storage.sql.chunks import SqlChunkRepository
from relata.storage.sql.engine import Database
from relata.storage.sql.items import SqlItemRepository
from relata.storage.sql.jobs import SUPERSEDED, SqlJobRepository
from relata.storage.sql.records import SqlProcessingRunRepository
from relata.storage.sql.tables import metadata
from relata.storage.sql.unit_of_work import SqlUnitOfWork
from tests.support.databases import Templates
from tests.support.memory import (
    MemoryChunkRepository,
    MemoryItemRepository,
    MemoryJobRepository,
    MemoryProcessingRunRepository,
    MemoryRepositories,
    MemoryStageTransaction,
    MemoryUnitOfWork,
)

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=30)
BLANKS = ("", "   ")


@dataclass(frozen=True, slots=True)
class Ports:
    """One implementation of every port under test, on one store, with two workspaces."""

    backend: str
    clock: ManualClock
    items: ItemRepository
    chunks: ChunkRepository
    runs: ProcessingRunRepository
    jobs: JobRepository
    uow: UnitOfWork
    ws: str
    other: str


def _fakes_as_ports(
    fakes: MemoryRepositories,
) -> tuple[ItemRepository, ChunkRepository, ProcessingRunRepository, JobRepository, UnitOfWork]:
    """mypy checks here that each fake is its port; the tests below check the behaviour."""
    return fakes.items, fakes.chunks, fakes.runs, fakes.jobs, fakes.unit_of_work


def _transaction_as_port(tx: MemoryStageTransaction) -> StageTransaction:
    return tx


@pytest.mark.parametrize(
    ("port", "fake"),
    [
        (ItemRepository, MemoryItemRepository),
        (ChunkRepository, MemoryChunkRepository),
        (ProcessingRunRepository, MemoryProcessingRunRepository),
        (JobRepository, MemoryJobRepository),
        (StageTransaction, MemoryStageTransaction),
        (UnitOfWork, MemoryUnitOfWork),
    ],
)
def test_each_fake_has_every_method_of_its_port_with_the_same_parameters(
    port: type, fake: type
) -> None:
    """The run-time half of ``_fakes_as_ports`` (``make test`` type-checks only ``src``): a
    method added to a port fails here until the fake has it too."""
    methods = [n for n, v in vars(port).items() if callable(v) and not n.startswith("_")]
    assert methods
    for name in methods:
        assert callable(getattr(fake, name, None)), f"{fake.__name__} lacks {name}"
        expected = inspect.signature(getattr(port, name)).parameters
        got = inspect.signature(getattr(fake, name)).parameters
        assert [(p.name, p.kind, p.default) for p in got.values()] == [
            (p.name, p.kind, p.default) for p in expected.values()
        ], f"{fake.__name__}.{name}"


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def sqlite_db(templates: Templates, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    with templates.migrated("sqlite", tmp_path_factory.mktemp("contract")) as db:
        yield db


@pytest.fixture(scope="module")
def postgresql_db(
    templates: Templates, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Database]:
    """One migrated PostgreSQL database for the module (a copy of the session's template)."""
    with templates.migrated("postgresql", tmp_path_factory.mktemp("contract-pg")) as db:
        yield db


def _empty(db: Database) -> None:
    with db.write() as conn:
        for table in reversed(metadata.sorted_tables):
            if table.name != "audit_events":  # append-only: the database refuses DELETE
                conn.execute(table.delete())


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def ports(request: pytest.FixtureRequest) -> Ports:
    clock = ManualClock(NOW)
    if request.param == "memory":
        items, chunks, runs, jobs, uow = _fakes_as_ports(MemoryRepositories.build(clock))
        return Ports("memory", clock, items, chunks, runs, jobs, uow, new_id(), new_id())
    db: Database = request.getfixturevalue(f"{request.param}_db")
    _empty(db)
    workspaces = SqlWorkspaceRepository(db)
    ws, other = (
        workspaces.create(Workspace(id=new_id(), slug=slug, name=slug, created_at=NOW)).id
        for slug in ("mine", "theirs")
    )
    return Ports(
        request.param,
        clock,
        SqlItemRepository(db, clock),
        SqlChunkRepository(db, clock),
        SqlProcessingRunRepository(db),
        SqlJobRepository(db),
        SqlUnitOfWork(db, clock),
        ws,
        other,
    )


# ------------------------------------------------------------------ builders
def _item(workspace_id: str, **changes: Any) -> Item:
    body = changes.pop("text", f"body {new_id()}")
    item = Item(
        id=new_id(),
        workspace_id=workspace_id,
        title="A title",
        source_type=SourceType.TEXT,
        content_hash=content_hash(body),
        size_bytes=len(body),
        ingested_at=NOW,
        text=body,
    )
    return replace(item, **changes)


def _chunks(item: Item, *texts: str, model: str | None = None) -> list[Chunk]:
    return [
        Chunk(
            id=chunk_id(item.workspace_id, item.id, i, content_hash(t)),
            workspace_id=item.workspace_id,
            item_id=item.id,
            sequence=i,
            text=t,
            content_hash=content_hash(t),
            start_offset=0,
            end_offset=len(t),
            heading_path=("Intro", f"part {i}"),
            page=i + 1,
            token_count=len(t.split()),
            embedding_model=model,
        )
        for i, t in enumerate(texts)
    ]


def _job(workspace_id: str | None, **changes: Any) -> Job:
    job = Job(
        id=new_id(),
        kind="test.work",
        status=JobStatus.PENDING,
        payload={"item_id": "x", "options": {"deep": [1, 2]}},
        priority=0,
        run_after=NOW,
        attempts=0,
        max_attempts=3,
        created_at=NOW,
        workspace_id=workspace_id,
    )
    return replace(job, **changes)


def _run(item: Item, stage: str = "parse", **changes: Any) -> ProcessingRun:
    run = ProcessingRun(
        id=new_id(),
        workspace_id=item.workspace_id,
        item_id=item.id,
        stage=stage,
        started_at=NOW,
        outcome=RunOutcome.SUCCEEDED,
        finished_at=NOW,
        versions={"parser": "1"},
        details={"generation": 1},
    )
    return replace(run, **changes)


def _claimed(p: Ports, owner: str, **changes: Any) -> Job:
    """Enqueue a job and claim it (it must be the only one due)."""
    job = p.jobs.enqueue(_job(p.ws, **changes))
    claimed = p.jobs.claim(owner, NOW, NOW + LEASE)
    assert claimed is not None and claimed.id == job.id
    return claimed


def _error(call: Callable[[], object]) -> tuple[type[RelataError], str, str] | None:
    """The domain error ``call`` raises (type, code, message), None when it raises none."""
    try:
        call()
    except RelataError as exc:
        return type(exc), exc.code, exc.message
    return None


def _raised(calls: Mapping[str, Callable[[], object]]) -> dict[str, type[RelataError] | None]:
    """Each call's domain error type (None when it raised none)."""
    found = {name: _error(call) for name, call in calls.items()}
    return {name: error[0] if error else None for name, error in found.items()}


def _all(calls: Mapping[str, Callable[[], object]], error: type[RelataError]) -> dict[str, Any]:
    return dict.fromkeys(calls, error)


def _transaction(p: Ports, write: Callable[[StageTransaction], object]) -> Callable[[], None]:
    def run() -> None:
        with p.uow.begin(p.ws) as tx:
            write(tx)

    return run


# ------------------------------------------------------------------ workspace scoping
def _calls_in(
    p: Ports, blank: str, item: Item, chunk_id_: str, run: ProcessingRun, job: Job
) -> dict[str, Callable[[], object]]:
    """A call of every method that takes a workspace, made in ``blank``."""
    return {
        "items.create": lambda: p.items.create(_item(blank)),
        "items.create_many": lambda: p.items.create_many([_item(blank)]),
        "items.get": lambda: p.items.get(blank, item.id),
        "items.get_many": lambda: p.items.get_many(blank, [item.id]),
        "items.get_many([])": lambda: p.items.get_many(blank, []),
        "items.find_by_content_hash": lambda: p.items.find_by_content_hash(
            blank, item.content_hash
        ),
        "items.find_by_content_hashes": lambda: p.items.find_by_content_hashes(
            blank, [item.content_hash]
        ),
        "items.list": lambda: p.items.list(blank, limit=10),
        "items.count": lambda: p.items.count(blank),
        "items.set_status": lambda: p.items.set_status(blank, item.id, ItemStatus.READY),
        "items.filter_live": lambda: p.items.filter_live(blank, [item.id]),
        "items.filter_live([])": lambda: p.items.filter_live(blank, []),
        "items.list_failed": lambda: p.items.list_failed(blank, limit=10),
        "items.set_text": lambda: p.items.set_text(blank, item.id, "changed"),
        "items.get_parsed": lambda: p.items.get_parsed(blank, item.id),
        "items.status_counts": lambda: p.items.status_counts(blank, [item.id]),
        "items.mark_deleted": lambda: p.items.mark_deleted(blank, item.id),
        "items.delete": lambda: p.items.delete(blank, item.id),
        "chunks.replace_for_item": lambda: p.chunks.replace_for_item(blank, item.id, []),
        "chunks.list_for_item": lambda: p.chunks.list_for_item(blank, item.id),
        "chunks.get_many": lambda: p.chunks.get_many(blank, [chunk_id_]),
        "chunks.get_many([])": lambda: p.chunks.get_many(blank, []),
        "chunks.count": lambda: p.chunks.count(blank),
        "chunks.list_to_embed": lambda: p.chunks.list_to_embed(blank, item.id),
        "chunks.list_unembedded": lambda: p.chunks.list_unembedded(blank, "m", limit=10),
        "chunks.set_embedding_model": lambda: p.chunks.set_embedding_model(blank, [chunk_id_], "m"),
        "chunks.count_by_embedding_model": lambda: p.chunks.count_by_embedding_model(blank),
        "chunks.clear_embedding_model": lambda: p.chunks.clear_embedding_model(blank),
        "runs.add": lambda: p.runs.add(replace(_run(item), workspace_id=blank)),
        "runs.finish": lambda: p.runs.finish(
            blank, run.id, outcome=RunOutcome.FAILED, finished_at=NOW
        ),
        "runs.list_for_item": lambda: p.runs.list_for_item(blank, item.id),
        "jobs.enqueue": lambda: p.jobs.enqueue(_job(blank)),
        "jobs.get": lambda: p.jobs.get(blank, job.id),
        "jobs.list": lambda: p.jobs.list(blank),
    }


def test_every_call_without_a_workspace_is_refused(ports: Ports) -> None:
    p = ports
    item = p.items.create(_item(p.ws))
    p.chunks.replace_for_item(p.ws, item.id, _chunks(item, "one"))
    cid = p.chunks.list_for_item(p.ws, item.id)[0].id
    item = p.items.get(p.ws, item.id)
    run = p.runs.add(_run(item))
    job = p.jobs.enqueue(_job(p.ws))
    for blank in BLANKS:
        calls = _calls_in(p, blank, item, cid, run, job)
        assert _raised(calls) == _all(calls, MissingWorkspace), f"workspace {blank!r}"
    with pytest.raises(MissingWorkspace), p.uow.begin(""):
        pass
    # None of the refused calls changed anything.
    assert p.items.get(p.ws, item.id) == item
    assert p.chunks.count_by_embedding_model(p.ws) == {None: 1}
    assert p.runs.list_for_item(p.ws, item.id) == [run]
    assert [j.id for j in p.jobs.list(p.ws)] == [job.id]


def test_another_workspaces_item_is_not_found_exactly_like_a_missing_one(ports: Ports) -> None:
    p = ports
    theirs = p.items.create(_item(p.other))
    p.chunks.replace_for_item(p.other, theirs.id, _chunks(theirs, "one"))
    theirs = p.items.get(p.other, theirs.id)

    def errors(item_id: str) -> dict[str, tuple[type[RelataError], str, str] | None]:
        calls: dict[str, Callable[[], object]] = {
            "items.get": lambda: p.items.get(p.ws, item_id),
            "items.get_parsed": lambda: p.items.get_parsed(p.ws, item_id),
            "items.set_status": lambda: p.items.set_status(p.ws, item_id, ItemStatus.READY),
            "items.set_text": lambda: p.items.set_text(p.ws, item_id, "changed"),
            "items.mark_deleted": lambda: p.items.mark_deleted(p.ws, item_id),
            "items.delete": lambda: p.items.delete(p.ws, item_id),
            "chunks.replace_for_item": lambda: p.chunks.replace_for_item(p.ws, item_id, []),
            "chunks.list_to_embed": lambda: p.chunks.list_to_embed(p.ws, item_id),
            "tx.store_parsed": _transaction(
                p, lambda tx: tx.store_parsed(item_id, text="t", structure={}, title=None)
            ),
            "tx.replace_chunks": _transaction(p, lambda tx: tx.replace_chunks(item_id, [])),
            "tx.set_item_status": _transaction(
                p, lambda tx: tx.set_item_status(item_id, ItemStatus.READY)
            ),
        }
        return {name: _error(call) for name, call in calls.items()}

    cross, missing = errors(theirs.id), errors(new_id())
    assert cross == missing
    assert {e[0] if e else None for e in cross.values()} == {NotFound}
    assert p.items.get(p.other, theirs.id) == theirs
    assert p.chunks.count(p.other) == 1


def test_reads_never_return_another_workspaces_records(ports: Ports) -> None:
    p = ports
    theirs = p.items.create(_item(p.other))
    p.items.set_status(p.other, theirs.id, ItemStatus.FAILED, error="x", failed_stage="parse")
    p.chunks.replace_for_item(p.other, theirs.id, _chunks(theirs, "one", "two"))
    cids = [c.id for c in p.chunks.list_for_item(p.other, theirs.id)]
    run = p.runs.add(_run(theirs))
    job = p.jobs.enqueue(_job(p.other))

    assert p.items.get_many(p.ws, [theirs.id]) == []
    assert p.items.filter_live(p.ws, [theirs.id]) == set()
    assert p.items.find_by_content_hash(p.ws, theirs.content_hash) is None
    assert p.items.find_by_content_hashes(p.ws, [theirs.content_hash]) == {}
    assert p.items.list(p.ws, limit=10) == []
    assert p.items.count(p.ws) == 0
    assert p.items.status_counts(p.ws, [theirs.id]) == {}
    assert p.items.list_failed(p.ws, limit=10) == []
    assert p.chunks.list_for_item(p.ws, theirs.id) == []
    assert p.chunks.get_many(p.ws, cids) == []
    assert p.chunks.count(p.ws) == 0
    assert p.chunks.count_by_embedding_model(p.ws) == {}
    assert p.chunks.list_unembedded(p.ws, "m", limit=10) == []
    assert p.chunks.set_embedding_model(p.ws, cids, "m") == 0
    assert p.chunks.clear_embedding_model(p.ws) == 0
    assert p.runs.list_for_item(p.ws, theirs.id) == []
    with pytest.raises(NotFound):
        p.runs.finish(p.ws, run.id, outcome=RunOutcome.FAILED, finished_at=NOW)
    with pytest.raises(NotFound):
        p.jobs.get(p.ws, job.id)
    assert p.jobs.list(p.ws) == []
    # Their records are as they were.
    assert p.chunks.count_by_embedding_model(p.other) == {None: 2}
    assert p.runs.list_for_item(p.other, theirs.id) == [run]
    assert p.jobs.get(p.other, job.id) == job


# ------------------------------------------------------------------ items
def test_a_created_item_reads_back_as_it_was_given(ports: Ports) -> None:
    p = ports
    item = _item(
        p.ws,
        title="Über «quotes»",
        source_type=SourceType.MARKDOWN,
        created_at=datetime(2020, 2, 3, 4, 5, 6, 789000, tzinfo=UTC),
        original_path="originals/x.md",
        original_filename="x.md",
        media_type="text/markdown",
        metadata={"author": "Ada", "lang": "en"},
        status=ItemStatus.PROCESSING,
        chunk_count=0,
    )
    assert p.items.create(item) == item
    got = p.items.get(p.ws, item.id)
    assert got == item
    got.metadata["author"] = "changed by the caller"
    assert p.items.get(p.ws, item.id).metadata == {"author": "Ada", "lang": "en"}
    assert p.items.get_parsed(p.ws, item.id) == (item, None)


def test_live_content_is_unique_per_workspace_unless_deliberately_duplicated(
    ports: Ports,
) -> None:
    p = ports
    first = p.items.create(_item(p.ws, text="same bytes"))
    with pytest.raises(DuplicateItem) as dup:
        p.items.create(_item(p.ws, text="same bytes"))
    assert dup.value.existing_id == first.id
    deliberate = p.items.create(_item(p.ws, text="same bytes", deliberate_duplicate=True))
    elsewhere = p.items.create(_item(p.other, text="same bytes"))
    assert p.items.count(p.ws) == 2 and p.items.count(p.other) == 1
    assert p.items.find_by_content_hash(p.ws, first.content_hash) == first
    assert p.items.find_by_content_hashes(p.ws, [first.content_hash, "0" * 64]) == {
        first.content_hash: first.id
    }
    # Deleting the live copy frees the content: the deliberate copy is never a match.
    p.items.mark_deleted(p.ws, first.id)
    assert p.items.find_by_content_hash(p.ws, first.content_hash) is None
    assert p.items.find_by_content_hashes(p.ws, [first.content_hash]) == {}
    again = p.items.create(_item(p.ws, text="same bytes"))
    assert p.items.find_by_content_hash(p.ws, first.content_hash) == again
    assert {deliberate.id, again.id} == {i.id for i in p.items.list(p.ws, limit=10)}
    assert p.items.get(p.other, elsewhere.id) == elsewhere


def test_an_item_id_is_never_reused(ports: Ports) -> None:
    p = ports
    item = p.items.create(_item(p.ws))
    with pytest.raises(DuplicateKey) as live:
        p.items.create(_item(p.ws, id=item.id))
    p.items.mark_deleted(p.ws, item.id)
    with pytest.raises(DuplicateKey) as marked:
        p.items.create(_item(p.ws, id=item.id))
    assert live.value.constraint == marked.value.constraint == "pk_items"


def test_create_many_inserts_all_of_the_items_or_none(ports: Ports) -> None:
    p = ports
    existing = p.items.create(
        _item(p.ws, text="already here", ingested_at=NOW + timedelta(hours=1))
    )
    batch = [_item(p.ws), _item(p.ws, text="already here"), _item(p.ws)]
    with pytest.raises(DuplicateItem):
        p.items.create_many(batch)
    twins = [_item(p.ws, text="twin"), _item(p.ws), _item(p.ws, text="twin")]
    with pytest.raises(DuplicateItem):
        p.items.create_many(twins)
    assert [i.id for i in p.items.list(p.ws, limit=10)] == [existing.id]
    good = [_item(p.ws, ingested_at=NOW - timedelta(minutes=m)) for m in range(3)]
    p.items.create_many(good)
    p.items.create_many([])
    assert [i.id for i in p.items.list(p.ws, limit=10)][1:] == [i.id for i in good]
    assert p.items.get_many(p.ws, [i.id for i in good]) == good


def test_get_many_keeps_the_given_order_and_drops_what_is_not_live_here(ports: Ports) -> None:
    p = ports
    a, b, gone = (p.items.create(_item(p.ws)) for _ in range(3))
    theirs = p.items.create(_item(p.other))
    p.items.mark_deleted(p.ws, gone.id)
    asked = [b.id, new_id(), a.id, gone.id, theirs.id]
    assert p.items.get_many(p.ws, asked) == [b, a]
    light = p.items.get_many(p.ws, asked, with_text=False)
    assert light == [replace(b, text=None), replace(a, text=None)]
    assert p.items.get_many(p.ws, []) == []


def test_list_is_newest_first_paged_and_filtered(ports: Ports) -> None:
    p = ports
    hour = timedelta(hours=1)
    oldest = p.items.create(_item(p.ws, ingested_at=NOW - 3 * hour))
    tie = sorted(
        (p.items.create(_item(p.ws, ingested_at=NOW - hour)) for _ in range(2)),
        key=lambda i: i.id,
    )
    newest = p.items.create(
        _item(p.ws, ingested_at=NOW, source_type=SourceType.MARKDOWN, created_at=NOW - 9 * hour)
    )
    gone = p.items.create(_item(p.ws, ingested_at=NOW + hour))
    p.items.mark_deleted(p.ws, gone.id)
    p.items.set_status(p.ws, tie[1].id, ItemStatus.READY)

    def ids(**kw: Any) -> list[str]:
        return [i.id for i in p.items.list(p.ws, **{"limit": 10, **kw})]

    everything = [newest.id, tie[0].id, tie[1].id, oldest.id]
    assert ids() == everything
    assert p.items.count(p.ws) == 4
    assert ids(limit=2) == everything[:2]
    assert ids(limit=2, offset=2) == everything[2:]
    assert ids(offset=-5) == everything
    assert ids(limit=0) == everything[:1]  # a page holds at least one item
    assert ids(offset=4) == []
    assert ids(source_type="markdown") == [newest.id]
    assert ids(status="ready") == [tie[1].id]
    # Dates bound the document's own date when known, else when it was ingested.
    assert ids(created_from=NOW - 2 * hour) == [tie[0].id, tie[1].id]
    assert ids(created_to=NOW - hour) == [newest.id, oldest.id]
    assert ids(created_from=NOW - 9 * hour, created_to=NOW - 3 * hour) == [newest.id]
    assert p.items.list(p.ws, limit=10)[0] == p.items.get(p.ws, newest.id)


def test_list_contains_matches_title_or_file_name_in_any_case_wildcards_literal(
    ports: Ports,
) -> None:
    p = ports
    hour = timedelta(hours=1)
    survey = p.items.create(
        _item(p.ws, title="Tidal Survey", original_filename="survey_100%.md", ingested_at=NOW)
    )
    report = p.items.create(
        _item(p.ws, title="Wind report", original_filename=None, ingested_at=NOW - hour)
    )
    slash = p.items.create(
        _item(p.ws, title="Back\\slash", original_filename="b.txt", ingested_at=NOW - 2 * hour)
    )
    p.items.create(_item(p.other, title="Tidal elsewhere"))
    gone = p.items.create(_item(p.ws, title="Tidal gone"))
    p.items.mark_deleted(p.ws, gone.id)

    def ids(contains: str, **kw: Any) -> list[str]:
        return [i.id for i in p.items.list(p.ws, contains=contains, **{"limit": 10, **kw})]

    assert ids("tidal") == [survey.id]  # the title, any case; live items of this workspace
    assert ids("REPORT") == [report.id]
    assert ids("100%") == [survey.id]  # the file name
    assert ids("%") == [survey.id]  # a literal %, not "anything"
    assert ids("_") == [survey.id]  # a literal _, not "one character"
    assert ids("\\") == [slash.id]
    assert ids("y_1") == [survey.id]
    assert ids("yx1") == []
    assert ids("") == [survey.id, report.id, slash.id]  # empty: no filter
    assert ids("r", status="pending", limit=1) == [survey.id]  # with the other filters, paged


def test_filter_live_keeps_the_live_items_passing_the_filters(ports: Ports) -> None:
    p = ports
    text = p.items.create(_item(p.ws, ingested_at=NOW - timedelta(days=2)))
    md = p.items.create(_item(p.ws, source_type=SourceType.MARKDOWN))
    gone = p.items.create(_item(p.ws))
    p.items.mark_deleted(p.ws, gone.id)
    theirs = p.items.create(_item(p.other))
    asked = [text.id, md.id, gone.id, theirs.id, new_id()]
    assert p.items.filter_live(p.ws, asked) == {text.id, md.id}
    assert p.items.filter_live(p.ws, asked, source_type="markdown") == {md.id}
    assert p.items.filter_live(p.ws, asked, created_from=NOW - timedelta(days=1)) == {md.id}
    assert p.items.filter_live(p.ws, asked, created_to=NOW) == {text.id}
    assert p.items.filter_live(p.ws, []) == set()


def test_set_status_keeps_an_error_and_the_failed_stage_only_while_failed(ports: Ports) -> None:
    p = ports
    item = p.items.create(_item(p.ws))
    p.clock.advance(60)
    p.items.set_status(
        p.ws, item.id, ItemStatus.FAILED, error="parse failed: x", failed_stage="parse"
    )
    failed = p.items.get(p.ws, item.id)
    assert (failed.status, failed.error, failed.failed_stage) == (
        ItemStatus.FAILED,
        "parse failed: x",
        "parse",
    )
    assert failed.updated_at == NOW + timedelta(seconds=60)
    p.items.set_status(p.ws, item.id, ItemStatus.READY, error="ignored", failed_stage="chunk")
    ready = p.items.get(p.ws, item.id)
    assert (ready.status, ready.error, ready.failed_stage) == (ItemStatus.READY, None, None)


def test_set_text_replaces_the_text_only(ports: Ports) -> None:
    p = ports
    item = p.items.create(_item(p.ws))
    p.clock.advance(5)
    p.items.set_text(p.ws, item.id, "new text")
    got = p.items.get(p.ws, item.id)
    assert got == replace(item, text="new text", updated_at=NOW + timedelta(seconds=5))


def test_status_counts_counts_the_given_live_items_by_status(ports: Ports) -> None:
    p = ports
    a, b, c, gone = (p.items.create(_item(p.ws)) for _ in range(4))
    p.items.set_status(p.ws, b.id, ItemStatus.READY)
    p.items.set_status(p.ws, c.id, ItemStatus.READY)
    p.items.set_status(p.ws, gone.id, ItemStatus.READY)
    p.items.mark_deleted(p.ws, gone.id)
    assert p.items.status_counts(p.ws, [a.id, b.id, c.id, gone.id, new_id()]) == {
        "pending": 1,
        "ready": 2,
    }
    assert p.items.status_counts(p.ws, [b.id]) == {"ready": 1}
    assert p.items.status_counts(p.ws, []) == {}


def test_list_failed_is_oldest_first_by_stage_and_without_text(ports: Ports) -> None:
    p = ports
    minute = timedelta(minutes=1)
    at_chunk = p.items.create(_item(p.ws, ingested_at=NOW - minute))
    at_parse = p.items.create(_item(p.ws, ingested_at=NOW - 2 * minute))
    later = p.items.create(_item(p.ws, ingested_at=NOW))
    fine = p.items.create(_item(p.ws, ingested_at=NOW - 3 * minute))
    gone = p.items.create(_item(p.ws, ingested_at=NOW - 4 * minute))
    for item, stage in (
        (at_chunk, "chunk"),
        (at_parse, "parse"),
        (later, "parse"),
        (gone, "parse"),
    ):
        p.items.set_status(p.ws, item.id, ItemStatus.FAILED, error="e", failed_stage=stage)
    p.items.mark_deleted(p.ws, gone.id)

    def ids(**kw: Any) -> list[str]:
        return [i.id for i in p.items.list_failed(p.ws, **{"limit": 10, **kw})]

    assert ids() == [at_parse.id, at_chunk.id, later.id]
    assert ids(stage="parse") == [at_parse.id, later.id]
    assert ids(stage="embed") == []
    assert ids(limit=1) == [at_parse.id]
    assert ids(limit=0) == [at_parse.id]
    first = p.items.list_failed(p.ws, limit=1)[0]
    assert first.text is None and first.failed_stage == "parse" and first.error == "e"
    assert fine.id not in ids()


def test_a_deleted_item_disappears_from_every_read_and_write(ports: Ports) -> None:
    p = ports
    item = p.items.create(_item(p.ws))
    p.chunks.replace_for_item(p.ws, item.id, _chunks(item, "one", "two"))
    before = p.items.get(p.ws, item.id)
    p.clock.advance(1)
    assert p.items.mark_deleted(p.ws, item.id) == before  # as it was

    assert p.items.get_many(p.ws, [item.id]) == []
    assert p.items.filter_live(p.ws, [item.id]) == set()
    assert p.items.find_by_content_hash(p.ws, item.content_hash) is None
    assert p.items.list(p.ws, limit=10) == [] and p.items.count(p.ws) == 0
    assert p.items.status_counts(p.ws, [item.id]) == {}
    assert p.chunks.list_unembedded(p.ws, "m", limit=10) == []
    gone: dict[str, Callable[[], object]] = {
        "get": lambda: p.items.get(p.ws, item.id),
        "get_parsed": lambda: p.items.get_parsed(p.ws, item.id),
        "set_status": lambda: p.items.set_status(p.ws, item.id, ItemStatus.READY),
        "set_text": lambda: p.items.set_text(p.ws, item.id, "x"),
        "mark_deleted": lambda: p.items.mark_deleted(p.ws, item.id),
        "replace_for_item": lambda: p.chunks.replace_for_item(p.ws, item.id, []),
        "list_to_embed": lambda: p.chunks.list_to_embed(p.ws, item.id),
    }
    assert _raised(gone) == _all(gone, NotFound)


def test_chunk_reads_by_item_or_id_do_not_check_the_items_liveness(ports: Ports) -> None:
    """Only the embedding reads look at liveness; search re-reads its hits through
    ``items.filter_live``. Between ``mark_deleted`` and ``delete`` the chunks are still there."""
    p = ports
    item = p.items.create(_item(p.ws))
    chunks = _chunks(item, "one", "two")
    p.chunks.replace_for_item(p.ws, item.id, chunks)
    p.items.mark_deleted(p.ws, item.id)
    assert p.chunks.list_for_item(p.ws, item.id) == chunks
    assert p.chunks.get_many(p.ws, [chunks[1].id]) == [chunks[1]]
    assert p.chunks.count(p.ws) == 2
    assert p.chunks.set_embedding_model(p.ws, [chunks[0].id], "m") == 1
    assert p.chunks.count_by_embedding_model(p.ws) == {"m": 1, None: 1}


def test_delete_removes_the_item_with_its_chunks_and_runs(ports: Ports) -> None:
    p = ports
    kept = p.items.create(_item(p.ws))
    p.chunks.replace_for_item(p.ws, kept.id, _chunks(kept, "kept"))
    kept_run = p.runs.add(_run(kept))
    for marked_first in (False, True):
        item = p.items.create(_item(p.ws))
        p.chunks.replace_for_item(p.ws, item.id, _chunks(item, "one", "two"))
        p.runs.add(_run(item))
        if marked_first:
            p.items.mark_deleted(p.ws, item.id)
        p.items.delete(p.ws, item.id)
        assert p.chunks.list_for_item(p.ws, item.id) == []
        assert p.runs.list_for_item(p.ws, item.id) == []
        with pytest.raises(NotFound):
            p.items.delete(p.ws, item.id)
        with pytest.raises(NotFound):
            p.items.get(p.ws, item.id)
    with pytest.raises(NotFound):
        p.items.delete(p.ws, new_id())
    assert p.chunks.count(p.ws) == 1
    assert p.runs.list_for_item(p.ws, kept.id) == [kept_run]


# ------------------------------------------------------------------ chunks
def test_replace_for_item_leaves_exactly_one_generation(ports: Ports) -> None:
    p = ports
    item = p.items.create(_item(p.ws))
    other = p.items.create(_item(p.ws))
    p.chunks.replace_for_item(p.ws, other.id, _chunks(other, "theirs"))
    first = _chunks(item, "one", "two", "three")
    p.chunks.replace_for_item(p.ws, item.id, list(reversed(first)))
    assert p.chunks.list_for_item(p.ws, item.id) == first  # by sequence
    assert p.items.get(p.ws, item.id).chunk_count == 3
    p.clock.advance(2)
    second = _chunks(item, "one", "changed")
    p.chunks.replace_for_item(p.ws, item.id, second)
    assert p.chunks.list_for_item(p.ws, item.id) == second
    assert p.chunks.get_many(p.ws, [c.id for c in first]) == [second[0]]  # unchanged id
    got = p.items.get(p.ws, item.id)
    assert (got.chunk_count, got.updated_at) == (2, NOW + timedelta(seconds=2))
    p.chunks.replace_for_item(p.ws, item.id, [])
    assert p.chunks.list_for_item(p.ws, item.id) == []
    assert p.items.get(p.ws, item.id).chunk_count == 0
    assert p.chunks.count(p.ws) == 1


def test_replace_for_item_refuses_chunks_of_another_item_and_changes_nothing(
    ports: Ports,
) -> None:
    p = ports
    item = p.items.create(_item(p.ws))
    other = p.items.create(_item(p.ws))
    kept = _chunks(item, "kept")
    p.chunks.replace_for_item(p.ws, item.id, kept)
    with pytest.raises(ValueError, match="does not belong"):
        p.chunks.replace_for_item(p.ws, item.id, _chunks(item, "a") + _chunks(other, "b"))
    with pytest.raises(ValueError, match="does not belong"):
        p.chunks.replace_for_item(p.ws, item.id, [replace(kept[0], workspace_id=p.other)])
    assert p.chunks.list_for_item(p.ws, item.id) == kept
    assert p.items.get(p.ws, item.id).chunk_count == 1


def test_chunk_get_many_keeps_the_given_order_within_the_workspace(ports: Ports) -> None:
    p = ports
    item = p.items.create(_item(p.ws))
    a, b, c = _chunks(item, "a", "b", "c")
    p.chunks.replace_for_item(p.ws, item.id, [a, b, c])
    assert p.chunks.get_many(p.ws, [c.id, new_id(), a.id]) == [c, a]
    assert p.chunks.get_many(p.ws, []) == []
    # Another workspace's chunk is left out, even asked for by id beside this one's (the
    # statement reads by primary key; the workspace is compared after it).
    theirs = p.items.create(_item(p.other))
    (d,) = _chunks(theirs, "d")
    p.chunks.replace_for_item(p.other, theirs.id, [d])
    assert p.chunks.get_many(p.ws, [d.id, b.id, c.id]) == [b, c]
    assert p.chunks.get_many(p.other, [a.id, d.id]) == [d]
    with pytest.raises(MissingWorkspace):
        p.chunks.get_many("", [a.id])


def test_list_to_embed_gives_the_chunks_with_what_their_vectors_need(ports: Ports) -> None:
    p = ports
    dated = p.items.create(
        _item(p.ws, title="Dated", source_type=SourceType.PDF, created_at=NOW - timedelta(days=9))
    )
    undated = p.items.create(_item(p.ws, title="Undated"))
    for item in (dated, undated):
        p.chunks.replace_for_item(p.ws, item.id, list(reversed(_chunks(item, "one", "two"))))
    got = p.chunks.list_to_embed(p.ws, dated.id)
    assert [e.chunk for e in got] == _chunks(dated, "one", "two")
    assert {(e.title, e.source_type, e.created_at) for e in got} == {
        ("Dated", "pdf", NOW - timedelta(days=9))
    }
    assert {(e.title, e.created_at) for e in p.chunks.list_to_embed(p.ws, undated.id)} == {
        ("Undated", NOW)
    }
    assert p.chunks.list_to_embed(p.ws, p.items.create(_item(p.ws)).id) == []


def test_unembedded_chunks_are_found_stamped_counted_and_cleared(ports: Ports) -> None:
    p = ports
    item = p.items.create(_item(p.ws, title="T"))
    old = p.items.create(_item(p.ws))
    gone = p.items.create(_item(p.ws))
    fresh = _chunks(item, "one", "two")
    stale = _chunks(old, "three", model="old-model")
    done = _chunks(gone, "four", model="new-model")
    for owner, chunks in ((item, fresh), (old, stale), (gone, done)):
        p.chunks.replace_for_item(p.ws, owner.id, chunks)
    p.items.mark_deleted(p.ws, gone.id)
    # New model: every chunk of a live item not embedded with it.
    todo = p.chunks.list_unembedded(p.ws, "new-model", limit=10)
    assert sorted(e.chunk.id for e in todo) == sorted(c.id for c in fresh + stale)
    assert {e.title for e in todo if e.chunk.item_id == item.id} == {"T"}
    assert len(p.chunks.list_unembedded(p.ws, "new-model", limit=2)) == 2
    assert len(p.chunks.list_unembedded(p.ws, "new-model", limit=0)) == 1
    assert p.chunks.count_by_embedding_model(p.ws) == {None: 2, "old-model": 1, "new-model": 1}

    ids = [c.id for c in fresh + stale]
    assert p.chunks.set_embedding_model(p.ws, [*ids, new_id()], "new-model") == 3
    assert p.chunks.list_unembedded(p.ws, "new-model", limit=10) == []
    assert [c.embedding_model for c in p.chunks.list_for_item(p.ws, item.id)] == ["new-model"] * 2
    assert p.chunks.count_by_embedding_model(p.ws) == {"new-model": 4}

    assert p.chunks.clear_embedding_model(p.ws) == 4
    assert p.chunks.clear_embedding_model(p.ws) == 0
    assert p.chunks.count_by_embedding_model(p.ws) == {None: 4}
    assert len(p.chunks.list_unembedded(p.ws, "new-model", limit=10)) == 3


# ------------------------------------------------------------------ processing runs
def test_runs_are_listed_in_order_and_finished_in_place(ports: Ports) -> None:
    p = ports
    item = p.items.create(_item(p.ws))
    second = p.runs.add(_run(item, "chunk", started_at=NOW + timedelta(seconds=1)))
    first = p.runs.add(_run(item, outcome=RunOutcome.RUNNING, finished_at=None))
    assert p.runs.list_for_item(p.ws, item.id) == [first, second]
    p.runs.finish(
        p.ws,
        first.id,
        outcome=RunOutcome.FAILED,
        finished_at=NOW + timedelta(seconds=3),
        details={"reason": "bad"},
        error="parse failed",
    )
    finished = p.runs.list_for_item(p.ws, item.id)[0]
    assert (finished.outcome, finished.finished_at, finished.details, finished.error) == (
        RunOutcome.FAILED,
        NOW + timedelta(seconds=3),
        {"reason": "bad"},
        "parse failed",
    )
    p.runs.finish(p.ws, second.id, outcome=RunOutcome.SUCCEEDED, finished_at=NOW)
    assert p.runs.list_for_item(p.ws, item.id)[1].details == second.details  # kept
    with pytest.raises(NotFound):
        p.runs.finish(p.ws, new_id(), outcome=RunOutcome.FAILED, finished_at=NOW)


# ------------------------------------------------------------------ jobs
def test_enqueue_stores_a_pending_job(ports: Ports) -> None:
    p = ports
    given = _job(
        p.ws,
        priority=3,
        correlation_id="req-1",
        status=JobStatus.RUNNING,
        attempts=2,
        lease_owner="someone",
        last_error="old",
    )
    job = p.jobs.enqueue(given)
    assert job == replace(
        given, status=JobStatus.PENDING, attempts=0, lease_owner=None, last_error=None
    )
    assert p.jobs.get(p.ws, job.id) == job
    system = p.jobs.enqueue(_job(None))
    assert system.workspace_id is None and system.status is JobStatus.PENDING


def test_one_pending_job_per_idempotency_key(ports: Ports) -> None:
    p = ports
    first = p.jobs.enqueue(_job(p.ws, idempotency_key="parse:a:1"))
    again = p.jobs.enqueue(_job(p.ws, idempotency_key="parse:a:1", priority=9))
    assert again == first
    with pytest.raises(DuplicateKey):
        p.jobs.enqueue(_job(p.other, idempotency_key="parse:a:1"))
    assert p.jobs.list(p.other) == []
    claimed = p.jobs.claim("w/1", NOW, NOW + LEASE)
    assert claimed is not None and claimed.id == first.id
    second = p.jobs.enqueue(_job(p.ws, idempotency_key="parse:a:1"))
    assert second.id != first.id  # no longer pending: the key is free for new work
    unkeyed = [p.jobs.enqueue(_job(p.ws)) for _ in range(2)]
    assert len({j.id for j in unkeyed}) == 2
    assert {j.id: j.status for j in p.jobs.list(p.ws)} == {
        first.id: JobStatus.RUNNING,
        second.id: JobStatus.PENDING,
        unkeyed[0].id: JobStatus.PENDING,
        unkeyed[1].id: JobStatus.PENDING,
    }


def test_jobs_are_listed_newest_first_and_filtered(ports: Ports) -> None:
    p = ports
    minute = timedelta(minutes=1)
    old = p.jobs.enqueue(_job(p.ws, created_at=NOW - 2 * minute))
    tie = sorted(
        (p.jobs.enqueue(_job(p.ws, kind="test.other", created_at=NOW - minute)) for _ in range(2)),
        key=lambda j: j.id,
    )
    new = p.jobs.enqueue(_job(p.ws, created_at=NOW))
    p.jobs.enqueue(_job(p.other))
    running = p.jobs.claim("w", NOW, NOW + LEASE)
    assert running is not None and running.id == old.id

    def ids(**kw: Any) -> list[str]:
        return [j.id for j in p.jobs.list(p.ws, **kw)]

    assert ids() == [new.id, tie[0].id, tie[1].id, old.id]
    assert ids(status=JobStatus.RUNNING) == [old.id]
    assert ids(status=JobStatus.FAILED) == []
    assert ids(kind="test.other") == [tie[0].id, tie[1].id]
    assert ids(kind="test.other", status=JobStatus.PENDING, limit=1) == [tie[0].id]
    assert ids(limit=2, offset=1) == [tie[0].id, tie[1].id]
    assert ids(limit=0, offset=-1) == [new.id]
    with pytest.raises(NotFound):
        p.jobs.get(p.ws, new_id())


def test_claim_takes_the_next_due_job_by_priority_run_after_created_at_and_id(
    ports: Ports,
) -> None:
    p = ports
    minute = timedelta(minutes=1)
    first = p.jobs.enqueue(_job(p.ws, priority=5, run_after=NOW - 2 * minute))
    by_created = [
        p.jobs.enqueue(_job(p.ws, priority=5, run_after=NOW - minute, created_at=NOW - m * minute))
        for m in (20, 5)
    ]
    by_id = sorted(
        (p.jobs.enqueue(_job(p.other, run_after=NOW - minute)) for _ in range(2)),
        key=lambda j: j.id,
    )
    system = p.jobs.enqueue(_job(None, run_after=NOW - 3 * minute))
    future = p.jobs.enqueue(_job(p.ws, priority=9, run_after=NOW + minute))

    order = [p.jobs.claim(f"w/{i}", NOW, NOW + LEASE) for i in range(7)]
    expected = [first, *by_created, system, *by_id]
    assert [j.id if j else None for j in order] == [j.id for j in expected] + [None]
    claimed = order[0]
    assert claimed is not None
    assert claimed == replace(
        first,
        status=JobStatus.RUNNING,
        lease_owner="w/0",
        lease_expires_at=NOW + LEASE,
        attempts=1,
        started_at=NOW,
    )
    assert p.jobs.get(p.ws, first.id) == claimed
    # Due once its time has come (run_after is inclusive).
    late = p.jobs.claim("w/late", NOW + minute, NOW + minute + LEASE)
    assert late is not None and late.id == future.id


def test_every_transition_of_a_running_job_needs_its_lease(ports: Ports) -> None:
    p = ports
    job = _claimed(p, "w/1")
    pending = p.jobs.enqueue(_job(p.ws, run_after=NOW + timedelta(days=1)))
    later = NOW + timedelta(seconds=1)
    for job_id, owner in ((job.id, "w/2"), (pending.id, "w/1"), (new_id(), "w/1")):
        transitions = _transitions(p, job_id, owner, later)
        assert _raised(transitions) == _all(transitions, LeaseLost), (job_id, owner)
    assert p.jobs.get(p.ws, job.id) == job
    assert p.jobs.get(p.ws, pending.id) == pending


def _transitions(
    p: Ports, job_id: str, owner: str, now: datetime
) -> dict[str, Callable[[], object]]:
    """Every transition of a running job, by ``owner``."""
    return {
        "renew": lambda: p.jobs.renew(job_id, owner, now + LEASE, now),
        "succeed": lambda: p.jobs.succeed(job_id, owner, now),
        "fail": lambda: p.jobs.fail(job_id, owner, now, "boom"),
        "reschedule": lambda: p.jobs.reschedule(job_id, owner, now, now, "boom"),
        "tx.complete_job": lambda: _complete_in_transaction(p, job_id, owner, now),
    }


def _complete_in_transaction(p: Ports, job_id: str, owner: str, now: datetime) -> None:
    with p.uow.begin(p.ws) as tx:
        tx.complete_job(job_id, owner, now)


def test_succeed_and_fail_settle_the_job_once(ports: Ports) -> None:
    p = ports
    later = NOW + timedelta(seconds=7)
    ok = _claimed(p, "w/ok")
    done = p.jobs.succeed(ok.id, "w/ok", later)
    assert done == replace(ok, status=JobStatus.SUCCEEDED, lease_expires_at=None, finished_at=later)
    assert p.jobs.get(p.ws, ok.id) == done
    with pytest.raises(LeaseLost):
        p.jobs.succeed(ok.id, "w/ok", later)
    with pytest.raises(LeaseLost):
        p.jobs.fail(ok.id, "w/ok", later, "too late")

    bad = _claimed(p, "w/bad")
    failed = p.jobs.fail(bad.id, "w/bad", later, "x" * 3000)
    assert failed == replace(
        bad,
        status=JobStatus.FAILED,
        lease_expires_at=None,
        finished_at=later,
        last_error="x" * 2000,
    )
    assert p.jobs.get(p.ws, bad.id) == failed
    with pytest.raises(LeaseLost):
        p.jobs.renew(bad.id, "w/bad", later + LEASE, later)


def test_reschedule_returns_the_job_to_pending_until_run_after(ports: Ports) -> None:
    p = ports
    job = _claimed(p, "w/1")
    retry_at = NOW + timedelta(seconds=10)
    back = p.jobs.reschedule(job.id, "w/1", NOW, retry_at, "timeout")
    assert back == replace(
        job,
        status=JobStatus.PENDING,
        lease_owner=None,
        lease_expires_at=None,
        run_after=retry_at,
        last_error="timeout",
    )
    assert p.jobs.get(p.ws, job.id) == back
    assert p.jobs.claim("w/2", retry_at - timedelta(seconds=1), retry_at + LEASE) is None
    again = p.jobs.claim("w/2", retry_at, retry_at + LEASE)
    assert again is not None and (again.id, again.attempts) == (job.id, 2)
    with pytest.raises(LeaseLost):
        p.jobs.succeed(job.id, "w/1", retry_at)


def test_reschedule_cancels_a_job_whose_key_has_a_pending_twin(ports: Ports) -> None:
    p = ports
    job = _claimed(p, "w/1", idempotency_key="embed:a:1")
    twin = p.jobs.enqueue(_job(p.ws, idempotency_key="embed:a:1"))
    assert twin.id != job.id
    later = NOW + timedelta(seconds=3)
    cancelled = p.jobs.reschedule(job.id, "w/1", later, later, "timeout")
    assert cancelled == replace(
        job,
        status=JobStatus.CANCELLED,
        lease_expires_at=None,
        last_error=SUPERSEDED,
        finished_at=later,
    )
    assert p.jobs.get(p.ws, twin.id) == twin


def test_renew_extends_the_lease(ports: Ports) -> None:
    p = ports
    job = _claimed(p, "w/1")
    p.jobs.renew(job.id, "w/1", NOW + 4 * LEASE, NOW + LEASE / 2)
    assert p.jobs.release_expired(NOW + 2 * LEASE) == []
    assert p.jobs.get(p.ws, job.id) == replace(job, lease_expires_at=NOW + 4 * LEASE)


def test_release_expired_requeues_lost_jobs_or_fails_them_when_spent(ports: Ports) -> None:
    p = ports
    s = timedelta(seconds=1)
    now = NOW + 15 * s

    def claim(until: timedelta, **changes: Any) -> Job:
        job = p.jobs.enqueue(_job(p.ws, **changes))
        claimed = p.jobs.claim(f"w/{job.id}", NOW, NOW + until)
        assert claimed is not None and claimed.id == job.id
        return claimed

    twinned = claim(1 * s, idempotency_key="chunk:a:1")
    twin = p.jobs.enqueue(_job(p.ws, idempotency_key="chunk:a:1", run_after=NOW + 60 * s))
    spent = claim(5 * s, max_attempts=1)
    retried = claim(10 * s, max_attempts=3)
    retried = p.jobs.reschedule(retried.id, retried.lease_owner or "", NOW, NOW, "first try")
    reclaimed = p.jobs.claim("w/retried", NOW, NOW + 10 * s)
    assert reclaimed is not None and (reclaimed.id, reclaimed.attempts) == (retried.id, 2)
    retried = reclaimed
    on_time = claim(15 * s)  # expires exactly now: not yet expired
    alive = claim(20 * s)

    first = p.jobs.release_expired(now, limit=1)
    assert first == [
        replace(
            twinned,
            status=JobStatus.CANCELLED,
            lease_expires_at=None,
            last_error=SUPERSEDED,
            finished_at=now,
        )
    ]
    rest = p.jobs.release_expired(now)
    assert rest == [
        replace(
            spent,
            status=JobStatus.FAILED,
            lease_expires_at=None,
            finished_at=now,
            last_error="lease expired on attempt 1 of 1 (worker lost); attempt budget spent",
        ),
        replace(
            retried,
            status=JobStatus.PENDING,
            lease_owner=None,
            lease_expires_at=None,
            run_after=now,
            last_error="first try",
        ),
    ]
    assert [p.jobs.get(p.ws, j.id) for j in (*first, *rest)] == [*first, *rest]
    assert p.jobs.release_expired(now) == []
    assert p.jobs.get(p.ws, on_time.id) == on_time
    assert p.jobs.get(p.ws, alive.id) == alive
    assert p.jobs.get(p.ws, twin.id) == twin
    with pytest.raises(LeaseLost):  # the lost worker's result is never recorded
        p.jobs.succeed(retried.id, "w/retried", now)
    again = p.jobs.claim("w/new", now, now + LEASE)
    assert again is not None and (again.id, again.attempts) == (retried.id, 3)


# ------------------------------------------------------------------ unit of work
def _stage_fixture(p: Ports) -> tuple[Item, Job, list[Chunk]]:
    """An item, the running job of its stage (owner ``w/1``) and the chunks it produces."""
    item = p.items.create(_item(p.ws))
    job = _claimed(p, "w/1", idempotency_key=f"parse_item:{item.id}:1")
    return item, job, _chunks(item, "one", "two")


def test_a_unit_of_work_commits_the_stage_result_run_status_next_job_and_completion(
    ports: Ports,
) -> None:
    p = ports
    item, job, chunks = _stage_fixture(p)
    run = _run(item)
    following = _job(p.ws, kind="chunk_item", idempotency_key=f"chunk_item:{item.id}:1")
    p.clock.advance(9)
    done = NOW + timedelta(seconds=9)
    with p.uow.begin(p.ws) as tx:
        tx.store_parsed(item.id, text="parsed", structure={"blocks": [[0, 6]]}, title="Parsed")
        tx.replace_chunks(item.id, chunks)
        assert tx.stamp_embedding_model(item.id, [c.id for c in chunks], "m") == 2
        tx.add_run(run)
        tx.set_item_status(item.id, ItemStatus.PROCESSING)
        assert tx.enqueue(following).id == following.id
        tx.complete_job(job.id, "w/1", done)

    got, structure = p.items.get_parsed(p.ws, item.id)
    assert got == replace(
        item,
        text="parsed",
        title="Parsed",
        status=ItemStatus.PROCESSING,
        chunk_count=2,
        updated_at=done,
    )
    assert structure == {"blocks": [[0, 6]]}
    assert p.chunks.list_for_item(p.ws, item.id) == [
        replace(c, embedding_model="m") for c in chunks
    ]
    assert p.runs.list_for_item(p.ws, item.id) == [run]
    assert p.jobs.get(p.ws, following.id).status is JobStatus.PENDING
    assert p.jobs.get(p.ws, job.id) == replace(
        job, status=JobStatus.SUCCEEDED, lease_expires_at=None, finished_at=done
    )
    # No title: the parse stage keeps the item's own.
    with p.uow.begin(p.ws) as tx:
        tx.store_parsed(item.id, text="again", structure={}, title=None)
    assert p.items.get(p.ws, item.id).title == "Parsed"


@pytest.mark.parametrize(
    ("failure", "error"),
    [("stage raised", RuntimeError), ("lease lost", LeaseLost), ("item gone", NotFound)],
)
def test_a_unit_of_work_that_fails_commits_nothing(
    ports: Ports, failure: str, error: type[Exception]
) -> None:
    p = ports
    item, job, chunks = _stage_fixture(p)
    other = p.items.create(_item(p.ws))
    before = p.items.get_parsed(p.ws, item.id)
    jobs_before = p.jobs.list(p.ws)
    with pytest.raises(error), p.uow.begin(p.ws) as tx:
        tx.set_item_status(other.id, ItemStatus.READY)
        tx.store_parsed(item.id, text="parsed", structure={"b": 1}, title="Parsed")
        tx.replace_chunks(item.id, chunks)
        tx.stamp_embedding_model(item.id, [c.id for c in chunks], "m")
        tx.add_run(_run(item))
        tx.set_item_status(item.id, ItemStatus.PROCESSING)
        tx.enqueue(_job(p.ws, kind="chunk_item", idempotency_key=f"chunk_item:{item.id}:1"))
        if failure == "stage raised":
            raise RuntimeError("the stage crashed")
        if failure == "lease lost":
            tx.complete_job(job.id, "w/stale", NOW)
        tx.complete_job(job.id, "w/1", NOW)
        tx.set_item_status(new_id(), ItemStatus.READY)  # an item that is gone
    assert p.items.get_parsed(p.ws, item.id) == before
    assert p.items.get(p.ws, other.id).status is ItemStatus.PENDING
    assert p.chunks.list_for_item(p.ws, item.id) == []
    assert p.runs.list_for_item(p.ws, item.id) == []
    assert p.jobs.list(p.ws) == jobs_before
    assert p.jobs.get(p.ws, job.id) == job


def test_a_unit_of_work_meets_a_deleted_item_as_not_found(ports: Ports) -> None:
    p = ports
    item, _, chunks = _stage_fixture(p)
    p.items.mark_deleted(p.ws, item.id)
    writes = {
        "store_parsed": _transaction(
            p, lambda tx: tx.store_parsed(item.id, text="t", structure={}, title=None)
        ),
        "replace_chunks": _transaction(p, lambda tx: tx.replace_chunks(item.id, chunks)),
        "set_item_status": _transaction(
            p, lambda tx: tx.set_item_status(item.id, ItemStatus.READY)
        ),
        "replace_entities": _transaction(p, lambda tx: tx.replace_entities(item.id, [], [])),
    }
    assert _raised(writes) == _all(writes, NotFound)
    assert p.chunks.list_for_item(p.ws, item.id) == []


def test_a_unit_of_work_refuses_records_of_another_workspace(ports: Ports) -> None:
    p = ports
    item = p.items.create(_item(p.ws))
    foreign = {
        "add_run": _transaction(
            p, lambda tx: tx.add_run(replace(_run(item), workspace_id=p.other))
        ),
        "enqueue": _transaction(p, lambda tx: tx.enqueue(_job(p.other))),
        "enqueue(no workspace)": _transaction(p, lambda tx: tx.enqueue(_job(None))),
    }
    assert _raised(foreign) == _all(foreign, MissingWorkspace)
    assert p.runs.list_for_item(p.ws, item.id) == []
    assert p.jobs.list(p.ws) == [] and p.jobs.list(p.other) == []


def test_a_unit_of_work_enqueue_returns_the_pending_twin(ports: Ports) -> None:
    p = ports
    item = p.items.create(_item(p.ws))
    key = f"chunk_item:{item.id}:1"
    pending = p.jobs.enqueue(_job(p.ws, idempotency_key=key))
    with p.uow.begin(p.ws) as tx:
        assert tx.enqueue(_job(p.ws, idempotency_key=key)) == pending
        tx.set_item_status(item.id, ItemStatus.PROCESSING)
    assert p.jobs.list(p.ws) == [pending]


def test_a_unit_of_work_stamps_only_the_named_items_chunks(ports: Ports) -> None:
    p = ports
    mine, theirs = (p.items.create(_item(p.ws)) for _ in range(2))
    p.chunks.replace_for_item(p.ws, mine.id, _chunks(mine, "a", "b"))
    p.chunks.replace_for_item(p.ws, theirs.id, _chunks(theirs, "c"))
    every = [c.id for i in (mine, theirs) for c in p.chunks.list_for_item(p.ws, i.id)]
    with p.uow.begin(p.ws) as tx:
        assert tx.stamp_embedding_model(mine.id, every, "m") == 2
    assert p.chunks.count_by_embedding_model(p.ws) == {"m": 2, None: 1}
    assert [c.embedding_model for c in p.chunks.list_for_item(p.ws, theirs.id)] == [None]
