"""The item page's versions: the list with downloads, the new-version form for editors (with
CSRF, bounded, inside the workspace only), the identical file as a no-op."""

from __future__ import annotations

import re
from typing import Any

from fastapi.testclient import TestClient

from relata.bootstrap import Container
from relata.domain.vocabulary import AuditAction, Role
from relata.ingest.service import IngestRequest
from tests.support.demo import DemoSnapshot
from tests.support.ingest import drain
from tests.support.web import csrf, web_client

PRESS = "sabrewing-array-press-release.txt"
CORRECTED = (
    b"Sabrewing Array press release (corrected)\n\n"
    b"The Sabrewing Array began commercial operation in June 2021, the operator said.\n"
)


def _post(client: TestClient, path: str, token: str | None, data: bytes, name: str) -> Any:
    fields = {"csrf_token": token} if token is not None else {}
    return client.post(path, data=fields, files={"file": (name, data, "text/plain")})


def test_an_editor_uploads_a_new_version_and_downloads_the_previous_one(
    demo_container: Container, demo_snapshot: DemoSnapshot
) -> None:
    c = demo_container
    ws = c.workspaces.resolve().id
    press = demo_snapshot.ids[PRESS]
    original = c.items.original(ws, press).path.read_bytes()
    client = web_client(c, role=Role.EDITOR)
    page = client.get(f"/w/default/items/{press}").text
    assert 'id="versions-heading"' in page and "(current)" in page
    assert f'action="/w/default/items/{press}/content"' in page
    token = csrf(client, f"/w/default/items/{press}")

    r = _post(client, f"/w/default/items/{press}/content", token, CORRECTED, "press-v2.txt")
    assert r.status_code == 303, r.text
    location = r.headers["location"]
    assert location == f"/w/default/items/{press}?done=version_uploaded"
    shown = client.get(location).text
    assert "New version uploaded." in shown
    drain(c)
    page = client.get(f"/w/default/items/{press}").text
    assert "press-v2.txt" in page and "June 2021" in page
    rows = re.findall(r"Download version (\d+)", page)
    assert rows == ["2", "1"]
    old = client.get(f"/w/default/items/{press}/versions/1/original")
    assert old.status_code == 200 and old.content == original
    assert old.headers["content-disposition"].startswith("attachment;")
    [event] = c.audit.list(ws, action=AuditAction.ITEM_VERSION_UPLOADED)
    assert event.target_id == press

    again = _post(client, f"/w/default/items/{press}/content", token, CORRECTED, "again.txt")
    assert again.headers["location"].endswith("?done=version_unchanged")
    assert "Nothing changed" in client.get(again.headers["location"]).text
    assert [v.number for v in c.versions.list(ws, press)] == [2, 1]


def test_viewers_forged_forms_and_other_workspaces_change_nothing(
    demo_container: Container, demo_snapshot: DemoSnapshot
) -> None:
    c = demo_container
    ws = c.workspaces.resolve().id
    press = demo_snapshot.ids[PRESS]
    viewer = web_client(c, role=Role.VIEWER)
    page = viewer.get(f"/w/default/items/{press}").text
    assert "Download version 1" in page and "/content" not in page
    token = csrf(viewer, f"/w/default/items/{press}")
    r = _post(viewer, f"/w/default/items/{press}/content", token, CORRECTED, "v.txt")
    assert r.status_code == 403

    owner = web_client(c, role=Role.OWNER)
    owner.get(f"/w/default/items/{press}")
    for forged in (None, "forged"):
        r = _post(owner, f"/w/default/items/{press}/content", forged, CORRECTED, "v.txt")
        assert r.status_code == 403

    other, _ = c.workspaces.ensure("elsewhere")
    theirs = c.ingest.ingest(other.id, IngestRequest(data=b"Elsewhere only.\n", filename="e.txt"))
    token = csrf(owner, f"/w/default/items/{press}")
    r = _post(owner, f"/w/default/items/{theirs.id}/content", token, CORRECTED, "v.txt")
    assert r.status_code == 404
    assert owner.get(f"/w/default/items/{theirs.id}/versions/1/original").status_code == 404
    assert [v.number for v in c.versions.list(ws, press)] == [1]
    assert [v.number for v in c.versions.list(other.id, theirs.id)] == [1]
