"""A message's attachments follow its new versions (docs/decisions/0048, "A new version of a
message"), through the real app: the same attachment (same bytes, even renamed) stays the same
item, a changed one (same name, new bytes) becomes a new version of its item, a removed one is
deleted, a new one becomes a new item linked to the message; each audited on its own. The
new version of the message and everything it does to its attachments commit together: a
failure inside (a race for a new attachment's content) leaves the message, its attachments,
their rows, originals, jobs and audit log exactly as they were. Also by ``relata ingest
--replace``, and a message replaced by a non-message loses its attachments."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from relata.bootstrap import Container
from relata.cli.main import main
from relata.config.settings import Settings
from relata.domain.errors import Busy
from relata.domain.models import Attachment, Item
from relata.domain.vocabulary import AuditAction
from relata.ingest.service import IngestRequest
from relata.pipeline import Pipeline
from tests.fuzz.docgen import make_docx, make_pdf
from tests.fuzz.officegen import make_csv, make_eml
from tests.support.api import api_client
from tests.support.ingest import built, drain, originals_of, workspace_id

DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PDF = make_pdf([["Quarry survey.", "The Ormsby quarry closed in 2019."]], title="Quarry survey")
MEMO_MAY = make_docx([("title", "Lockkeeper memo"), ("p", "The Penfold lock reopened in May.")])
MEMO_JUNE = make_docx(
    [("title", "Lockkeeper memo"), ("p", "The Penfold lock reopened in June, after the flood.")]
)
CSV = make_csv(4)
NOTES = b"Tideway notes. The Brackwater weir gates opened at noon.\n"
SURVEY = b"Survey of the Kittiwake slipway: three cracked piles.\n"


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none", max_upload_bytes=256 * 1024) as cont:
        yield cont


def _first() -> bytes:
    return make_eml(
        subject="Site reports",
        attachments=[
            ("quarry.pdf", "application/pdf", PDF),
            ("memo.docx", DOCX_TYPE, MEMO_MAY),
            ("turbines.csv", "text/csv", CSV),
            ("notes.txt", "text/plain", NOTES),
        ],
    )


def _second() -> bytes:
    """quarry.pdf the same; memo.docx changed; turbines.csv removed; notes.txt the same bytes
    under a new name; survey.txt new."""
    return make_eml(
        subject="Site reports",
        text="Hello Bob,\n\nThe slipway repairs are complete; the memo is corrected.\n",
        attachments=[
            ("quarry.pdf", "application/pdf", PDF),
            ("memo.docx", DOCX_TYPE, MEMO_JUNE),
            ("tideway-notes.txt", "text/plain", NOTES),
            ("survey.txt", "text/plain", SURVEY),
        ],
    )


def _made(c: Container, message_id: str) -> dict[str, str]:
    ws = workspace_id(c)
    return {a.name: a.item_id for a in c.items.attachments(ws, message_id) if a.item_id}


def _found(client: Any, words: str) -> list[str]:
    r = client.get("/api/v1/search", params={"q": words, "legs": "text"})
    assert r.status_code == 200, r.text
    return [x["item"]["id"] for x in r.json()["results"]]


@pytest.mark.both_dialects
def test_a_new_version_of_a_message_brings_its_attachments_along(c: Container) -> None:
    ws = workspace_id(c)
    with api_client(c) as client:
        r = client.post(
            "/api/v1/items", files={"file": ("reports.eml", _first(), "message/rfc822")}
        )
        assert r.status_code == 201, r.text
        message_id = r.json()["id"]
        drain(c)
        before = _made(c, message_id)
        assert set(before) == {"quarry.pdf", "memo.docx", "turbines.csv", "notes.txt"}
        assert _found(client, "Penfold") == [before["memo.docx"]]

        r = client.put(
            f"/api/v1/items/{message_id}/content",
            files={"file": ("reports.eml", _second(), "message/rfc822")},
        )
        assert r.status_code == 202, r.text
        assert r.json()["version"]["number"] == 2
        drain(c)

        rows = c.items.attachments(ws, message_id)
        assert [(a.number, a.name) for a in rows] == [
            (1, "quarry.pdf"),
            (2, "memo.docx"),
            (3, "tideway-notes.txt"),
            (4, "survey.txt"),
        ]
        after = _made(c, message_id)
        # The same bytes: the same item, even under a new name; untouched (one version).
        assert after["quarry.pdf"] == before["quarry.pdf"]
        assert after["tideway-notes.txt"] == before["notes.txt"]
        assert [v.number for v in c.versions.list(ws, before["quarry.pdf"])] == [1]
        # Changed: a new version of the same item, searchable by its new text only.
        memo = before["memo.docx"]
        assert after["memo.docx"] == memo
        assert [v.number for v in c.versions.list(ws, memo)] == [2, 1]
        assert c.items.get(ws, memo).item.status.value == "ready"
        assert "June" in c.items.text(ws, memo) and "May" not in c.items.text(ws, memo)
        assert _found(client, "flood") == [memo]
        old = client.get(f"/api/v1/items/{memo}/versions/1/original")
        assert old.status_code == 200 and old.content == MEMO_MAY
        # Removed: deleted, with its original.
        gone = before["turbines.csv"]
        assert client.get(f"/api/v1/items/{gone}").status_code == 404
        # New: an item of its own, linked to the message, processed.
        survey = after["survey.txt"]
        assert survey not in before.values()
        detail = client.get(f"/api/v1/items/{survey}").json()
        assert detail["attachment_of"] == message_id and detail["status"] == "ready"
        assert _found(client, "Kittiwake") == [survey]
        listed = {i["id"]: i for i in client.get("/api/v1/items").json()["items"]}
        assert set(listed) == {message_id, *after.values()}
        assert {i: listed[i]["attachment_of"] for i in after.values()} == dict.fromkeys(
            after.values(), message_id
        )
        assert listed[message_id]["attachment_of"] is None

    versions = c.audit.list(ws, action=AuditAction.ITEM_VERSION_UPLOADED)
    assert sorted((e.target_id, e.details.get("with_message")) for e in versions) == sorted(
        [(message_id, None), (memo, True)]
    )
    deleted = c.audit.list(ws, action=AuditAction.ITEM_DELETED)
    assert [(e.target_id, e.details.get("with_message")) for e in deleted] == [(gone, True)]
    uploads = c.audit.list(ws, action=AuditAction.ITEM_UPLOADED)
    assert [e.details.get("with_message") for e in uploads if e.target_id == survey] == [True]
    # No original is left behind: the message's two, the items' current ones, memo's first.
    stored = {p.name for p in originals_of(c, ws)}
    assert len(stored) == 2 + len(after) + 1, stored


def _state(c: Container, message_id: str) -> dict[str, Any]:
    ws = workspace_id(c)
    return {
        "items": sorted((i.id, i.content_hash, i.status.value) for i in c.items.list(ws)),
        "rows": c.items.attachments(ws, message_id),
        "versions": {i.id: len(c.versions.list(ws, i.id)) for i in c.items.list(ws)},
        "originals": [p.name for p in originals_of(c, ws)],
        "jobs": len(c.repos.jobs.list(ws, limit=1000)),
        "audit": len(c.audit.list(ws, limit=1000)),
    }


def test_a_failure_inside_leaves_the_message_and_its_attachments_as_they_were(
    c: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another upload takes the new attachment's content between the checks and the commit:
    the transaction meets the unique index and nothing of the new version remains; the error
    is ``Busy`` (try again), never a ``DuplicateItem`` that would name the message's bytes
    as another item's (a watched folder would relink the file)."""
    ws = workspace_id(c)
    message = c.ingest.ingest(ws, IngestRequest(data=_first(), filename="reports.eml"))
    drain(c)
    before = _state(c, message.id)
    real = Pipeline.switch_versions

    def racing(self: Pipeline, *args: Any, **kwargs: Any) -> Any:
        c.ingest.ingest(ws, IngestRequest(data=SURVEY, filename="elsewhere.txt"))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Pipeline, "switch_versions", racing)
    with pytest.raises(Busy, match="attachment"), c.versions.admit():
        c.versions.upload(ws, message.id, _second(), filename="reports.eml")
    monkeypatch.undo()

    elsewhere = [i for i in c.items.list(ws) if i.original_filename == "elsewhere.txt"]
    assert len(elsewhere) == 1
    c.items.delete(ws, elsewhere[0].id)
    after = _state(c, message.id)
    # The race's own upload and delete are the only events and jobs added.
    assert after.pop("audit") == before.pop("audit") + 2
    assert after.pop("jobs") == before.pop("jobs") + 1
    assert after == before
    assert c.items.get(ws, message.id).item.content_hash == message.content_hash

    # Tried again, it goes through.
    with c.versions.admit():
        done = c.versions.upload(ws, message.id, _second(), filename="reports.eml")
    assert done.version.number == 2
    assert set(_made(c, message.id)) == {
        "quarry.pdf",
        "memo.docx",
        "tideway-notes.txt",
        "survey.txt",
    }


def test_a_message_replaced_by_another_kind_of_document_loses_its_attachments(
    c: Container,
) -> None:
    ws = workspace_id(c)
    message = c.ingest.ingest(ws, IngestRequest(data=_first(), filename="reports.eml"))
    drain(c)
    made = _made(c, message.id)
    with c.versions.admit():
        c.versions.upload(ws, message.id, b"Site reports, now a plain note.\n", filename="r.txt")
    drain(c)
    assert c.items.attachments(ws, message.id) == []
    assert [i.id for i in c.items.list(ws)] == [message.id]
    deleted = c.audit.list(ws, action=AuditAction.ITEM_DELETED)
    assert sorted(e.target_id for e in deleted) == sorted(made.values())


def test_an_unreadable_changed_attachment_takes_its_old_item_with_it(c: Container) -> None:
    ws = workspace_id(c)
    message = c.ingest.ingest(ws, IngestRequest(data=_first(), filename="reports.eml"))
    drain(c)
    made = _made(c, message.id)
    png = b"\x89PNG\r\n\x1a\n" + bytes(64)
    second = make_eml(
        subject="Site reports",
        text="Now with a picture.\n",
        attachments=[("quarry.pdf", "application/pdf", PDF), ("memo.docx", "image/png", png)],
    )
    with c.versions.admit():
        c.versions.upload(ws, message.id, second, filename="reports.eml")
    rows = c.items.attachments(ws, message.id)
    assert rows[0] == Attachment(message.id, 1, "quarry.pdf", made["quarry.pdf"])
    assert rows[1].item_id is None and "PNG image" in (rows[1].reason or "")
    live = {i.id for i in c.items.list(ws)}
    assert live == {message.id, made["quarry.pdf"]}


# ---------------------------------------------------------------- the command line
@pytest.fixture
def cli(c: Container, monkeypatch: pytest.MonkeyPatch) -> Container:
    for key in [k for k in os.environ if k.startswith("RELATA_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("RELATA_DATA_DIR", c.settings.data_dir)
    monkeypatch.setenv("RELATA_DATABASE_URL", c.settings.resolved_database_url)
    monkeypatch.setenv("RELATA_EMBEDDING_PROVIDER", "none")
    monkeypatch.setenv("RELATA_JOB_POLL_SECONDS", "0.05")
    return c


def test_relata_ingest_replace_brings_the_attachments_along(cli: Container, tmp_path: Path) -> None:
    ws = workspace_id(cli)
    message: Item = cli.ingest.ingest(ws, IngestRequest(data=_first(), filename="reports.eml"))
    drain(cli)
    before = _made(cli, message.id)
    path = tmp_path / "reports.eml"
    path.write_bytes(_second())
    assert main(["ingest", str(path), "--replace", message.id]) == 0
    after = _made(cli, message.id)
    assert after["memo.docx"] == before["memo.docx"]
    assert "turbines.csv" not in after and "survey.txt" in after
