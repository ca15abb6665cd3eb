"""Administrative commands: ``createadmin``, ``seed``, ``version`` and ``config``."""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

import relata
from relata.auth.passwords import hash_password, validate_password
from relata.cli.common import CliError, open_container
from relata.config.settings import markdown_table
from relata.domain.models import User
from relata.ids import new_id
from relata.storage.sql import migrate


def register(sub: Any) -> None:
    p = sub.add_parser("createadmin", help="create an administrator (password from prompt/stdin)")
    p.add_argument("--username", help="the new administrator's username (prompted if omitted)")
    p.add_argument(
        "--password-stdin", action="store_true", help="read the password from standard input"
    )
    p.set_defaults(handler=_createadmin)

    p = sub.add_parser(
        "seed",
        help="create the default workspace and add the demo corpus (idempotent)",
        description="Create the default workspace (RELATA_DEFAULT_WORKSPACE) and ingest a "
        "small demo corpus (five short documents about a fictional tidal-energy project), "
        "then process it. Running it again changes nothing.",
    )
    p.add_argument("--no-demo", action="store_true", help="only create the workspace")
    p.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="how long to wait for processing (default 300)",
    )
    p.set_defaults(handler=_seed)

    p = sub.add_parser("version", help="print the package version and schema revision")
    p.set_defaults(handler=_version)

    p = sub.add_parser("config", help="print the configuration variables")
    p.add_argument("--markdown", action="store_true", help="as the README's Markdown table")
    p.set_defaults(handler=_config)


def _read_password(from_stdin: bool) -> str:
    if from_stdin or not sys.stdin.isatty():
        line = sys.stdin.readline()
        return line.rstrip("\r\n")
    first = getpass.getpass("Password: ")
    second = getpass.getpass("Password (again): ")
    if first != second:
        raise CliError("passwords do not match")
    return first


def _createadmin(args: argparse.Namespace) -> int:
    username = (args.username or "").strip()
    if not username:
        if not sys.stdin.isatty():
            raise CliError("--username is required when standard input is not a terminal")
        username = input("Username: ").strip()
    if not username or len(username) > 64:
        raise CliError("username must be 1-64 characters")
    password = validate_password(_read_password(args.password_stdin))
    with open_container(log=False) as c:
        migrate.upgrade(c.db)
        ws, _ = c.workspaces.ensure(c.settings.default_workspace)
        user = User(
            id=new_id(),
            username=username,
            password_hash=hash_password(password),
            display_name=username,
            is_admin=True,
            created_at=c.clock.now(),
        )
        c.repos.users.create(user)
        c.repos.users.add_member(ws.id, user.id, "owner")
    print(f"created administrator {username!r} in workspace {ws.slug!r}")
    return 0


def _seed(args: argparse.Namespace) -> int:
    from relata.cli.ingest import Progress, failed_items, process
    from relata.ingest.bulk import BulkIngest, Tally
    from relata.ingest.service import IngestRequest
    from relata.observability.logging import configure_logging
    from relata.seed import demo_documents

    with open_container(log=False) as c:
        configure_logging("error", c.settings.log_format)
        migrate.upgrade(c.db)
        ws, created = c.workspaces.ensure(c.settings.default_workspace, "Default workspace")
        print(f"workspace {ws.slug!r} " + ("created" if created else "already exists"))
        if args.no_demo:
            return 0
        tally = Tally()
        bulk = BulkIngest(c.ingest, ws.id, tally)
        for doc in demo_documents():
            request = IngestRequest(data=doc.data, filename=doc.filename, created_at=doc.created_at)
            bulk.add(doc.filename, request)
        bulk.flush()
        if tally.ingested == 0 and not tally.rejected:
            print(f"demo corpus already there ({tally.duplicates} documents)")
            return 0
        print(f"demo corpus: ingested {tally.ingested}, already there {tally.duplicates}")
        for label, reason in tally.rejected:
            print(f"rejected: {label}: {reason}", file=sys.stderr)
        if tally.item_ids:
            settled = process(c, ws.id, tally, timeout=args.timeout, progress=Progress(sys.stderr))
            print(f"processed: ready {settled.counts.get('ready', 0)} of {len(tally.item_ids)}")
            failed = failed_items(c, ws.id, tally)
            for label, error in failed:
                print(f"failed: {label}: {error}", file=sys.stderr)
            if failed:
                return 1
    return 1 if tally.rejected else 0


def _version(_: argparse.Namespace) -> int:
    with open_container(log=False) as c:
        current = migrate.current_revision(c.db)
    head = migrate.head_revision()
    state = "current" if current == head else f"needs migration to {head}"
    print(f"relata {relata.__version__}")
    print(f"schema {current or 'none'} ({state})")
    return 0


def _config(args: argparse.Namespace) -> int:
    if args.markdown:
        sys.stdout.write(markdown_table())
        return 0
    from relata.config.settings import SETTINGS

    for s in SETTINGS:
        print(f"{s.env}={s.default}\n    {s.help} Accepts: {s.accepts}.")
    return 0
