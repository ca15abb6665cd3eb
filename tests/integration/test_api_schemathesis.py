"""A bounded schemathesis run against the OpenAPI document ``relata serve`` serves: every check
(``--checks all``: no 5xx, responses, statuses, headers and content types as documented,
schema-invalid input refused, schema-valid input accepted, 405s with a true Allow, stateful
sequences along the documented links), 0 failures.

The server is the real ``relata serve`` on 127.0.0.1 (in-process workers, a fresh data dir,
no embedding provider), with an administrator whose API token every request carries (the
``ignored_auth`` check also sends requests without it and expects them refused).
The seed is fixed so a failure reproduces; the number of examples is
bounded so the whole test takes about a minute on 2 cores. The few schema-valid requests the
API refuses by rules OpenAPI cannot state are listed, with why, in
schemathesis/schemathesis.toml.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.slow

CONFIG = Path(__file__).parent / "schemathesis" / "schemathesis.toml"
MAX_EXAMPLES = 25
SEED = 20240501
RUN_TIMEOUT_S = 240
START_TIMEOUT_S = 60
PASSWORD = "schemathesis-password-1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _cli(env: dict[str, str], *args: str, stdin: str = "") -> str:
    done = subprocess.run(
        [sys.executable, "-m", "relata.cli.main", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The base URL of ``relata serve`` on a free port of 127.0.0.1, and an owner's token."""
    port = _free_port()
    env = {
        **os.environ,
        "RELATA_DATA_DIR": str(tmp_path / "data"),
        "RELATA_DATABASE_URL": "",
        "RELATA_HTTP_ADDR": f"127.0.0.1:{port}",
        "RELATA_EMBEDDING_PROVIDER": "none",
        "RELATA_LOG_LEVEL": "warning",
    }
    _cli(env, "createadmin", "--username", "admin", "--password-stdin", stdin=PASSWORD + "\n")
    token = _cli(env, "tokens", "create", "--user", "admin", "--name", "schemathesis").strip()
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "relata.cli.main", "serve"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise AssertionError((tmp_path / "serve.log").read_text(errors="replace"))
            try:
                if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("relata serve did not become ready")
            time.sleep(0.2)
        yield base, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


def test_schemathesis_finds_no_failure_in_the_served_api(
    served: tuple[str, str], tmp_path: Path
) -> None:
    served, token = served[0], served[1]
    cmd = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "--config-file",
        str(CONFIG),
        "--no-color",
        "run",
        f"{served}/api/v1/openapi.json",
        "--checks",
        "all",
        "--header",
        f"Authorization: Bearer {token}",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--seed",
        str(SEED),
        # One worker: hypothesis's lambda-description LRU cache is not thread-safe, and two
        # schemathesis worker threads sharing it failed a CI run with an internal
        # AssertionError (`assert entry.key == key` in hypothesis/internal/cache.py).
        "--workers",
        "1",
        "--request-timeout",
        "10",
        "--report",
        "junit",
        "--report-dir",
        str(tmp_path / "report"),
    ]
    hooks = {"SCHEMATHESIS_HOOKS": "hooks", "PYTHONPATH": str(CONFIG.parent)}
    run = subprocess.run(
        cmd,
        env={**os.environ, **hooks},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-12000:]
    summary = re.findall(r"^=+ (.+) in [\d.]+s =+$", output, flags=re.MULTILINE)
    assert summary and "failure" not in summary[-1] and "error" not in summary[-1], output[-4000:]
    assert re.search(r"\d+ generated, (\d+) passed", output), output[-4000:]
    # Every operation of the document was exercised, not only some.
    selected = re.search(r"Selected: (\d+)/(\d+)", output)
    tested = re.search(r"Tested: (\d+)", output)
    assert selected and tested, output[-4000:]
    assert selected.group(1) == selected.group(2) == tested.group(1) != "0", output[-4000:]
