"""Item versions over HTTP and from the command line (TestClient against the real app,
SQLite): ``PUT /items/{id}/content`` by role, another workspace's item as 404, the identical
re-upload as a no-op, the versions listed and each kept original downloaded; ``relata
ingest PATH --replace ID`` and ``relata item ID``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from relata.bootstrap import Container
from relata.cli.main import main
from relata.config.settings import Settings
from relata.domain.vocabulary import AuditAction, Role
from relata.ingest.service import IngestRequest
from tests.support.api import api_client
from tests.support.ingest import built, drain, workspace_id

FIRST = b"# Slipway report\n\nRepairs to the slipway began in May 2024.\n"
SECOND = b"# Slipway report\n\nRepairs to the slipway were finished in August 2024.\n"


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(
        settings, embedding_provider="none", max_upload_bytes=64 * 1024, max_json_bytes=4096
    ) as cont:
        yield cont


@pytest.fixture
def client(c: Container) -> Iterator[TestClient]:
    with api_client(c, role=Role.EDITOR, raise_server_exceptions=False) as tc:
        yield tc


def _put(client: TestClient, item_id: str, data: bytes, name: str = "report.md") -> Any:
    return client.put(
        f"/api/v1/items/{item_id}/content", files={"file": (name, data, "text/markdown")}
    )


def _item(c: Container) -> str:
    item = c.ingest.ingest(workspace_id(c), IngestRequest(data=FIRST, filename="report.md"))
    drain(c)
    return item.id


def test_an_editor_uploads_a_new_version_and_downloads_both(
    client: TestClient, c: Container
) -> None:
    item_id = _item(c)
    resp = _put(client, item_id, SECOND, "report-v2.md")
    assert resp.status_code == 202, resp.text
    body = resp.json()
    assert body["unchanged"] is False and body["job_id"] and body["generation"] >= 2
    assert body["version"]["number"] == 2 and body["version"]["current"] is True
    assert body["version"]["created_by_kind"] == "token" and body["version"]["created_by"]
    assert body["item"]["id"] == item_id and body["item"]["status"] == "pending"
    drain(c)

    listed = client.get(f"/api/v1/items/{item_id}/versions").json()
    assert [(v["number"], v["current"], v["original_kept"]) for v in listed["versions"]] == [
        (2, True, True),
        (1, False, True),
    ]
    assert listed["versions"][1]["filename"] == "report.md"
    old = client.get(f"/api/v1/items/{item_id}/versions/1/original")
    assert old.status_code == 200 and old.content == FIRST
    assert old.headers["content-type"].startswith("text/markdown")
    assert old.headers["content-disposition"].startswith("attachment;")
    assert client.get(f"/api/v1/items/{item_id}/versions/2/original").content == SECOND
    assert client.get(f"/api/v1/items/{item_id}/original").content == SECOND
    text = client.get(f"/api/v1/items/{item_id}/text").json()["text"]
    assert "August 2024" in text and "May 2024" not in text
    missing = client.get(f"/api/v1/items/{item_id}/versions/3/original")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    [event] = c.audit.list(workspace_id(c), action=AuditAction.ITEM_VERSION_UPLOADED)
    assert event.target_id == item_id and event.details["version"] == 2


def test_a_version_is_bounded_as_an_upload_not_as_a_json_request(
    client: TestClient, c: Container
) -> None:
    item_id = _item(c)
    larger = b"# Slipway report\n\n" + b"The slipway was repaired again. " * 1000
    assert 4096 < len(larger) < 64 * 1024
    assert _put(client, item_id, larger).status_code == 202


def test_the_same_bytes_again_answer_unchanged(client: TestClient, c: Container) -> None:
    item_id = _item(c)
    resp = _put(client, item_id, FIRST, "renamed.md")
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["unchanged"] is True and body["job_id"] is None
    assert body["version"]["number"] == 1
    assert len(client.get(f"/api/v1/items/{item_id}/versions").json()["versions"]) == 1
    assert c.audit.list(workspace_id(c), action=AuditAction.ITEM_VERSION_UPLOADED) == []


def test_a_viewer_may_list_and_download_but_not_upload(c: Container) -> None:
    item_id = _item(c)
    with api_client(c, role=Role.VIEWER, raise_server_exceptions=False) as viewer:
        resp = _put(viewer, item_id, SECOND)
        assert resp.status_code == 403 and resp.json()["error"]["code"] == "forbidden"
        assert viewer.get(f"/api/v1/items/{item_id}/versions").status_code == 200
        assert viewer.get(f"/api/v1/items/{item_id}/versions/1/original").content == FIRST
    assert [v.number for v in c.versions.list(workspace_id(c), item_id)] == [1]


def test_another_workspaces_item_is_not_found(client: TestClient, c: Container) -> None:
    other, _ = c.workspaces.ensure("other")
    theirs = c.ingest.ingest(other.id, IngestRequest(data=FIRST, filename="theirs.md"))
    for resp in (
        _put(client, theirs.id, SECOND),
        _put(client, theirs.id, b""),  # 404 whatever the body
        client.get(f"/api/v1/items/{theirs.id}/versions"),
        client.get(f"/api/v1/items/{theirs.id}/versions/1/original"),
    ):
        assert resp.status_code == 404 and resp.json()["error"]["code"] == "not_found"
    assert [v.number for v in c.versions.list(other.id, theirs.id)] == [1]


def test_refusals_name_the_problem(client: TestClient, c: Container) -> None:
    item_id = _item(c)
    other = c.ingest.ingest(workspace_id(c), IngestRequest(data=SECOND, filename="b.md"))
    dup = _put(client, item_id, SECOND)
    assert dup.status_code == 409 and dup.json()["error"]["code"] == "duplicate_item"
    assert other.id in dup.text
    empty = _put(client, item_id, b"   ")
    assert empty.status_code == 400 and empty.json()["error"]["field"] == "file"
    big = _put(client, item_id, b"x" * (65 * 1024))
    assert big.status_code == 413 and "RELATA_MAX_UPLOAD_BYTES" in big.text
    binary = _put(client, item_id, b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, "x.png")
    assert binary.status_code == 415
    json_body = client.put(f"/api/v1/items/{item_id}/content", json={"text": "x"})
    assert json_body.status_code == 415
    extra = client.put(
        f"/api/v1/items/{item_id}/content",
        files={"file": ("a.md", SECOND, "text/markdown")},
        data={"title": "t"},
    )
    assert extra.status_code == 400
    assert [v.number for v in c.versions.list(workspace_id(c), item_id)] == [1]


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


def test_relata_ingest_replace_then_relata_item_lists_versions(
    cli: Container, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    item_id = _item(cli)
    path = tmp_path / "report-v2.md"
    path.write_bytes(SECOND)
    assert main(["ingest", str(path), "--replace", item_id]) == 0
    out = capsys.readouterr().out
    assert f"{item_id}: version 2" in out and "processed: ready" in out
    assert main(["ingest", str(path), "--replace", item_id]) == 0
    assert "unchanged" in capsys.readouterr().out
    assert main(["item", item_id]) == 0
    shown = capsys.readouterr().out
    assert "versions (2):" in shown and "current" in shown and "report-v2.md" in shown
    assert main(["ingest", str(path), "--replace", "no-such-id"]) == 1
    assert "no item 'no-such-id'" in capsys.readouterr().err
    assert main(["ingest", str(path), str(path), "--replace", item_id]) == 2
