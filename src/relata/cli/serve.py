"""``relata serve`` (HTTP, on the embedded default) and ``relata migrate``."""

from __future__ import annotations

import argparse
import logging
from typing import Any

from relata.cli.common import open_container, settings_or_exit
from relata.storage.sql import migrate

log = logging.getLogger("relata.serve")


def register(sub: Any) -> None:
    p = sub.add_parser("serve", help="migrate, then serve HTTP on RELATA_HTTP_ADDR")
    p.set_defaults(handler=_serve)
    p = sub.add_parser("migrate", help="apply pending database migrations")
    p.set_defaults(handler=_migrate)


def _migrate(_: argparse.Namespace) -> int:
    with open_container(log=False) as c:
        before = migrate.current_revision(c.db)
        after = migrate.upgrade(c.db)
    print(
        f"database at revision {after}" + (" (was " + str(before) + ")" if before != after else "")
    )
    return 0


def _serve(_: argparse.Namespace) -> int:
    import uvicorn

    from relata.api.app import create_app

    settings = settings_or_exit()  # a bad value stops start-up here, before anything runs
    with open_container() as c:
        rev = migrate.upgrade(c.db)
        c.workspaces.ensure(settings.default_workspace)
        host, port = settings.http_addr
        log.info(
            "starting",
            extra={"fields": {"addr": f"{host}:{port}", "schema": rev, "db": c.db.dialect}},
        )
        app = create_app(c)
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=int(settings.shutdown_timeout),
        )
        uvicorn.Server(config).run()
    return 0
