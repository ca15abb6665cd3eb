"""``relata serve --processes 2`` as a real subprocess (docs/decisions/0036-http-processes.md):
the start-up work runs once; a session made in one HTTP process is valid in the other; the
sign-in failure limit counts across them; an HTTP process that dies is restarted; SIGTERM
stops everything.

Which process answers a connection is the kernel's choice, so the test decides it: it
SIGSTOPs one HTTP process, and a stopped process accepts nothing, so every request goes to
the other one.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.slow

PASSWORD = "correct horse battery staple"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return sorted(found)


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    base: str
    log: Path

    def records(self) -> list[dict[str, object]]:
        lines = self.log.read_text().split("\n")[:-1]
        return [json.loads(line) for line in lines if line.startswith("{")]

    def http_pids(self) -> list[int]:
        return _children(self.proc.pid)


def _env(tmp_path: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELATA_")}
    env.update(
        RELATA_DATA_DIR=str(tmp_path / "data"),
        RELATA_HTTP_ADDR=f"127.0.0.1:{port}",
        RELATA_EMBEDDING_PROVIDER="none",
        RELATA_WORKERS="1",
        RELATA_SHUTDOWN_TIMEOUT="5",
        RELATA_LOGIN_MAX_FAILURES="5",
        RELATA_LOG_FORMAT="json",
    )
    return env


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    port = _free_port()
    env = _env(tmp_path, port)
    relata = [sys.executable, "-m", "relata.cli.main"]
    subprocess.run(
        [*relata, "createadmin", "--username", "ada", "--password-stdin"],
        input=PASSWORD + "\n",
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [*relata, "serve", "--processes", "2"], env=env, stdout=out, stderr=out
        )
    s = Served(proc, f"http://127.0.0.1:{port}", log)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            if len(s.http_pids()) == 2 and _answers(s.base):
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"relata serve did not start:\n{log.read_text()}")
        yield s
    finally:
        for pid in s.http_pids():
            _signal(pid, signal.SIGCONT)
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            finally:
                if proc.poll() is None:
                    proc.kill()


def _answers(base: str) -> bool:
    try:
        return httpx.get(base + "/healthz", timeout=2).status_code < 500
    except httpx.HTTPError:
        return False


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _sign_in(base: str, password: str) -> httpx.Response:
    # A new connection per request: the kernel hands it to a process accepting now.
    return httpx.post(
        base + "/api/v1/auth/sign-in",
        json={"username": "ada", "password": password},
        headers={"Connection": "close"},
        timeout=30,
    )


def _only(s: Served, pid: int) -> None:
    """Let only HTTP process ``pid`` accept (stop the other, resume this one)."""
    for other in s.http_pids():
        _signal(other, signal.SIGCONT if other == pid else signal.SIGSTOP)


def test_two_http_processes_share_sessions_and_the_sign_in_limit(served: Served) -> None:
    s = served
    a, b = s.http_pids()
    records = s.records()
    # The start-up work ran once, in the supervisor.
    assert [r["msg"] for r in records].count("starting") == 1, s.log.read_text()
    assert [r["msg"] for r in records].count("recovery") == 1

    _only(s, a)
    signed = _sign_in(s.base, PASSWORD)
    assert signed.status_code == 200, signed.text
    cookies = {k: v for k, v in signed.cookies.items()}
    _only(s, b)  # the session made in a is valid in b
    found = httpx.get(
        s.base + "/api/v1/search", params={"q": "anything"}, cookies=cookies, timeout=30
    )
    assert found.status_code == 200, found.text
    me = httpx.get(s.base + "/api/v1/auth/me", cookies=cookies, timeout=30)
    assert me.status_code == 200 and me.json()["user"]["username"] == "ada", me.text

    # Five failures allowed (RELATA_LOGIN_MAX_FAILURES=5): three in b, two in a, then the
    # sixth attempt, in a, is refused even with the right password. Counted per process, a
    # would have seen two failures and let it in.
    for _ in range(3):
        assert _sign_in(s.base, "wrong").status_code == 401
    _only(s, a)
    for _ in range(2):
        assert _sign_in(s.base, "wrong").status_code == 401
    refused = _sign_in(s.base, PASSWORD)
    assert refused.status_code == 429, refused.text
    _only(s, b)
    assert _sign_in(s.base, PASSWORD).status_code == 429

    # The CSRF token a gave is accepted by b (it derives from the session, not a process).
    assert (
        httpx.post(s.base + "/api/v1/auth/sign-out", cookies=cookies, timeout=30).status_code == 403
    )
    csrf = signed.json()["csrf_token"]
    out = httpx.post(
        s.base + "/api/v1/auth/sign-out",
        cookies=cookies,
        headers={"X-CSRF-Token": csrf},
        timeout=30,
    )
    assert out.status_code == 204, out.text


def test_a_dead_http_process_is_restarted_and_sigterm_stops_them_all(served: Served) -> None:
    s = served
    a, b = s.http_pids()
    os.kill(a, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        pids = s.http_pids()
        if len(pids) == 2 and a not in pids:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"no restart:\n{s.log.read_text()}")
    assert b in pids
    while not _answers(s.base):  # served throughout by b, then by both
        time.sleep(0.2)
    s.proc.send_signal(signal.SIGTERM)
    assert s.proc.wait(30) == 0, s.log.read_text()
    assert s.http_pids() == []
    messages = [r["msg"] for r in s.records()]
    assert "HTTP process exited; restarting it" in messages
