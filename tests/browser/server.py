"""The real ``relata serve`` for the browser tests and ``scripts/screenshots.py``, and the
Chromium they drive.

``start(data_dir)`` prepares a fresh data dir as a new user would (``relata createadmin``,
then ``relata seed``: the demo corpus ingested and processed before the server starts), then
starts ``relata serve`` on a free loopback port with its background workers on and no local
embedder (search runs on its full-text and knowledge legs; nothing here needs vectors), and
waits for ``/readyz``. ``launch(playwright)`` starts Debian's Chromium with the flags that
work on these machines (../shared/notes/STACK.md); Playwright never downloads a browser.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

import httpx

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Playwright

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
AXE = ROOT / "tests/support/browser/node_modules/axe-core/axe.min.js"

ADMIN = "admin"
PASSWORD = "browser-tour-password"  # a throwaway account in a temporary data dir
WORKSPACE = "default"
START_TIMEOUT = 60.0
SETUP_TIMEOUT = 300.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def relata_env(data_dir: Path, port: int) -> dict[str, str]:
    """The environment of every ``relata`` command here: none of the caller's RELATA_*."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELATA_")}
    env.update(
        RELATA_DATA_DIR=str(data_dir),
        RELATA_HTTP_ADDR=f"127.0.0.1:{port}",
        RELATA_EMBEDDING_PROVIDER="none",
        RELATA_WORKERS="2",
        RELATA_JOB_POLL_SECONDS="0.2",
        RELATA_SHUTDOWN_TIMEOUT="5",
    )
    return env


def relata(args: list[str], env: dict[str, str], stdin: str = "") -> str:
    """Run one ``relata`` command (this interpreter's package) and return its output; a
    failure raises with everything it printed."""
    r = subprocess.run(
        [sys.executable, "-m", "relata.cli.main", *args],
        cwd=ROOT,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=SETUP_TIMEOUT,
        check=False,
    )
    if r.returncode != 0:
        raise RuntimeError(f"relata {' '.join(args)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r.stdout


@dataclass
class Server:
    """A running ``relata serve``; ``output()`` is everything it has logged."""

    base_url: str
    data_dir: Path
    env: dict[str, str]
    log_path: Path
    proc: subprocess.Popen[bytes]
    _log: IO[bytes] = field(repr=False)

    def url(self, path: str) -> str:
        return self.base_url + path

    def workspace_url(self, page: str) -> str:
        return f"{self.base_url}/w/{WORKSPACE}/{page}"

    def output(self, tail: int = 200) -> str:
        lines = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        return "\n".join(lines[-tail:])

    def alive(self) -> bool:
        return self.proc.poll() is None

    def token(self, name: str) -> str:
        """A new API token of the administrator (``relata tokens create``)."""
        out = relata(["tokens", "create", "--user", ADMIN, "--name", name], self.env)
        return out.splitlines()[0].strip()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()


def start(data_dir: Path) -> Server:
    """A new data dir with the administrator and the processed demo corpus, served."""
    port = free_port()
    env = relata_env(data_dir, port)
    data_dir.mkdir(parents=True, exist_ok=True)
    relata(["createadmin", "--username", ADMIN, "--password-stdin"], env, stdin=PASSWORD + "\n")
    relata(["seed", "--timeout", str(SETUP_TIMEOUT)], env)
    return serve(data_dir, env, port)


def serve(data_dir: Path, env: dict[str, str], port: int) -> Server:
    """``relata serve`` on ``data_dir`` with ``env`` (``relata_env``), once it is ready."""
    data_dir.mkdir(parents=True, exist_ok=True)
    log_path = data_dir / "serve.log"
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "relata.cli.main", "serve"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    server = Server(f"http://127.0.0.1:{port}", data_dir, env, log_path, proc, log)
    try:
        _wait_ready(server)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_ready(server: Server) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if not server.alive():
            raise RuntimeError(f"relata serve exited {server.proc.returncode}:\n{server.output()}")
        try:
            if httpx.get(server.url("/readyz"), timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"relata serve was not ready in {START_TIMEOUT:.0f} s:\n{server.output()}")


def launch(playwright: Playwright) -> Browser:
    """Debian's Chromium, headless (never a browser Playwright would download)."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS))


def sign_in(page: Page, server: Server, username: str = ADMIN, password: str = PASSWORD) -> None:
    """Sign in through the form, as a person does; ends on the library."""
    page.goto(server.url("/sign-in"))
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"**/w/{WORKSPACE}/library")
