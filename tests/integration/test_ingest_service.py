"""The ingest service and the parse/chunk stages on real SQLite: safe stored
paths, duplicates under concurrency, one generation of chunks, deletion, failures."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.errors import (
    DuplicateItem,
    NotFound,
    TooLarge,
    UnsupportedContent,
    ValidationError,
)
from relata.domain.models import ItemStatus, JobStatus, SourceType
from relata.ingest.service import IngestRequest
from tests.support.ingest import STAGE_JOBS, STAGES, built, drain, originals_of, workspace_id

MARKDOWN = (
    b"# Tidal notes\n\n## Turbines\n\nThe array has twelve turbines. Each is rated at 1.5 MW.\n\n"
    b"## Seals\n\nThe seal colony on Skerry Rock grew from 131 to 143 animals.\n"
)


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(
        settings, ingest_concurrency=16, chunk_target_chars=200, chunk_overlap_chars=0
    ) as cont:
        yield cont


def test_a_filename_with_traversal_and_odd_characters_is_stored_safely_and_shown_clean(
    c: Container,
) -> None:
    ws = workspace_id(c)
    name = "../../etc/passwd\x00 \u202eevil\u0007 \U0001f600 ..\\x.md"
    item = c.ingest.ingest(ws, IngestRequest(data=MARKDOWN, filename=name))

    stored = c.repos.items.get(ws, item.id)
    # Shown as given (traversal, emoji and all) except what would break or mislead a reader:
    # control characters (NUL, BEL) and bidi controls (U+202E) are dropped.
    assert stored.original_filename == "../../etc/passwd evil \U0001f600 ..\\x.md"
    assert stored.original_path == f"originals/{ws}/{item.id}.md"
    files = originals_of(c, ws)
    assert [f.name for f in files] == [f"{item.id}.md"]
    assert files[0].read_bytes() == MARKDOWN
    assert not (c.settings.data_path.parent / "etc").exists()
    # The display name never becomes a path; the title takes its last segment, cleaned.
    assert "/" not in stored.title and "\x00" not in stored.title


def test_the_type_comes_from_the_content_not_the_filename(c: Container) -> None:
    ws = workspace_id(c)
    item = c.ingest.ingest(
        ws, IngestRequest(data=b'{"a": {"b": 1}}', filename="report.pdf", content_type="x/y")
    )
    assert item.source_type is SourceType.JSON
    assert item.original_path is not None and item.original_path.endswith(".json")
    assert item.media_type == "application/json"
    with pytest.raises(UnsupportedContent, match="PNG image"):
        c.ingest.ingest(
            ws, IngestRequest(data=b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, filename="a.md")
        )


def test_concurrent_uploads_of_the_same_bytes_create_one_item(c: Container) -> None:
    ws = workspace_id(c)
    data = b"The same document, uploaded by eight clients at once.\n" * 20
    barrier = threading.Barrier(8)
    created: list[str] = []
    duplicates: list[str | None] = []
    errors: list[BaseException] = []

    def upload() -> None:
        barrier.wait(timeout=30)
        try:
            created.append(c.ingest.ingest(ws, IngestRequest(data=data, filename="same.txt")).id)
        except DuplicateItem as exc:
            duplicates.append(exc.existing_id)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=upload) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert len(created) == 1 and len(duplicates) == 7
    assert all(d == created[0] for d in duplicates)
    assert c.repos.items.count(ws) == 1
    # The losers' stored files were removed: exactly one original remains.
    assert [f.name for f in originals_of(c, ws)] == [f"{created[0]}.txt"]


def test_a_duplicate_names_the_existing_item_and_allow_duplicate_keeps_a_copy(
    c: Container,
) -> None:
    ws = workspace_id(c)
    first = c.ingest.ingest(ws, IngestRequest(text="A note worth keeping twice."))
    with pytest.raises(DuplicateItem) as caught:
        c.ingest.ingest(ws, IngestRequest(text="A note worth keeping twice."))
    assert caught.value.existing_id == first.id
    copy = c.ingest.ingest(
        ws, IngestRequest(text="A note worth keeping twice.", allow_duplicate=True)
    )
    assert copy.id != first.id and copy.deliberate_duplicate
    assert c.repos.items.count(ws) == 2


def test_a_batch_reports_each_outcome_and_catches_copies_within_it(c: Container) -> None:
    ws = workspace_id(c)
    existing = c.ingest.ingest(ws, IngestRequest(text="Already here."))
    results = c.ingest.ingest_many(
        ws,
        [
            IngestRequest(text="First new text."),
            IngestRequest(text="Already here."),
            IngestRequest(text="First new text."),
            IngestRequest(text="Bad metadata.", metadata={"bad key!": "x"}),
            IngestRequest(text="Second new text.", title="A chosen title"),
        ],
    )
    new, dup_db, dup_batch, invalid, titled = results
    assert not isinstance(new, BaseException)
    assert isinstance(dup_db, DuplicateItem) and dup_db.existing_id == existing.id
    assert isinstance(dup_batch, DuplicateItem) and dup_batch.existing_id == new.id
    assert isinstance(invalid, ValidationError) and invalid.field == "metadata"
    assert not isinstance(titled, BaseException) and titled.title == "A chosen title"
    assert c.repos.items.count(ws) == 3
    assert len(originals_of(c, ws)) == 3


@pytest.mark.parametrize(
    ("request_", "field", "message"),
    [
        (IngestRequest(text="x", title="t" * 501), "title", "at most 500"),
        (IngestRequest(text="x", title="bad\x07title"), "title", "control"),
        (IngestRequest(text="x", metadata={"k": 1}), "metadata", "must be a string"),
        (IngestRequest(text="x", metadata={f"k{i}": "v" for i in range(33)}), "metadata", "32"),
        (IngestRequest(text="x", metadata={"k": "v" * 1025}), "metadata", "1024"),
        (IngestRequest(text="x", metadata="[1, 2]"), "metadata", "object"),
        (IngestRequest(text="x", created_at="yesterday"), "created_at", "ISO 8601"),
        (IngestRequest(text="x", created_at="2999-01-01T00:00:00Z"), "created_at", "future"),
        (IngestRequest(text="   "), "text", "empty"),
        (IngestRequest(), "file", "either a file or text"),
    ],
)
def test_bad_input_is_rejected_naming_the_field(
    c: Container, request_: IngestRequest, field: str, message: str
) -> None:
    with pytest.raises(ValidationError, match=message) as caught:
        c.ingest.ingest(workspace_id(c), request_)
    assert caught.value.field == field
    assert c.repos.items.count(workspace_id(c)) == 0
    assert originals_of(c, workspace_id(c)) == []


def test_content_over_the_upload_limit_is_too_large(settings: Settings) -> None:
    with built(settings, max_upload_bytes=100) as c:
        with pytest.raises(TooLarge, match="limit is 100 bytes") as caught:
            c.ingest.ingest(workspace_id(c), IngestRequest(data=b"a" * 101, filename="a.txt"))
        assert caught.value.field == "file"


def test_a_creation_date_without_timezone_is_utc(c: Container) -> None:
    item = c.ingest.ingest(
        workspace_id(c), IngestRequest(text="Dated.", created_at="2024-05-01T12:30:00")
    )
    assert item.created_at == datetime(2024, 5, 1, 12, 30, tzinfo=UTC)
    soon = (datetime.now(UTC) + timedelta(hours=12)).isoformat()
    assert c.ingest.ingest(workspace_id(c), IngestRequest(text="Soon.", created_at=soon))


def test_the_pipeline_parses_chunks_and_records_runs(c: Container) -> None:
    ws = workspace_id(c)
    item = c.ingest.ingest(ws, IngestRequest(data=MARKDOWN, filename="notes.md"))
    assert item.status is ItemStatus.PENDING and item.title == "notes.md"
    jobs = drain(c)
    assert [j.kind for j in jobs] == STAGE_JOBS
    assert all(j.status is JobStatus.SUCCEEDED for j in jobs)

    ready = c.repos.items.get(ws, item.id)
    assert ready.status is ItemStatus.READY
    assert ready.title == "Tidal notes"  # the document's own title replaces the filename
    chunks = c.repos.chunks.list_for_item(ws, item.id)
    assert ready.chunk_count == len(chunks) >= 2
    assert {ch.heading_path for ch in chunks} >= {("Tidal notes", "Seals")}
    for ch in chunks:  # offsets point into the stored text
        assert ready.text is not None and ready.text[ch.start_offset : ch.end_offset] == ch.text
    runs = c.repos.runs.list_for_item(ws, item.id)
    assert [(r.stage, r.outcome) for r in runs] == [
        ("parse", "succeeded"),
        ("chunk", "succeeded"),
        ("embed", "succeeded"),
        ("entities", "succeeded"),
        ("claims", "succeeded"),
        ("relationships", "succeeded"),
    ]
    assert "parser" in runs[0].versions and "chunker" in runs[1].versions
    assert runs[1].details["chunks"] == len(chunks)


def test_a_given_title_is_kept_over_the_documents_own(c: Container) -> None:
    ws = workspace_id(c)
    item = c.ingest.ingest(ws, IngestRequest(data=MARKDOWN, filename="n.md", title="Mine"))
    drain(c)
    assert c.repos.items.get(ws, item.id).title == "Mine"


def test_reprocessing_keeps_one_generation_of_chunks_with_the_same_ids(c: Container) -> None:
    ws = workspace_id(c)
    item = c.ingest.ingest(ws, IngestRequest(data=MARKDOWN, filename="notes.md"))
    drain(c)
    before = c.repos.chunks.list_for_item(ws, item.id)

    first = c.items.reprocess(ws, item.id)
    again = c.items.reprocess(ws, item.id)  # before the new pass began: the same job
    assert first.generation == 2 and again.job.id == first.job.id
    drain(c)
    after = c.repos.chunks.list_for_item(ws, item.id)
    assert [ch.id for ch in after] == [ch.id for ch in before]
    assert c.repos.chunks.count(ws) == len(before)
    runs = c.repos.runs.list_for_item(ws, item.id)
    assert [r.stage for r in runs] == STAGES * 2  # runs accumulate
    assert c.repos.items.get(ws, item.id).status is ItemStatus.READY


def test_deleting_an_item_removes_its_chunks_runs_and_original(c: Container) -> None:
    ws = workspace_id(c)
    keep = c.ingest.ingest(ws, IngestRequest(text="Another document stays."))
    item = c.ingest.ingest(ws, IngestRequest(data=MARKDOWN, filename="notes.md"))
    drain(c)
    assert c.repos.chunks.list_for_item(ws, item.id)
    removed: list[tuple[str, str]] = []
    c.items.add_delete_hook(lambda w, i: removed.append((w, i)))

    c.items.delete(ws, item.id)
    assert removed == [(ws, item.id)]
    with pytest.raises(NotFound):
        c.items.get(ws, item.id)
    assert c.repos.chunks.list_for_item(ws, item.id) == []
    assert c.repos.runs.list_for_item(ws, item.id) == []
    assert [f.name for f in originals_of(c, ws)] == [f"{keep.id}.txt"]
    with pytest.raises(NotFound):
        c.items.delete(ws, item.id)
    # The content is free again: uploading it anew is not a duplicate.
    assert c.ingest.ingest(ws, IngestRequest(data=MARKDOWN, filename="notes.md")).id != item.id


def test_a_stage_for_a_deleted_item_fails_at_once_without_retry(c: Container) -> None:
    ws = workspace_id(c)
    item = c.ingest.ingest(ws, IngestRequest(text="Soon gone."))
    c.items.delete(ws, item.id)
    [job] = drain(c)
    assert job.kind == "parse_item" and job.status is JobStatus.FAILED
    assert job.attempts == 1 and "NotFound" in (job.last_error or "")


def test_an_unparseable_document_fails_the_item_with_a_short_error(c: Container) -> None:
    ws = workspace_id(c)
    secret = "Confidential sentence that must never appear in an error."
    # Sniffed as JSON, but nested beyond the parser's depth bound.
    data = ("[" * 100 + f'"{secret}"' + "]" * 100).encode()
    item = c.ingest.ingest(ws, IngestRequest(data=data, filename="deep.json"))
    [job] = drain(c)
    assert job.status is JobStatus.FAILED and job.attempts == 1
    failed = c.repos.items.get(ws, item.id)
    assert failed.status is ItemStatus.FAILED
    assert failed.error and failed.error.startswith("parse failed:")
    assert secret not in failed.error and secret not in (job.last_error or "")
    [run] = c.repos.runs.list_for_item(ws, item.id)
    assert run.outcome == "failed" and run.error == failed.error


def test_the_list_filters_by_type_and_date(c: Container) -> None:
    ws = workspace_id(c)
    old = c.ingest.ingest(ws, IngestRequest(text="Old note.", created_at="2020-01-01"))
    c.ingest.ingest(ws, IngestRequest(data=b'{"k": "v"}', created_at="2023-06-01"))
    new = c.ingest.ingest(ws, IngestRequest(text="New note.", created_at="2024-02-01"))
    texts = c.items.list(ws, source_type=SourceType.TEXT)
    assert {i.id for i in texts} == {old.id, new.id}
    recent = c.items.list(ws, created_from=datetime(2023, 1, 1, tzinfo=UTC))
    assert len(recent) == 2 and old.id not in {i.id for i in recent}
    with pytest.raises(ValidationError) as caught:
        c.items.list(ws, limit=0)
    assert caught.value.field == "limit"


def test_workers_finish_items_under_way_before_starting_new_ones(c: Container) -> None:
    ws = workspace_id(c)
    for i in range(3):
        c.ingest.ingest(ws, IngestRequest(text=f"Document number {i}."))
    kinds = [j.kind for j in drain(c)]
    assert kinds == STAGE_JOBS * 3
