"""Administrative commands: ``createadmin``, ``seed``, ``version`` and ``config``."""

from __future__ import annotations

import argparse
import dataclasses
import getpass
import json
import os
import sys
from collections.abc import Mapping
from typing import Any

from relata.cli.common import (
    CliError,
    open_container,
    plural,
    redact_url,
    server_url,
    settings_or_exit,
    where,
)
from relata.config.settings import SETTINGS, Settings, markdown_table
from relata.domain.models import CLI_ACTOR


def register(sub: Any) -> None:
    p = sub.add_parser(
        "createadmin",
        help="create an administrator (password from prompt/stdin)",
        description="Create an administrator, owner of the default workspace, and say how "
        "to sign in. The password is read from a prompt (twice), or from standard input, and "
        "stored as an Argon2id hash.",
    )
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

    p = sub.add_parser(
        "version",
        help="print the package version and schema revision",
        description="Print the package version and the database's schema revision (and "
        "whether it needs `relata migrate`). Creates no database.",
    )
    p.set_defaults(handler=_version)

    p = sub.add_parser(
        "config",
        help="show the configuration in effect and where each value comes from",
        description="Show the data dir and database the commands use, then every RELATA_* "
        "variable with the value in effect and its source (environment or default); secrets "
        "are hidden. --markdown prints the README's table of variables instead.",
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument("--json", action="store_true", help="the same as one JSON object")
    group.add_argument(
        "--markdown", action="store_true", help="the README's table of every variable"
    )
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
    from relata.auth.passwords import validate_password
    from relata.domain.vocabulary import Role

    username = (args.username or "").strip()
    if not username:
        if not sys.stdin.isatty():
            raise CliError("--username is required when standard input is not a terminal")
        username = input("Username: ").strip()
    if not username or len(username) > 64:
        raise CliError("username must be 1-64 characters")
    password = validate_password(_read_password(args.password_stdin))
    with open_container(log=False, schema="migrate") as c:
        ws, _ = c.workspaces.ensure(c.settings.default_workspace, actor=CLI_ACTOR)
        user = c.admin.create_user(
            username, password, join=ws.slug, role=Role.OWNER, is_admin=True, actor=CLI_ACTOR
        ).user
        base = server_url(c.settings)
    print(f"created administrator {user.username!r}, owner of workspace {ws.slug!r}")
    print(f"sign in: open {base}/ in a browser (relata serve), or from a script:")
    print(
        f"  curl -c cookies.txt -H 'Content-Type: application/json' -d "
        f'\'{{"username": "{user.username}", "password": "..."}}\' '
        f"{base}/api/v1/auth/sign-in"
    )
    print(f"an API token for scripts: relata tokens create --user {user.username}")
    return 0


def _seed(args: argparse.Namespace) -> int:
    from relata.cli.ingest import Progress, failed_items, process, report_failures
    from relata.ingest.bulk import BulkIngest, Tally
    from relata.ingest.service import IngestRequest
    from relata.observability.logging import configure_logging
    from relata.seed import demo_documents

    with open_container(log=False, schema="migrate") as c:
        configure_logging("error", c.settings.log_format)
        ws, created = c.workspaces.ensure(
            c.settings.default_workspace, "Default workspace", actor=CLI_ACTOR
        )
        print(f"workspace {ws.slug!r} " + ("created" if created else "already exists"))
        if args.no_demo:
            return 0
        tally = Tally()
        bulk = BulkIngest(c.ingest, ws.id, tally, actor=CLI_ACTOR)
        for doc in demo_documents():
            request = IngestRequest(data=doc.data, filename=doc.filename, created_at=doc.created_at)
            bulk.add(doc.filename, request)
        bulk.flush()
        failed_before = failed_items(c, ws.id, tally.duplicate_ids)
        report_failures(failed_before, earlier=True)
        if tally.ingested == 0 and not tally.rejected:
            print(f"demo corpus already there ({plural(tally.duplicates, 'document')})")
            return 1 if failed_before else 0
        print(f"demo corpus: ingested {tally.ingested}, already there {tally.duplicates}")
        for label, reason in tally.rejected:
            print(f"rejected: {label}: {reason}", file=sys.stderr)
        if tally.item_ids:
            settled = process(c, ws.id, tally, timeout=args.timeout, progress=Progress(sys.stderr))
            print(f"processed: ready {settled.counts.get('ready', 0)} of {len(tally.item_ids)}")
            failed = failed_items(c, ws.id, tally.item_ids)
            report_failures(failed)
            if failed:
                return 1
    return 1 if tally.rejected or failed_before else 0


def _version(_: argparse.Namespace) -> int:
    import relata

    settings = settings_or_exit()
    w = where(settings)
    print(f"relata {relata.__version__}")
    if w.sqlite_file is not None and not w.sqlite_file.is_file():
        print(f"schema none (no database at {w.sqlite_file} yet)")
        return 0
    from relata.storage.sql import migrate

    with open_container(log=False, schema="any") as c:
        current = migrate.current_revision(c.db)
    head = migrate.head_revision()
    state = "current" if current == head else f"needs migration to {head}"
    print(f"schema {current or 'none'} ({state})")
    return 0


# ---------------------------------------------------------------- relata config
def _display(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], int):  # host, port
        host, port = value
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    if isinstance(value, tuple):  # a list of names
        return ",".join(str(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def effective(settings: Settings, environ: Mapping[str, str] | None = None) -> list[dict[str, str]]:
    """Every variable with the value in effect and its source; secrets are hidden and URL
    passwords redacted."""
    env = os.environ if environ is None else environ
    secret = {f.name for f in dataclasses.fields(Settings) if not f.repr}
    rows = []
    for s in SETTINGS:
        value = _display(getattr(settings, s.field))
        if s.field in secret and value:
            value = "(set, hidden)"
        elif "://" in value:
            value = redact_url(value)
        rows.append(
            {
                "variable": s.env,
                "value": value,
                "source": "environment" if s.env in env else "default",
            }
        )
    return rows


def _config(args: argparse.Namespace) -> int:
    if args.markdown:
        sys.stdout.write(markdown_table())
        return 0
    settings = settings_or_exit()
    w = where(settings)
    exists = w.sqlite_file is None or w.sqlite_file.is_file()
    rows = effective(settings)
    if args.json:
        data = {
            "data_dir": str(w.data_dir),
            "data_dir_source": w.data_dir_source,
            "database": w.database,
            "database_exists": exists if w.sqlite_file is not None else None,
            "variables": rows,
        }
        print(json.dumps(data, indent=2))
        return 0
    print(f"data dir:  {w.data_dir}  ({w.data_dir_source})")
    print(f"database:  {w.database}" + ("" if exists else "  (not created yet)"))
    print()
    width = max(len(r["variable"]) for r in rows)
    vwidth = min(48, max(len(r["value"] or "(empty)") for r in rows))
    for r in rows:
        value = r["value"] or "(empty)"
        print(f"{r['variable']:<{width}}  {value:<{vwidth}}  {r['source']}")
    return 0
