"""An e-mail's attachments as items of their own (docs/decisions/0048), through the real app
on SQLite and PostgreSQL: a message carrying a PDF, a DOCX and a CSV becomes four items, each
attachment processed and searchable on its own and linked to the message both ways (the item
pages say "An attachment of" and list "Attachments"); an unsupported file, an attached
message and a repeated file are listed by name with the reason. A hostile message (many
attachments, messages nested in messages, an attachment over the upload limit) stays within
the bounds. Deleting the message deletes its attachments, each audited; deleting an
attachment leaves the message, which lists it as deleted."""

from __future__ import annotations

import email
import email.policy
from collections.abc import Iterator
from email.message import EmailMessage

import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.vocabulary import AuditAction
from relata.ingest.service import MAX_ATTACHMENTS, IngestRequest
from tests.fuzz.docgen import make_docx, make_pdf
from tests.fuzz.officegen import make_csv, make_eml
from tests.support.api import api_client
from tests.support.ingest import built, drain, workspace_id
from tests.support.web import web_client

DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PDF = make_pdf([["Quarry survey.", "The Ormsby quarry closed in 2019."]], title="Quarry survey")
DOCX = make_docx([("title", "Lockkeeper memo"), ("p", "The Penfold lock reopened in May.")])
CSV = make_csv(4)
PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none", max_upload_bytes=256 * 1024) as cont:
        yield cont


def _message() -> bytes:
    return make_eml(
        subject="Site reports",
        attachments=[
            ("quarry.pdf", "application/pdf", PDF),
            ("memo.docx", DOCX_TYPE, DOCX),
            ("turbines.csv", "text/csv", CSV),
            ("logo.png", "image/png", PNG),
            ("forwarded.eml", "message/rfc822", make_eml(subject="Inner")),
            ("copy.csv", "text/csv", CSV),
        ],
    )


@pytest.mark.both_dialects
def test_a_messages_attachments_become_linked_items(c: Container) -> None:
    ws = workspace_id(c)
    with api_client(c) as client:
        r = client.post(
            "/api/v1/items", files={"file": ("reports.eml", _message(), "message/rfc822")}
        )
        assert r.status_code == 201, r.text
        message_id = r.json()["id"]
        drain(c)
        listed = {i["id"]: i for i in client.get("/api/v1/items").json()["items"]}
        assert len(listed) == 4
        assert all(i["status"] == "ready" for i in listed.values()), listed
        rows = c.items.attachments(ws, message_id)
        assert [(a.number, a.name) for a in rows] == [
            (1, "quarry.pdf"),
            (2, "memo.docx"),
            (3, "turbines.csv"),
            (4, "logo.png"),
            (5, "forwarded.eml"),
            (6, "copy.csv"),
        ]
        made = {a.name: a.item_id for a in rows if a.item_id}
        assert set(made) == {"quarry.pdf", "memo.docx", "turbines.csv"}
        assert {listed[i]["source_type"] for i in made.values()} == {"pdf", "docx", "csv"}
        reasons = {a.name: a.reason for a in rows if a.item_id is None}
        assert "PNG image" in (reasons["logo.png"] or "")
        assert reasons["forwarded.eml"] == "an attached message is not read"
        assert "same content" in (reasons["copy.csv"] or "")
        for item_id in made.values():
            assert c.items.attachment_of(ws, item_id) == message_id
        assert c.items.attachment_of(ws, message_id) is None
        detail = client.get(f"/api/v1/items/{message_id}").json()
        assert [a["name"] for a in detail["attachments"]][:3] == list(made)
        assert detail["attachments"][3]["item_id"] is None and detail["attachments"][3]["reason"]
        child = client.get(f"/api/v1/items/{made['memo.docx']}").json()
        assert child["attachment_of"] == message_id and child["attachments"] == []

        # Each attachment is searchable as itself, the message by its own text only.
        def found(words: str) -> list[str]:
            r = client.get("/api/v1/search", params={"q": words, "legs": "text"})
            return [x["item"]["id"] for x in r.json()["results"]]

        assert found("Ormsby") == [made["quarry.pdf"]]
        assert found("Penfold") == [made["memo.docx"]]
        assert found("slipway") == [message_id]
    uploads = c.audit.list(ws, action=AuditAction.ITEM_UPLOADED)
    assert len(uploads) == 4


def test_the_item_pages_show_the_link_both_ways(c: Container) -> None:
    ws = workspace_id(c)
    message = c.ingest.ingest(ws, IngestRequest(data=_message(), filename="reports.eml"))
    drain(c)
    made = {a.name: a.item_id for a in c.items.attachments(ws, message.id) if a.item_id}
    with web_client(c) as client:
        page = client.get(f"/w/default/items/{message.id}").text
        assert ">Attachments</h2>" in page
        for name, item_id in made.items():
            assert f'data-attachment="{item_id}"' in page, name
        assert 'logo.png</span> <span class="sub reason">not read: ' in page
        assert "an attached message is not read" in page
        child = client.get(f"/w/default/items/{made['quarry.pdf']}").text
        assert ">Attachment of</h2>" in child
        assert f'href="/w/default/items/{message.id}" data-attachment-of>Site reports</a>' in child


def test_deleting_the_message_deletes_its_attachments_not_the_other_way(c: Container) -> None:
    ws = workspace_id(c)
    message = c.ingest.ingest(ws, IngestRequest(data=_message(), filename="reports.eml"))
    drain(c)
    made = {a.name: a.item_id for a in c.items.attachments(ws, message.id) if a.item_id}
    assert len(made) == 3
    with api_client(c) as client:
        gone = made.pop("memo.docx")
        assert client.delete(f"/api/v1/items/{gone}").status_code == 204
        [memo] = [a for a in c.items.attachments(ws, message.id) if a.name == "memo.docx"]
        assert memo.item_id is None and memo.reason is None  # listed as deleted
        assert client.get(f"/api/v1/items/{message.id}").status_code == 200

        assert client.delete(f"/api/v1/items/{message.id}").status_code == 204
        for item_id in made.values():
            assert client.get(f"/api/v1/items/{item_id}").status_code == 404
        assert client.get("/api/v1/items").json()["items"] == []
    deleted = c.audit.list(ws, action=AuditAction.ITEM_DELETED)
    assert len(deleted) == 4
    assert sum(1 for e in deleted if e.details.get("with_message") is True) == 2


def _nested(depth: int) -> EmailMessage:
    """A message forwarding a message forwarding ... ``depth`` levels deep (unencoded)."""
    inner = email.message_from_bytes(make_eml(subject="level 0"), policy=email.policy.default)
    for level in range(1, depth):
        outer = EmailMessage()
        outer["From"] = "a@example.org"
        outer["To"] = "b@example.org"
        outer["Subject"] = f"level {level}"
        outer.set_content("forwarding")
        outer.add_attachment(inner)
        inner = outer
    assert isinstance(inner, EmailMessage)
    return inner


def test_a_hostile_message_stays_within_the_bounds(c: Container) -> None:
    ws = workspace_id(c)
    notes = [(f"note-{n}.txt", "text/plain", b"Note %d about the weir." % n) for n in range(60)]
    flood = email.message_from_bytes(
        make_eml(subject="Flood of notes", attachments=notes), policy=email.policy.default
    )
    assert isinstance(flood, EmailMessage)
    flood.add_attachment(_nested(30))
    hostile = bytes(flood)
    assert len(hostile) < 64 * 1024
    message = c.ingest.ingest(ws, IngestRequest(data=hostile, filename="flood.eml"))
    drain(c)
    rows = c.items.attachments(ws, message.id)
    assert len(rows) == 61
    assert rows[60].reason == "an attached message is not read"
    made = [a for a in rows if a.item_id]
    assert [a.name for a in made] == [f"note-{n}.txt" for n in range(MAX_ATTACHMENTS)]
    limit = f"the message has more than {MAX_ATTACHMENTS} attachments, the limit"
    assert all(a.reason == limit for a in rows[MAX_ATTACHMENTS:60])
    assert c.items.get(ws, message.id).item.status.value == "ready"
    assert len(c.items.list(ws, limit=200)) == 1 + MAX_ATTACHMENTS
    # Only the outer message was walked: nothing of the nested ones became an item.
    assert not any(i.title.startswith("level") for i in c.items.list(ws, limit=200))


def test_a_message_past_the_mime_part_bound_makes_no_attachments(c: Container) -> None:
    ws = workspace_id(c)
    parts = [(f"p{n}.txt", "text/plain", b"part %d" % n) for n in range(250)]
    message = c.ingest.ingest(ws, IngestRequest(data=make_eml(attachments=parts)))
    drain(c)
    item = c.items.get(ws, message.id).item
    assert item.status.value == "failed" and "MIME parts" in (item.error or "")
    assert c.items.attachments(ws, message.id) == []
    assert [i.id for i in c.items.list(ws)] == [message.id]
