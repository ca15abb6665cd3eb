"""``relata serve --processes N`` (N > 1): a supervisor and N HTTP processes
(docs/decisions/0036-http-processes.md).

- **The supervisor** does the start-up work once (migrations, the default workspace, the
  recovery sweep of ``relata.ingest.recovery``), binds the listening socket, runs the
  RELATA_WORKERS background workers in its own process (so they are never in an HTTP
  process), and supervises the HTTP processes with ``relata.jobs.supervisor`` (ADR 33):
  one that dies is restarted with backoff; SIGTERM/SIGINT is forwarded once and each drains
  its requests within RELATA_SHUTDOWN_TIMEOUT, then the background workers drain.
- **An HTTP process** is a fresh interpreter (``relata serve --http-child``): it inherits
  only the listening socket, builds its own container, database engine, vector partitions
  and query-embedding session, and serves with uvicorn's own server on that socket. The
  kernel hands each new connection to one process blocked in ``accept``. It runs no start-up
  work and no background worker, and stops when the supervisor goes away.

Everything a request relies on beyond one process lives in the database: sessions, API
tokens, CSRF (derived from the session token), the sign-in failure counts
(``storage.sql.signin_failures``) and the AI-call slots (ADR 33).
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from relata.cli.common import CliError, open_container, settings_or_exit
from relata.cli.watch import start_background, stop_background

if TYPE_CHECKING:
    from relata.config.settings import Settings

log = logging.getLogger("relata.serve")

MAX_PROCESSES = 64
#: Connections the kernel queues while every HTTP process is busy (or being restarted).
LISTEN_BACKLOG = 2048


def http_processes(flag: int | None, settings: Settings) -> int:
    """``--processes``, else RELATA_HTTP_PROCESSES, else (0) one per usable core."""
    from relata.jobs.supervisor import usable_cores

    n = flag if flag is not None else settings.http_processes
    if n == 0 and flag is None:
        n = usable_cores()
    if not 1 <= n <= MAX_PROCESSES:
        raise CliError(f"relata serve needs 1-{MAX_PROCESSES} HTTP processes (--processes)")
    return n


def listen(host: str, port: int) -> socket.socket:
    """The listening socket every HTTP process inherits; a clear error when it is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(LISTEN_BACKLOG)
    except OSError as exc:
        sock.close()
        raise CliError(
            f"cannot listen on {host}:{port} (RELATA_HTTP_ADDR): {exc.strerror}"
        ) from exc
    sock.set_inheritable(True)
    return sock


def serve_supervised(processes: int, prepare: Any) -> int:
    """Run ``processes`` HTTP processes on one socket, and the background workers here.
    ``prepare(c)`` is ``relata serve``'s start-up work, run once before any child starts."""
    from relata.jobs.runner import shutdown_signals
    from relata.jobs.supervisor import ProcessSupervisor

    settings = settings_or_exit()
    with open_container(schema="any") as c:
        prepare(c)
        host, port = settings.http_addr
        sock = listen(host, port)
        child = [sys.executable, "-m", "relata.cli.main", "serve", "--http-child"]
        child += ["--listen-fd", str(sock.fileno()), "--supervisor-pid", str(os.getpid())]
        supervisor = ProcessSupervisor(
            [child] * processes,
            shutdown_timeout=settings.shutdown_timeout,
            pass_fds=[sock.fileno()],
            role="HTTP",
        )
        pool = c.worker_pool() if settings.workers > 0 else None
        log.info(
            "serving with HTTP processes",
            extra={
                "fields": {
                    "addr": f"{host}:{port}",
                    "http_processes": processes,
                    "background_workers": settings.workers,
                }
            },
        )
        try:
            with shutdown_signals() as sig:
                signalled: list[float] = []

                def note() -> None:
                    sig.event.wait()
                    signalled.append(time.monotonic())

                threading.Thread(target=note, name="serve-signal", daemon=True).start()

                def again() -> None:
                    supervisor.signal_children()
                    if pool is not None:
                        pool.cancel_all("second shutdown signal")

                sig.on_repeat = again
                if pool is not None:
                    pool.start()
                watching = start_background(c, sig.event)
                code = 1
                try:
                    code = supervisor.run(sig.event)
                finally:
                    sock.close()
                    stop_background(watching, sig.event, settings.shutdown_timeout)
                    if pool is not None:
                        # The HTTP processes drained first; the background workers get
                        # what is left of the one deadline.
                        since = time.monotonic() - (signalled[0] if signalled else time.monotonic())
                        pool.stop(max(0.0, settings.shutdown_timeout - since))
        finally:
            sock.close()
    if code != 0:
        raise CliError("HTTP processes kept dying (see the log above); stopped")
    return 0


def serve_child(args: argparse.Namespace) -> int:
    """One HTTP process: the app on the inherited socket, until SIGTERM or the supervisor
    is gone. No start-up work (the supervisor did it) and no background workers."""
    from relata.api.app import create_app
    from relata.cli.serve import server_config, timed_server
    from relata.jobs.runner import shutdown_signals
    from relata.mcp.http import McpEndpoint
    from relata.web import web_routes

    if args.listen_fd is None:
        raise CliError("--http-child needs --listen-fd")
    settings = settings_or_exit()
    sock = socket.socket(fileno=args.listen_fd)
    with open_container(settings=settings) as c:
        app = create_app(c, web=web_routes(c), mcp=McpEndpoint(c))
        log.info("HTTP process serving", extra={"fields": {"pid": os.getpid()}})
        # uvicorn re-raises the signal it caught once it has drained; with our handlers in
        # place that ends the process with 0 rather than by the signal.
        with shutdown_signals() as sig:
            server = timed_server(
                server_config(app, settings), early_exit=sig.event, parent_pid=args.supervisor_pid
            )
            server.run(sockets=[sock])
    return 0
