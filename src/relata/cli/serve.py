"""``relata serve`` (HTTP plus in-process workers, the embedded default) and ``relata migrate``.

Before serving, ``serve`` repairs what a killed process left half-done in ingestion
(``relata.ingest.recovery``); it is the one process that does so at start-up.

On SIGTERM/SIGINT the HTTP server stops accepting and finishes its requests first; then the
workers drain, within one overall deadline of ``RELATA_SHUTDOWN_TIMEOUT`` seconds.
"""

from __future__ import annotations

import argparse
import functools
import ipaddress
import logging
import os
import sys
import threading
import time
from types import FrameType
from typing import TYPE_CHECKING, Any

from relata.cli.common import CliError, open_container, settings_or_exit, where
from relata.cli.watch import start_background, stop_background

if TYPE_CHECKING:
    import uvicorn

    from relata.bootstrap import Container
    from relata.config.settings import Settings

log = logging.getLogger("relata.serve")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        help="migrate, then serve HTTP on RELATA_HTTP_ADDR with in-process workers",
        description="Apply pending migrations, ensure the default workspace, repair what a "
        "killed process left half-done in ingestion (as `relata doctor --fix`, for what is "
        "older than RELATA_RECOVERY_GRACE_SECONDS), then serve the "
        "HTTP API on RELATA_HTTP_ADDR and run RELATA_WORKERS background workers in the same "
        "process. The start-up log names the data dir and the database in use. SIGTERM or "
        "SIGINT stops it gracefully within RELATA_SHUTDOWN_TIMEOUT seconds. With more than "
        "one HTTP process (--processes, RELATA_HTTP_PROCESSES; one per core by default) a "
        "supervisor does the start-up work once, runs the background workers, and restarts "
        "an HTTP process that dies. With RELATA_WATCH_DIR set, the process that runs the "
        "background workers also keeps that folder in step (as `relata watch`).",
    )
    p.add_argument(
        "--processes",
        type=int,
        default=None,
        metavar="N",
        help="HTTP processes (1-64; default RELATA_HTTP_PROCESSES, 0 = one per core; "
        "see docs/decisions/0036)",
    )
    p.add_argument("--http-child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--listen-fd", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--supervisor-pid", type=int, default=None, help=argparse.SUPPRESS)
    p.set_defaults(handler=_serve)
    p = sub.add_parser(
        "migrate",
        help="apply pending database migrations",
        description="Create the database if needed and apply every pending schema "
        "migration; `relata serve`, `relata seed` and `relata ingest` do this themselves.",
    )
    p.set_defaults(handler=_migrate)


def _migrate(_: argparse.Namespace) -> int:
    from relata.storage.sql import migrate

    with open_container(log=False, schema="any") as c:
        before = migrate.current_revision(c.db)
        after = migrate.upgrade(c.db)
        c.vectors.prepare()  # pgvector: the extension and the table, or the operator's fix
    print(
        f"database at revision {after}" + (" (was " + str(before) + ")" if before != after else "")
    )
    print(where(c.settings).describe())
    return 0


def insecure_refusal(host: str, allow_insecure: bool) -> str | None:
    """Why ``relata serve`` will not listen on ``host`` over plain HTTP, or None: only a
    loopback address may, unless RELATA_ALLOW_INSECURE_HTTP says a TLS proxy is in front."""
    if allow_insecure or host == "localhost":
        return None
    try:
        if ipaddress.ip_address(host).is_loopback:
            return None
    except ValueError:
        pass
    return (
        f"RELATA_HTTP_ADDR={host} is not a loopback address and relata serves plain HTTP: "
        "passwords and session cookies would cross the network in clear. Serve it behind a "
        "TLS proxy and set RELATA_ALLOW_INSECURE_HTTP=true, or listen on 127.0.0.1"
    )


def _recover(c: Container) -> None:
    """Repair what a killed process left half-done in ingestion (``relata.ingest.recovery``:
    stray originals, unstarted uploads, interrupted deletes older than the grace period)
    before serving. Only ``serve`` does it at start-up: workers never write originals, and
    several of them may start at once. A failure is logged and serving goes on."""
    from relata.domain.errors import RelataError

    try:
        report = c.recovery.run(fix=True, missing=False)
    except (RelataError, OSError) as exc:
        log.warning("recovery skipped", extra={"fields": {"error_type": type(exc).__name__}})
        return
    log.info(
        "recovery",
        extra={
            "fields": {
                "stray_originals": len(report.stray),
                "unstarted_uploads": len(report.unstarted),
                "interrupted_deletes": len(report.interrupted_deletes),
                "younger_than_grace": len(report.young),
                "grace_seconds": int(c.recovery.grace.total_seconds()),
            }
        },
    )


#: The longest request head (request line and headers) a client may send: past it the
#: connection gets 400 and is closed before the request reaches the app. Browsers send a few
#: KB (a session cookie is ~60 bytes).
MAX_HEAD_BYTES = 32 * 1024


def server_config(app: Any, settings: Settings) -> uvicorn.Config:
    """uvicorn's configuration for ``relata serve`` (and the tests that serve the app as it
    does): request heads bounded by ``MAX_HEAD_BYTES``; forwarded headers believed only from
    ``RELATA_TRUSTED_PROXIES`` (none by default, not even loopback: uvicorn's own default
    trusts 127.0.0.1, so any local process could name another client address)."""
    import uvicorn

    host, port = settings.http_addr
    proxies = list(settings.trusted_proxies)
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=int(settings.shutdown_timeout),
        proxy_headers=bool(proxies),
        forwarded_allow_ips=proxies,
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
    )


def timed_server(
    config: uvicorn.Config,
    *,
    early_exit: threading.Event | None = None,
    parent_pid: int | None = None,
) -> Any:
    """uvicorn's server, remembering when the first shutdown signal arrived (``signalled_at``)
    and stopping when ``early_exit`` is set (by our handlers, for a signal that came before
    uvicorn installed its own) or, for an HTTP process of ``--processes N``, when its
    supervisor ``parent_pid`` is gone."""
    import uvicorn

    class _TimedServer(uvicorn.Server):
        signalled_at: float | None = None

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if self.signalled_at is None:
                self.signalled_at = time.monotonic()
            super().handle_exit(sig, frame)

        async def on_tick(self, counter: int) -> bool:
            early = early_exit is not None and early_exit.is_set()
            orphan = parent_pid is not None and os.getppid() != parent_pid
            if early or orphan:
                if orphan and not self.should_exit:
                    log.warning(
                        "the supervisor is gone; stopping",
                        extra={"fields": {"supervisor_pid": parent_pid}},
                    )
                if self.signalled_at is None:
                    self.signalled_at = time.monotonic()
                self.should_exit = True
            return await super().on_tick(counter)

    return _TimedServer(config)


def _prepare(c: Container) -> None:
    """``relata serve``'s start-up work, once per start whatever the HTTP processes:
    migrations, the default workspace, the recovery sweep, the first-account hint."""
    from relata.storage.sql import migrate

    settings = c.settings
    rev = migrate.upgrade(c.db)
    c.vectors.prepare()
    c.workspaces.ensure(settings.default_workspace)
    _recover(c)
    if c.accounts.count() == 0:
        print(
            "relata: no account yet; create the first administrator with "
            "`relata createadmin --username NAME`",
            file=sys.stderr,
            flush=True,
        )
    host, port = settings.http_addr
    w = where(settings)
    log.info(
        "starting",
        extra={
            "fields": {
                "addr": f"{host}:{port}",
                "schema": rev,
                "db": c.db.dialect,
                "data_dir": str(w.data_dir),
                "database": w.database,
            }
        },
    )


def _serve(args: argparse.Namespace) -> int:
    from relata.cli import serve_processes

    if args.http_child:
        return serve_processes.serve_child(args)
    settings = settings_or_exit()  # a bad value stops start-up here, before anything runs
    refusal = insecure_refusal(settings.http_addr[0], settings.allow_insecure_http)
    if refusal:
        raise CliError(refusal)
    processes = serve_processes.http_processes(args.processes, settings)
    if processes > 1:
        return serve_processes.serve_supervised(processes, _prepare)
    return _serve_one(settings)


def _serve_one(settings: Settings) -> int:
    """One process: HTTP and the background workers together (``--processes 1``)."""
    from relata.api.app import create_app
    from relata.jobs.runner import shutdown_signals
    from relata.mcp.http import McpEndpoint
    from relata.web import web_routes

    with open_container(schema="any") as c:
        _prepare(c)
        app = create_app(c, web=web_routes(c), mcp=McpEndpoint(c))
        pool = c.worker_pool() if settings.workers > 0 else None
        # uvicorn restores the previous handlers and re-raises the signal it caught once it
        # has shut down; ours must be those handlers, so the re-raise cannot end the process
        # before the workers drain.
        with shutdown_signals() as sig:
            server = timed_server(server_config(app, settings), early_exit=sig.event)
            if pool is not None:
                sig.on_repeat = functools.partial(pool.cancel_all, "second shutdown signal")
                pool.start()
            watching = start_background(c, sig.event)
            try:
                server.run()
            finally:
                stop_background(watching, sig.event, settings.shutdown_timeout)
                if pool is not None:
                    elapsed = time.monotonic() - (server.signalled_at or time.monotonic())
                    pool.stop(max(0.0, settings.shutdown_timeout - elapsed))
    return 0
