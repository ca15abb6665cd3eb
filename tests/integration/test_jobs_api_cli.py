"""Jobs as users see them: ``GET /api/v1/jobs`` (workspace-scoped, filtered, paged, bad filters
named), ``relata jobs`` and ``relata worker`` (a real process, drained by SIGTERM)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from relata.bootstrap import Container
from relata.cli.main import main
from relata.config.settings import Settings
from relata.domain.models import JobStatus
from tests.support.api import api_client
from tests.support.jobs import build_jobs_container, wait_for

UNHANDLED = "nobody.handles.this"


@pytest.fixture
def jc(settings: Settings) -> Iterator[Container]:
    c = build_jobs_container(settings)
    c.registry.register("test.kind", lambda ctx: None)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def ws(jc: Container) -> str:
    return jc.workspaces.resolve().id


def test_the_jobs_endpoint_lists_filters_and_pages_the_callers_workspace(
    jc: Container, ws: str
) -> None:
    mine = [jc.queue.enqueue("test.kind", ws, {"n": i}) for i in range(3)]
    claimed = jc.queue.claim("w/1")
    assert claimed is not None
    jc.queue.fail(claimed.id, "w/1", "Permanent: broken")
    other, _ = jc.workspaces.ensure("other")
    jc.queue.enqueue("test.kind", other.id, {})
    client = api_client(jc)

    body = client.get("/api/v1/jobs").json()
    assert {j["id"] for j in body["jobs"]} == {j.id for j in mine}
    assert "payload" not in body["jobs"][0]

    failed = client.get("/api/v1/jobs", params={"status": "failed", "kind": "test.kind"}).json()
    assert [(j["id"], j["last_error"]) for j in failed["jobs"]] == [
        (claimed.id, "Permanent: broken")
    ]

    page = client.get("/api/v1/jobs", params={"limit": 2}).json()
    assert len(page["jobs"]) == 2 and page["next_offset"] == 2
    rest = client.get("/api/v1/jobs", params={"limit": 2, "offset": 2}).json()
    assert len(rest["jobs"]) == 1 and rest["next_offset"] is None


def test_a_bad_jobs_filter_is_a_400_naming_the_parameter(jc: Container) -> None:
    client = api_client(jc)
    cases: list[tuple[dict[str, str | int], str]] = [
        ({"status": "done"}, "status"),
        ({"kind": "unknown"}, "kind"),
        ({"limit": 0}, "limit"),
        ({"offset": -1}, "offset"),
    ]
    for params, field in cases:
        response = client.get("/api/v1/jobs", params=params)
        assert response.status_code == 400, params
        error = response.json()["error"]
        assert error["code"] == "invalid_request" and error["field"] == field


def _cli_env(monkeypatch: pytest.MonkeyPatch, jc: Container) -> None:
    for key in [k for k in os.environ if k.startswith("RELATA_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("RELATA_DATA_DIR", jc.settings.data_dir)
    monkeypatch.setenv("RELATA_DATABASE_URL", jc.settings.resolved_database_url)


def test_relata_jobs_lists_as_json_and_as_a_table(
    jc: Container, ws: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _cli_env(monkeypatch, jc)
    job = jc.queue.enqueue(UNHANDLED, ws, {}, idempotency_key="k1")
    assert main(["jobs", "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["id"] == job.id and listed["status"] == "pending"
    assert listed["idempotency_key"] == "k1"
    assert main(["jobs", "--status", "pending"]) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[0].split()[:3] == ["ID", "KIND", "STATUS"]
    assert job.id in table
    assert main(["jobs", "--status", "failed"]) == 0
    assert capsys.readouterr().out.strip() == "no jobs"
    assert main(["jobs", "--kind", "unknown"]) == 1
    assert "kind must be one of" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["jobs", "--status", "bogus"])
    assert exit_.value.code == 2
    assert "--status" in capsys.readouterr().err


@pytest.fixture
def sqlite_jc(tmp_path: Path) -> Iterator[Container]:
    """SQLite only: the worker's claiming is dialect-tested elsewhere; this is the command."""
    c = build_jobs_container(Settings(data_dir=str(tmp_path / "data")))
    try:
        yield c
    finally:
        c.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


#: ``serve`` is one process (HTTP and workers together); ``serve-2`` a supervisor running the
#: workers and two HTTP processes (docs/decisions/0036).
_ARGV = {
    "worker": ["worker"],
    "serve": ["serve", "--processes", "1"],
    "serve-2": ["serve", "--processes", "2"],
}


@pytest.mark.slow  # real processes
@pytest.mark.parametrize("command", ["worker", "serve", "serve-2"])
def test_worker_and_serve_run_jobs_and_drain_on_sigterm(
    sqlite_jc: Container, tmp_path: Path, command: str
) -> None:
    jc = sqlite_jc
    ws = jc.workspaces.resolve().id
    job = jc.queue.enqueue(UNHANDLED, ws, {})
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELATA_")}
    env.update(
        RELATA_DATA_DIR=jc.settings.data_dir,
        RELATA_DATABASE_URL=jc.settings.resolved_database_url,
        RELATA_HTTP_ADDR=f"127.0.0.1:{_free_port()}",
        RELATA_WORKERS="1",
        RELATA_JOB_POLL_SECONDS="0.05",
        RELATA_SHUTDOWN_TIMEOUT="5",
        RELATA_LOG_FORMAT="text",
    )
    log = tmp_path / "relata.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "relata.cli.main", *_ARGV[command]],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )

    def settled() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"relata {command} exited early:\n{log.read_text()}")
        return jc.queue.get(ws, job.id).status is JobStatus.FAILED

    try:
        wait_for(settled, what=f"relata {command} to settle the job")
        if command.startswith("serve"):  # the HTTP side is up before we ask it to stop
            up = "Uvicorn running" if command == "serve" else "HTTP process serving"
            n = 2 if command == "serve-2" else 1
            wait_for(lambda: log.read_text().count(up) == n, what="HTTP", timeout=120)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert jc.queue.get(ws, job.id).last_error == f"no handler registered for kind {UNHANDLED!r}"
    text = log.read_text()
    assert "workers started" in text and "workers stopped" in text
    if command.startswith("serve"):  # HTTP stops accepting first, then the workers drain
        assert text.index("Shutting down") < text.index("workers stopped")
    if command == "serve-2":  # both HTTP processes drained and exited cleanly
        assert "exit_codes=[0, 0]" in text, text
