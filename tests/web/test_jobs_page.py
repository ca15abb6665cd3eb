"""The jobs page: the demo's jobs with their items, a failed job's error, the status filter and
paging, retry (a failed stage job reprocesses its item from that stage; a failed re-embedding
starts again) for editors only and with the form's token, and the data its live status polls."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from markupsafe import escape

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.models import ItemStatus
from relata.domain.vocabulary import AuditAction, Role
from relata.embeddings.reembed import REEMBED_WORKSPACE
from relata.ingest.service import IngestRequest
from relata.web.pages.jobs import PAGE_SIZE
from tests.support.demo import DemoSnapshot
from tests.support.fake_embedder import FakeEmbedder
from tests.support.ingest import built, drain, workspace_id
from tests.support.web import csrf, web_client
from tests.support.xss import XSS, leaked

JOBS = "/w/default/jobs"
_ROW = re.compile(r'<tr data-job-id="([^"]+)"')


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none") as container:
        yield container


def _broken(c: Container, title: str = "Broken scan") -> str:
    """An item whose parse stage fails (a PDF with nothing after its header), processed."""
    ws = workspace_id(c)
    item = c.ingest.ingest(ws, IngestRequest(data=b"%PDF-1.7\n", filename="scan.pdf", title=title))
    drain(c)
    assert c.items.get(ws, item.id).item.status is ItemStatus.FAILED
    return item.id


def _failed_job_id(c: Container, item_id: str) -> str:
    [job] = [
        j
        for j in c.queue.list(workspace_id(c), status="failed")
        if j.payload.get("item_id") == item_id
    ]
    return job.id


def _ids(text: str) -> list[str]:
    return _ROW.findall(text)


def test_the_page_lists_the_demos_jobs_with_their_items_and_a_failures_error(
    demo_container: Container, demo_snapshot: DemoSnapshot
) -> None:
    c, items = demo_container, demo_snapshot.ids
    broken = _broken(c)
    ws = workspace_id(c)
    client = web_client(c, role=Role.EDITOR)
    r = client.get(JOBS)
    assert r.status_code == 200
    assert "<h1>Jobs</h1>" in r.text
    newest = c.queue.list(ws, limit=PAGE_SIZE)
    assert _ids(r.text) == [j.id for j in newest]
    assert "parse_item" in r.text and "succeeded" in r.text
    assert f'href="/w/default/items/{broken}">Broken scan</a>' in r.text
    failed = c.queue.get(ws, _failed_job_id(c, broken))
    assert failed.last_error and "the PDF cannot be read" in failed.last_error
    assert str(escape(failed.last_error)) in r.text
    assert r.text.count("Retry<span") == 1  # only the failed job offers it

    only_failed = client.get(JOBS, params={"status": "failed"})
    assert _ids(only_failed.text) == [failed.id]
    assert "selected>failed" in only_failed.text
    done = client.get(JOBS, params={"status": "succeeded"})
    assert failed.id not in done.text and 'class="status status-failed"' not in done.text
    parses = client.get(JOBS, params={"kind": "parse_item"})
    assert _ids(parses.text) == [j.id for j in c.queue.list(ws, kind="parse_item", limit=25)]
    assert "selected>parse_item" in parses.text
    both = client.get(JOBS, params={"kind": "parse_item", "status": "failed"})
    assert _ids(both.text) == [failed.id]
    # The demo's documents are linked from their jobs (on whichever page they are).
    pages = r.text + client.get(JOBS, params={"offset": PAGE_SIZE}).text
    for item_id in items.values():
        assert f'href="/w/default/items/{item_id}"' in pages


def test_pages_follow_each_other_without_overlap(demo_container: Container) -> None:
    c = demo_container
    _broken(c)
    client = web_client(c)
    every = [j.id for j in c.queue.list(workspace_id(c), limit=1000)]
    assert len(every) > PAGE_SIZE
    first = client.get(JOBS).text
    assert 'rel="next"' in first and 'rel="prev"' not in first
    second = client.get(JOBS, params={"offset": PAGE_SIZE}).text
    assert _ids(first) + _ids(second) == every[: 2 * PAGE_SIZE]
    assert 'rel="prev"' in second
    assert client.get(JOBS, params={"offset": 10_000}).text.count("<tr data-job-id") == 0


def test_a_bad_filter_is_a_page_naming_it(c: Container) -> None:
    client = web_client(c)
    r = client.get(JOBS, params={"status": "dead"})
    assert r.status_code == 400 and "status must be one of" in r.text
    odd = client.get(JOBS, params={"kind": "mine_bitcoin"})
    assert odd.status_code == 400 and "kind must be one of" in odd.text
    below = client.get(JOBS, params={"offset": -1})
    assert below.status_code == 400 and "offset" in below.text


def test_retrying_a_failed_stage_job_reprocesses_its_item_from_that_stage(
    c: Container,
) -> None:
    ws = workspace_id(c)
    broken = _broken(c)
    job_id = _failed_job_id(c, broken)
    client = web_client(c, role=Role.EDITOR)
    token = csrf(client, JOBS)
    r = client.post(f"{JOBS}/{job_id}/retry", data={"csrf_token": token})
    assert r.status_code == 303 and r.headers["location"] == f"{JOBS}?done=retried"
    assert c.items.get(ws, broken).item.status is ItemStatus.PENDING
    [again] = c.queue.list(ws, status="pending")
    assert again.kind == "parse_item" and again.payload["item_id"] == broken
    assert again.payload["generation"] == 2
    [event] = c.audit.list(ws, action=AuditAction.ITEM_REPROCESSED)
    assert event.target_id == broken and event.details["from_stage"] == "parse"
    assert event.actor_kind == "user"

    page = client.get(f"{JOBS}?done=retried")
    assert "Queued again." in page.text
    # The new job is pending, so the page asks its script to poll the API.
    assert 'aria-live="polite"' in page.text and 'data-live="true"' in page.text
    assert 'data-api="/api/v1/jobs?limit=' in page.text
    # What the script polls: the API, by the session cookie, the workspace by header.
    api = client.get("/api/v1/jobs", headers={"X-Relata-Workspace": "default"})
    assert api.status_code == 200
    assert again.id in {j["id"] for j in api.json()["jobs"]}

    drain(c)  # the broken PDF fails again: the retry ran the stage for real
    assert c.items.get(ws, broken).item.status is ItemStatus.FAILED
    assert len(c.queue.list(ws, status="failed")) == 2


def test_retrying_a_failed_reembedding_starts_it_again(settings: Settings) -> None:
    with built(settings, embedder=FakeEmbedder()) as c:
        ws = workspace_id(c)
        c.ingest.ingest(ws, IngestRequest(text="# Notes\n\nThe seal colony grew.", title="N"))
        drain(c)
        first = c.reembed.start(ws, all_chunks=True)
        assert first is not None
        claimed = c.queue.claim("test-worker")
        assert claimed is not None and claimed.id == first.id
        c.queue.fail(claimed.id, "test-worker", "Unavailable: the provider did not answer")
        client = web_client(c, role=Role.OWNER)
        page = client.get(JOBS)
        assert (
            "the workspace" in page.text and "Unavailable: the provider did not answer" in page.text
        )
        r = client.post(f"{JOBS}/{first.id}/retry", data={"csrf_token": csrf(client, JOBS)})
        assert r.status_code == 303 and r.headers["location"] == f"{JOBS}?done=retried"
        [pending] = c.queue.list(ws, status="pending")
        assert pending.kind == REEMBED_WORKSPACE and pending.payload.get("all") is True
        assert pending.id != first.id
        drain(c)
        counts = c.model_status.counts(ws)
        assert counts.vectors == counts.chunks == counts.embedded_current


def test_only_a_failed_job_is_retried_and_never_without_the_forms_token(c: Container) -> None:
    ws = workspace_id(c)
    broken = _broken(c)
    job_id = _failed_job_id(c, broken)
    c.ingest.ingest(ws, IngestRequest(text="Fine text.", title="Fine"))
    drain(c)
    [succeeded] = c.queue.list(ws, status="succeeded", limit=1)
    client = web_client(c)
    token = csrf(client, JOBS)

    forged = client.post(f"{JOBS}/{job_id}/retry", data={"csrf_token": "forged"})
    assert forged.status_code == 403
    missing = client.post(f"{JOBS}/{job_id}/retry", data={"note": "no token"})
    assert missing.status_code == 403
    assert c.items.get(ws, broken).item.status is ItemStatus.FAILED
    assert c.queue.list(ws, status="pending") == []

    done = client.post(f"{JOBS}/{succeeded.id}/retry", data={"csrf_token": token})
    assert done.status_code == 409 and "only a failed job can be retried" in done.text
    assert client.post(f"{JOBS}/nope/retry", data={"csrf_token": token}).status_code == 404


def test_a_viewer_sees_no_retry_and_cannot_post_it(c: Container) -> None:
    ws = workspace_id(c)
    job_id = _failed_job_id(c, _broken(c))
    viewer = web_client(c, role=Role.VIEWER)
    page = viewer.get(JOBS)
    assert page.status_code == 200 and job_id in page.text
    assert "/retry" not in page.text and "Retry" not in page.text
    r = viewer.post(f"{JOBS}/{job_id}/retry", data={"csrf_token": csrf(viewer, JOBS)})
    assert r.status_code == 403
    assert c.queue.list(ws, status="pending") == []


def test_another_workspaces_jobs_are_neither_listed_nor_retried(c: Container) -> None:
    other, _ = c.workspaces.ensure("other")
    item = c.ingest.ingest(
        other.id, IngestRequest(data=b"%PDF-1.7\n", filename="theirs.pdf", title="Theirs")
    )
    drain(c)
    [theirs] = c.queue.list(other.id, status="failed")
    assert theirs.payload["item_id"] == item.id
    client = web_client(c)
    page = client.get(JOBS)
    assert theirs.id not in page.text and "Theirs" not in page.text
    r = client.post(f"{JOBS}/{theirs.id}/retry", data={"csrf_token": csrf(client, JOBS)})
    assert r.status_code == 404
    assert c.queue.list(other.id, status="pending") == []
    assert client.get("/w/other/jobs").status_code == 404


def test_item_titles_from_the_xss_corpus_are_escaped(c: Container) -> None:
    ws = workspace_id(c)
    for n, title in enumerate(XSS):
        c.ingest.ingest(ws, IngestRequest(text=f"Harmless text number {n}.", title=title))
    _broken(c, title=XSS[0])
    drain(c)
    client = web_client(c, role=Role.EDITOR)
    text = client.get(JOBS).text
    assert str(escape(XSS[1])) in text  # the titles are there, as text
    assert leaked(text) == []
