"""New versions of an item's content on real SQLite (docs/decisions/0045-item-versions.md):
what the old version contributed is replaced, not added to; an identical re-upload is a
no-op; previous originals are kept as history up to the retention; every version's original
is found by the recovery, copied by a transfer and removed with the item."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
import sqlalchemy as sa

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.errors import DuplicateItem, NotFound
from relata.domain.models import CLI_ACTOR, ItemStatus, ReviewStatus, SourceType
from relata.domain.vocabulary import (
    AuditAction,
    ContradictionStatus,
    DisagreementStatus,
    Resolution,
    SearchLeg,
)
from relata.ingest.service import IngestRequest
from relata.search.service import SearchQuery
from relata.seed import demo_documents
from relata.storage.sql import migrate
from relata.storage.sql.engine import Database
from relata.transfer.originals import copy_originals
from tests.support.fake_embedder import FakeEmbedder
from tests.support.ingest import built, drain, originals_of, workspace_id

#: The tests of the SQL the feature adds run on both dialects.
BOTH = pytest.mark.parametrize(
    "database_url",
    ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
    indirect=True,
)

FIRST = (
    b"# Kestrel harbour notes\n\nThe Kestrel Tower opened in March 2019, the harbour board "
    b"said. The plinthwort beds cover 40 hectares.\n"
)
SECOND = (
    b"# Kestrel harbour notes\n\nThe Kestrel Tower opened in June 2021, the harbour board "
    b"said. The quorblat beds cover 52 hectares.\n"
)


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedder=FakeEmbedder(), chunk_target_chars=200) as cont:
        yield cont


def _hits(c: Container, ws: str, words: str, *, words_only: bool = False) -> list[str]:
    """The items search finds; ``words_only``: by the words legs alone (the fake embedder
    finds the one item of the workspace by meaning for any word of it)."""
    legs = frozenset({SearchLeg.TEXT, SearchLeg.CHUNK_TEXT}) if words_only else None
    response = c.search.search(ws, SearchQuery(text=words, legs=legs))
    return [r.item.id for r in response.results]


def _vector_ids(c: Container, ws: str) -> int:
    return c.vectors.count(ws)


@BOTH
def test_a_new_version_replaces_the_old_ones_chunks_vectors_and_claims(c: Container) -> None:
    ws = workspace_id(c)
    item = c.ingest.ingest(ws, IngestRequest(data=FIRST, filename="notes.md"))
    drain(c)
    before_chunks = c.items.chunks(ws, item.id)
    before_claims = c.repos.claims.list_for_item(ws, item.id)
    assert before_chunks and before_claims
    assert _vector_ids(c, ws) == len(before_chunks)
    assert _hits(c, ws, "plinthwort") == [item.id]

    with c.versions.admit():
        done = c.versions.upload(ws, item.id, SECOND, filename="notes-v2.md", actor=CLI_ACTOR)
    assert not done.unchanged and done.version.number == 2 and done.job is not None
    # At once, before the pass: the old version's text, chunks and vectors are gone.
    assert c.items.chunks(ws, item.id) == [] and _vector_ids(c, ws) == 0
    assert _hits(c, ws, "plinthwort") == []
    assert c.repos.items.get(ws, item.id).status is ItemStatus.PENDING

    drain(c)
    now = c.repos.items.get(ws, item.id)
    assert now.status is ItemStatus.READY and now.id == item.id
    assert now.original_filename == "notes-v2.md" and "quorblat" in (now.text or "")
    chunks = c.items.chunks(ws, item.id)
    assert chunks and all("plinthwort" not in ch.text for ch in chunks)
    # No orphan: one vector per chunk of the new version, nothing left of the old.
    assert _vector_ids(c, ws) == len(chunks)
    claims = c.repos.claims.list_for_item(ws, item.id)
    text = now.text or ""
    # The claims are the new version's: each quotes the new text at its offsets.
    assert claims and all(text[x.start : x.end] == x.quotation for x in claims)
    assert all("2019" not in (x.quotation or "") for x in claims)
    assert any("2021" in (x.quotation or "") for x in claims)
    # Two versions of one item never contradict each other.
    assert not [
        x for x in c.claims.contradictions(ws) if item.id in (x.first.item_id, x.second.item_id)
    ]
    assert _hits(c, ws, "plinthwort", words_only=True) == []
    assert _hits(c, ws, "quorblat", words_only=True) == [item.id]

    versions = c.versions.list(ws, item.id)
    assert [v.number for v in versions] == [2, 1]
    assert versions[0].sha256 == now.content_hash and versions[0].created_by_kind == "cli"
    assert c.versions.original(ws, item.id, 1).path.read_bytes() == FIRST
    assert c.versions.original(ws, item.id, 2).path.read_bytes() == SECOND
    assert c.items.original(ws, item.id).path.read_bytes() == SECOND
    [event] = c.audit.list(ws, action=AuditAction.ITEM_VERSION_UPLOADED)
    assert event.target_id == item.id and event.details["version"] == 2


def test_an_identical_reupload_is_a_no_op(c: Container) -> None:
    ws = workspace_id(c)
    item = c.ingest.ingest(ws, IngestRequest(data=FIRST, filename="notes.md"))
    drain(c)
    runs = len(c.items.get(ws, item.id).runs)
    with c.versions.admit():
        done = c.versions.upload(ws, item.id, FIRST, filename="again.md")
    assert done.unchanged and done.job is None and done.version.number == 1
    assert [v.number for v in c.versions.list(ws, item.id)] == [1]
    assert drain(c) == [] and len(c.items.get(ws, item.id).runs) == runs
    assert c.audit.list(ws, action=AuditAction.ITEM_VERSION_UPLOADED) == []
    assert c.repos.items.get(ws, item.id).original_filename == "notes.md"


@BOTH
def test_another_items_content_is_refused_as_a_duplicate(c: Container) -> None:
    ws = workspace_id(c)
    first = c.ingest.ingest(ws, IngestRequest(data=FIRST, filename="a.md"))
    second = c.ingest.ingest(ws, IngestRequest(data=SECOND, filename="b.md"))
    with pytest.raises(DuplicateItem) as err, c.versions.admit():
        c.versions.upload(ws, second.id, FIRST)
    assert err.value.existing_id == first.id
    assert [v.number for v in c.versions.list(ws, second.id)] == [1]
    assert len(originals_of(c, ws)) == 2  # the refused upload left no file


def test_another_workspaces_item_is_not_found(c: Container) -> None:
    ws = workspace_id(c)
    other = c.workspaces.ensure("other")[0].id
    item = c.ingest.ingest(other, IngestRequest(data=FIRST, filename="a.md"))
    with pytest.raises(NotFound), c.versions.admit():
        c.versions.upload(ws, item.id, SECOND)
    with pytest.raises(NotFound):
        c.versions.list(ws, item.id)
    with pytest.raises(NotFound):
        c.versions.original(ws, item.id, 1)


@BOTH
def test_previous_originals_past_the_retention_are_removed_and_listed(
    settings: Settings,
) -> None:
    with built(settings, embedding_provider="none", keep_previous_originals=1) as c:
        ws = workspace_id(c)
        item = c.ingest.ingest(ws, IngestRequest(data=FIRST, filename="notes.md"))
        with c.versions.admit():
            c.versions.upload(ws, item.id, SECOND, filename="v2.md")
            third = c.versions.upload(ws, item.id, b"Plain text, version three.", filename="v3")
        drain(c)
        assert third.version.number == 3 and third.version.source_type is SourceType.TEXT
        versions = c.versions.list(ws, item.id)
        assert [(v.number, v.original_path is not None) for v in versions] == [
            (3, True),
            (2, True),
            (1, False),
        ]
        with pytest.raises(NotFound, match="no longer kept"):
            c.versions.original(ws, item.id, 1)
        assert c.versions.original(ws, item.id, 2).path.read_bytes() == SECOND
        assert len(originals_of(c, ws)) == 2
        assert c.repos.items.get(ws, item.id).source_type is SourceType.TEXT

        # The recovery knows a kept original from a stray one.
        report = c.recovery.run(fix=True, grace=timedelta(0))
        assert report.stray == [] and len(originals_of(c, ws)) == 2

        # A transfer copies every kept original.
        target = settings.data_path.parent / "copy"
        with c.db.read() as conn:
            copied = copy_originals(conn, settings.data_path, target)
        assert copied.copied == 2 and copied.missing_count == 0
        assert sorted(p.name for p in (target / "originals" / ws).iterdir()) == sorted(
            p.name for p in originals_of(c, ws)
        )

        # Deleting the item removes every version's original.
        c.items.delete(ws, item.id)
        assert originals_of(c, ws) == []
        with c.db.read() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM item_versions")).scalar() == 0


def test_a_confirmed_relationship_whose_evidence_holds_stays_confirmed(
    settings: Settings,
) -> None:
    with built(settings, embedding_provider="none") as c:
        ws = workspace_id(c)
        ids = {}
        for doc in demo_documents():
            item = c.ingest.ingest(
                ws, IngestRequest(data=doc.data, filename=doc.filename, created_at=doc.created_at)
            )
            ids[doc.filename] = (item.id, doc.data)
        drain(c)
        press, press_data = ids["sabrewing-array-press-release.txt"]
        minutes, _ = ids["harbour-council-minutes.md"]
        [rel] = [
            r
            for r in c.repos.relationships.list_for_items(ws, [press], include_rejected=True)
            if {r.source_id, r.target_id} == {press, minutes}
        ]
        c.relationships.review(ws, rel.id, "confirm", by="tester", note="checked")
        with c.versions.admit():
            c.versions.upload(
                ws,
                press,
                press_data + b"\nA visitor centre opens next spring.\n",
                filename="pr.txt",
            )
        drain(c)
        [after] = [
            r
            for r in c.repos.relationships.list_for_items(ws, [press], include_rejected=True)
            if {r.source_id, r.target_id} == {press, minutes}
        ]
        assert after.id == rel.id and after.review_status is ReviewStatus.CONFIRMED
        assert after.review_note == "checked"
        # Its evidence is the new version's: every quotation slices the new text.
        text = c.repos.items.get(ws, press).text or ""
        assert "visitor centre" in text
        spans = [
            s
            for e in after.evidence
            for s in (e.get("first"), e.get("second"), e.get("span"))
            if s and s["item"] == press
        ]
        assert spans and all(text[s["start"] : s["end"]] == s["quotation"] for s in spans)


@BOTH
@pytest.mark.empty_database
def test_the_migration_gives_every_existing_item_its_version_1(database_url: str) -> None:
    db = Database.from_url(database_url)
    try:
        migrate.upgrade(db, "0016")
        with db.write() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO workspaces (id, slug, name, created_at) "
                    "VALUES ('w1', 'a', 'A', '2026-01-01 00:00:00')"
                )
            )
            conn.execute(
                sa.text(
                    "INSERT INTO items (id, workspace_id, title, source_type, status, "
                    "content_hash, size_bytes, metadata, ingested_at, original_path, "
                    "original_filename, media_type) VALUES ('i1', 'w1', 'T', 'markdown', "
                    "'ready', 'h1', 12, '{}', '2026-01-02 00:00:00', "
                    "'originals/w1/i1.md', 'n.md', 'text/markdown')"
                )
            )
        migrate.upgrade(db)
        with db.read() as conn:
            rows = conn.execute(
                sa.text(
                    "SELECT item_id, number, workspace_id, sha256, size_bytes, source_type, "
                    "filename, media_type, original_path FROM item_versions"
                )
            ).all()
        assert [tuple(r) for r in rows] == [
            ("i1", 1, "w1", "h1", 12, "markdown", "n.md", "text/markdown", "originals/w1/i1.md")
        ]
    finally:
        db.dispose()


@BOTH
def test_a_corrected_date_removes_the_disagreement_and_a_new_conflict_opens_one(
    settings: Settings,
) -> None:
    """The demo press release says the array entered commercial operation in March 2019, the
    council minutes June 2021: one disagreement. A version with the corrected date leaves
    nothing quoting March 2019, so the contradiction and its disagreement go, resolved or
    not; a version with another date disagrees again, as a new, open disagreement."""
    with built(settings, embedding_provider="none") as c:
        ws = workspace_id(c)
        press, data = "", b""
        for doc in demo_documents():
            item = c.ingest.ingest(
                ws, IngestRequest(data=doc.data, filename=doc.filename, created_at=doc.created_at)
            )
            if "press-release" in doc.filename:
                press, data = item.id, doc.data
        drain(c)
        [disagreement] = c.claims.disagreements(ws)
        c.claims.resolve_disagreement(
            ws, disagreement.id, Resolution.POSITION_CORRECT, by="tester", position=2
        )
        assert [x.status for x in c.claims.contradictions(ws)] == [ContradictionStatus.RESOLVED]

        with c.versions.admit():
            c.versions.upload(ws, press, data.replace(b"14 March 2019", b"14 June 2021"))
        drain(c)
        assert c.claims.disagreements(ws) == [] and c.claims.contradictions(ws) == []

        with c.versions.admit():
            c.versions.upload(ws, press, data.replace(b"14 March 2019", b"14 March 2020"))
        drain(c)
        [again] = c.claims.contradictions(ws)
        assert again.status is ContradictionStatus.OPEN
        text = c.repos.items.get(ws, press).text or ""
        side = again.first if again.first.item_id == press else again.second
        assert side.quotation in text and "March 2020" in side.quotation
        [reopened] = c.claims.disagreements(ws)
        assert reopened.status is DisagreementStatus.OPEN


@BOTH
def test_a_version_that_changes_a_resolved_positions_date_reopens_the_same_disagreement(
    settings: Settings,
) -> None:
    """Resolved, then the press release's new version states another date that still
    disagrees: the same disagreement reopens, its decision kept in its history (the pair
    quoting the old date is dropped and the new one recorded in one transaction, so the
    disagreement is never deleted in between and found again as new)."""
    with built(settings, embedding_provider="none") as c:
        ws = workspace_id(c)
        press, data = "", b""
        for doc in demo_documents():
            item = c.ingest.ingest(
                ws, IngestRequest(data=doc.data, filename=doc.filename, created_at=doc.created_at)
            )
            if "press-release" in doc.filename:
                press, data = item.id, doc.data
        drain(c)
        [disagreement] = c.claims.disagreements(ws)
        c.claims.resolve_disagreement(
            ws, disagreement.id, Resolution.POSITION_CORRECT, by="tester", position=2, note="n"
        )
        with c.versions.admit():
            c.versions.upload(ws, press, data.replace(b"14 March 2019", b"14 April 2020"))
        drain(c)
        [reopened] = c.claims.disagreements(ws)
        assert reopened.id == disagreement.id
        assert reopened.status is DisagreementStatus.OPEN and reopened.resolution is None
        last = reopened.history[-1]
        assert last["event"] == "reopened: a position's claims changed"
        assert last["previous_resolution"] == "position_correct" and last["previous_note"] == "n"
        values = sorted(p.value for p in reopened.positions)
        assert any("April 2020" in v for v in values) and any("June 2021" in v for v in values)
