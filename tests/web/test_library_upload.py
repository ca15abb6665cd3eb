"""The library's upload: several files in one post without JavaScript (bounded, CSRF-checked,
each file reported), what upload.js relies on in the API, and the live-status hooks."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from relata.api.limits import BodyLimits
from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.vocabulary import Role
from relata.ingest.service import IngestRequest
from relata.web.context import MAX_FORM_FILES
from tests.support.ingest import built, originals_of
from tests.support.web import csrf, web_app_client, web_client
from tests.support.xss import XSS, leaked

MAX_UPLOAD = 16 * 1024
UPLOAD = "/w/default/library/upload"
LIBRARY = "/w/default/library"
#: The start of a Windows executable: binary, not a document Relata reads.
#: The most bytes one post to the library's upload form may carry.
BODY_LIMIT = BodyLimits(json=1 << 20, form=1 << 18, upload_file=MAX_UPLOAD).upload_limit(
    MAX_FORM_FILES
)
EXE = b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff\x00\x00" + bytes(range(256)) * 4


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none", max_upload_bytes=MAX_UPLOAD) as container:
        yield container


def _ws(c: Container) -> str:
    return c.workspaces.resolve().id


def _items(c: Container) -> list[tuple[str, str]]:
    return sorted((i.id, i.title) for i in c.items.list(_ws(c), limit=100))


def _stored(c: Container) -> list[Path]:
    return originals_of(c, _ws(c))


def unsafe(html: str) -> list[str]:
    """``leaked(html)``, but for the one corpus string with nothing to escape
    (``javascript:...``), which is inert as text: it counts only where a URL is taken."""
    found = [s for s in leaked(html) if not s.startswith("javascript:")]
    if re.search(r"""(href|src|action)\s*=\s*["']?\s*javascript:""", html, re.I):
        found.append("a javascript: URL")
    return found


def _row(html: str, filename: str) -> str:
    """The results table's row of ``filename``."""
    for row in re.findall(r"<tr class=\"outcome-[a-z]+\">.*?</tr>", html, re.S):
        if f"<td>{filename}</td>" in row:
            return str(row)
    raise AssertionError(f"no row for {filename}")


def test_the_library_offers_an_upload_form_to_an_editor(c: Container) -> None:
    client = web_client(c, role=Role.EDITOR)
    token = csrf(client, LIBRARY)
    html = client.get(LIBRARY).text
    form = re.search(r"<form method=\"post\" action=\"/w/default/library/upload\"[^>]*>", html)
    assert form, "no upload form"
    assert 'enctype="multipart/form-data"' in form.group(0)
    assert f'data-csrf="{token}"' in form.group(0) and 'data-slug="default"' in form.group(0)
    assert f'data-max-bytes="{MAX_UPLOAD}"' in form.group(0)
    assert re.search(r'<input type="file" id="upload-files" name="files" multiple', html)
    assert '<label for="upload-files">' in html and "data-dropzone" in html
    assert '<ul class="uploads" id="upload-list" aria-live="polite"' in html
    assert '<script src="/static/upload.js" defer></script>' in html
    assert '<script src="/static/status.js" defer></script>' in html
    for name in ("upload.js", "status.js", "library.css"):
        assert web_app_client(c).get(f"/static/{name}").status_code == 200


def test_one_post_of_several_files_reports_each_and_stores_only_the_good_ones(
    c: Container,
) -> None:
    existing = c.ingest.ingest(
        _ws(c), IngestRequest(data=b"Harbour notes.\nThe tide was high.\n", filename="old.txt")
    )
    before = _stored(c)
    client = web_client(c, role=Role.EDITOR)
    token = csrf(client, LIBRARY)
    r = client.post(
        UPLOAD,
        data={"csrf_token": token},
        files=[
            (
                "files",
                ("fresh.md", b"# Fresh notes\n\nA seal was seen at dawn.\n", "text/markdown"),
            ),
            ("files", ("again.txt", b"Harbour notes.\nThe tide was high.\n", "text/plain")),
            ("files", ("setup.exe", EXE, "application/octet-stream")),
            ("files", ("empty.txt", b"", "text/plain")),
        ],
    )
    assert r.status_code == 200, r.text
    html = r.text
    assert "<h1>Upload results</h1>" in html
    assert "1 uploaded, 1 already in the library, 2 not stored." in html

    items = _items(c)
    assert len(items) == 2  # the existing one and the fresh one, nothing else
    fresh, title = next((i, t) for i, t in items if i != existing.id)
    uploaded = _row(html, "fresh.md")
    assert "Uploaded" in uploaded
    assert f'href="/w/default/items/{fresh}" data-title-of="{fresh}">{title}</a>' in uploaded
    assert f'data-live-status data-item-id="{fresh}"' in uploaded

    duplicate = _row(html, "again.txt")
    assert "Duplicate of" in duplicate
    assert f'href="/w/default/items/{existing.id}">{existing.title}</a>' in duplicate

    exe = _row(html, "setup.exe")
    assert "Rejected" in exe and "supported types are plain text, Markdown, JSON" in exe
    empty = _row(html, "empty.txt")
    assert "Rejected" in empty and "empty" in empty

    assert len(_stored(c)) == len(before) + 1  # one new original on disk


def test_a_file_over_the_upload_limit_is_rejected_alone(c: Container) -> None:
    client = web_client(c, role=Role.EDITOR)
    r = client.post(
        UPLOAD,
        data={"csrf_token": csrf(client, LIBRARY)},
        files=[
            ("files", ("big.txt", b"a" * (MAX_UPLOAD + 1), "text/plain")),
            ("files", ("small.txt", b"Small but real.\n", "text/plain")),
        ],
    )
    assert r.status_code == 200
    big = _row(r.text, "big.txt")
    assert "Rejected" in big and f"over the limit of {MAX_UPLOAD} bytes" in big
    assert "Uploaded" in _row(r.text, "small.txt")
    assert [t for _, t in _items(c)] == ["small.txt"]


def test_an_oversized_body_is_refused_before_anything_is_stored(c: Container) -> None:
    client = web_client(c, role=Role.EDITOR)
    token = csrf(client, LIBRARY)
    limit = BODY_LIMIT
    big = [("files", (f"f{n}.txt", b"x" * MAX_UPLOAD, "text/plain")) for n in range(6)]
    big += [("files", ("last.txt", b"y" * (limit - 6 * MAX_UPLOAD), "text/plain"))]
    r = client.post(UPLOAD, data={"csrf_token": token}, files=big)
    assert r.status_code == 413
    assert r.headers["content-type"].startswith("text/html")
    assert f"over the limit of {limit} bytes" in r.text
    assert f"at most {MAX_FORM_FILES} files of {MAX_UPLOAD} bytes each" in r.text
    assert _items(c) == [] and _stored(c) == []


def test_a_body_without_a_declared_length_stops_at_the_bound(c: Container) -> None:
    client = web_client(c, role=Role.EDITOR)
    token = csrf(client, LIBRARY)
    limit = BODY_LIMIT
    boundary = "relata-test-boundary"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="csrf_token"\r\n\r\n{token}\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="a.txt"\r\n'
        "Content-Type: text/plain\r\n\r\n"
    ).encode()
    sent = {"bytes": 0}

    def body() -> Iterator[bytes]:
        yield head
        for _ in range(limit // 4096 + 10):  # well past the bound, never ending the part
            sent["bytes"] += 4096
            yield b"z" * 4096

    r = client.post(
        UPLOAD,
        content=body(),
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    assert "content-length" not in r.request.headers  # streamed: only the bound stops it
    assert r.status_code == 413 and f"over the limit of {limit} bytes" in r.text
    assert sent["bytes"] < limit + 64 * 1024  # it stopped reading near the bound
    assert _items(c) == [] and _stored(c) == []


@pytest.mark.parametrize("token", [None, "forged", ""])
def test_a_post_without_its_csrf_token_stores_nothing(c: Container, token: str | None) -> None:
    client = web_client(c, role=Role.EDITOR)
    csrf(client, LIBRARY)
    data = {} if token is None else {"csrf_token": token}
    r = client.post(
        UPLOAD, data=data, files=[("files", ("a.txt", b"Real text here.\n", "text/plain"))]
    )
    assert r.status_code == 403 and "CSRF" in r.text
    assert _items(c) == [] and _stored(c) == []


def test_a_viewer_sees_no_upload_form_and_cannot_upload(c: Container) -> None:
    client = web_client(c, role=Role.VIEWER)
    html = client.get(LIBRARY).text
    assert "library/upload" not in html and 'type="file"' not in html
    assert "upload.js" not in html
    r = client.post(
        UPLOAD,
        data={"csrf_token": csrf(client, LIBRARY)},
        files=[("files", ("a.txt", b"Real text here.\n", "text/plain"))],
    )
    assert r.status_code == 403 and "viewer cannot upload" in r.text
    assert _items(c) == []


def test_nobody_and_a_non_member_cannot_upload(c: Container) -> None:
    files = [("files", ("a.txt", b"Real text here.\n", "text/plain"))]
    anonymous = web_app_client(c).post(UPLOAD, data={"csrf_token": "x"}, files=files)
    # A post without a session: to sign-in (the form is not sent), nothing stored.
    assert anonymous.status_code == 303 and anonymous.headers["location"].startswith("/sign-in")
    c.workspaces.ensure("other")
    client = web_client(c, role=Role.OWNER)
    token = csrf(client, LIBRARY)
    r = client.post("/w/other/library/upload", data={"csrf_token": token}, files=files)
    assert r.status_code == 404
    assert _items(c) == []


def test_a_post_without_files_or_with_too_many_is_a_page_saying_so(c: Container) -> None:
    client = web_client(c, role=Role.EDITOR)
    token = csrf(client, LIBRARY)
    # What a browser sends for an empty picker: one part with an empty file name and no bytes.
    boundary = "relata-test-boundary"
    empty_picker = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="csrf_token"\r\n\r\n{token}\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename=""\r\n'
        f"Content-Type: application/octet-stream\r\n\r\n\r\n--{boundary}--\r\n"
    ).encode()
    none = client.post(
        UPLOAD,
        content=empty_picker,
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    assert none.status_code == 400 and "choose at least one file" in none.text
    blank = client.post(UPLOAD, data={"csrf_token": token}, files={"other": ("", b"")})
    assert blank.status_code == 400 and "choose at least one file" in blank.text
    text = client.post(UPLOAD, data={"csrf_token": token, "files": "not a file"})
    assert text.status_code == 400 and "files must be files, not text" in text.text
    many = [
        ("files", (f"n{n}.txt", f"Note number {n}.\n".encode(), "text/plain"))
        for n in range(MAX_FORM_FILES + 1)
    ]
    r = client.post(UPLOAD, data={"csrf_token": token}, files=many)
    assert r.status_code == 400 and f"at most {MAX_FORM_FILES} files at once" in r.text
    assert _items(c) == []


def test_a_file_name_from_the_xss_corpus_is_shown_escaped(c: Container) -> None:
    client = web_client(c, role=Role.EDITOR)
    files = [
        ("files", (name, f"Document {n} about seals.\n".encode(), "text/plain"))
        for n, name in enumerate(XSS)
    ]
    r = client.post(UPLOAD, data={"csrf_token": csrf(client, LIBRARY)}, files=files)
    assert r.status_code == 200
    assert r.text.count("Uploaded") == len(XSS)
    assert unsafe(r.text) == []
    assert unsafe(client.get(LIBRARY).text) == []


def test_what_upload_js_relies_on_in_the_api(c: Container) -> None:
    """upload.js posts each file to /api/v1/items with the session cookie, the page's token
    in X-CSRF-Token and the slug in X-Relata-Workspace; a duplicate's 409 names the
    existing item; status.js reads the status from GET /api/v1/items/{id}."""
    client: TestClient = web_client(c, role=Role.EDITOR)
    token = csrf(client, LIBRARY)
    headers = {"X-CSRF-Token": token, "X-Relata-Workspace": "default"}
    file = {"file": ("notes.txt", b"Seal counts rose this spring.\n", "text/plain")}
    created = client.post("/api/v1/items", headers=headers, files=file)
    assert created.status_code == 201, created.text
    item = created.json()
    again = client.post("/api/v1/items", headers=headers, files=file)
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "duplicate_item"
    assert again.json()["error"]["existing_id"] == item["id"]
    refused = client.post(
        "/api/v1/items", headers=headers, files={"file": ("x.exe", EXE, "application/x-dosexec")}
    )
    assert refused.status_code == 415 and "supported types" in refused.json()["error"]["message"]
    without = client.post("/api/v1/items", headers={"X-Relata-Workspace": "default"}, files=file)
    assert without.status_code == 403
    status = client.get(f"/api/v1/items/{item['id']}", headers={"X-Relata-Workspace": "default"})
    assert status.status_code == 200 and status.json()["status"] == "pending"


def test_rows_still_processing_are_marked_for_live_status(c: Container) -> None:
    """The first page is live as a whole (library.js, tests/web/test_library_live.py); the
    rows of a later page are followed one by one (status.js)."""
    pending = c.ingest.ingest(
        _ws(c), IngestRequest(data=b"Pending text for the pipeline.\n", filename="p.txt")
    )
    client = web_client(c, role=Role.VIEWER)
    html = client.get(LIBRARY).text
    assert re.search(rf'<tr data-row-of="{pending.id}" data-status="pending">', html)
    assert "data-live-status" not in html
    assert 'id="status-announcer" aria-live="polite"' in html
    assert (
        '<table class="items" data-slug="default" data-live-rows="/w/default/library/rows">' in html
    )
    assert '<script src="/static/library.js" defer></script>' in html
    later = client.get(f"{LIBRARY}?offset=1").text  # an empty later page: nothing live
    assert "data-live-rows" not in later and "library.js" not in later
