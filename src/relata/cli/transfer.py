"""``relata transfer``: move a deployment to another database, e.g. from the embedded SQLite
default to PostgreSQL with pgvector (``relata.transfer.run``; docs/deploy.md).

The source is the database in effect (``RELATA_DATA_DIR``/``RELATA_DATABASE_URL``) or
``--from``; it must exist and be migrated, like any reading command's. The target's vector
store is ``--vector-store`` (default ``auto``: pgvector on PostgreSQL), not
``RELATA_VECTOR_STORE``, which describes the source; its data dir, where the originals go,
is ``--originals-to`` (default: the source's).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from relata.cli.common import CliError, open_container, plural, redact_url, settings_or_exit

if TYPE_CHECKING:
    from relata.bootstrap import Container
    from relata.config.settings import Settings
    from relata.transfer.run import Side, TransferReport

_STORES = ["auto", "pgvector", "sqlite-vec", "qdrant"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "transfer",
        help="copy the whole deployment into another database (e.g. SQLite to PostgreSQL)",
        description="Copy every table (ids, timestamps, password and token hashes as they "
        "are), the vectors (without re-embedding) and the stored originals into another "
        "database, then verify row counts and checksums on both sides. Stop `relata serve` "
        "and every `relata worker` first: the source is locked against writers while it is "
        "read. The target must be empty; an interrupted transfer continues with --resume.",
    )
    p.add_argument(
        "--to",
        required=True,
        metavar="URL",
        help="the target database, e.g. postgresql+psycopg://relata@db:5432/relata",
    )
    p.add_argument(
        "--from",
        dest="source",
        metavar="URL",
        help="the source database (default: the one in effect, see `relata config`)",
    )
    p.add_argument(
        "--originals-to",
        metavar="DIR",
        help="the target deployment's data dir (its RELATA_DATA_DIR): originals are copied "
        "to DIR/originals (default: the source's data dir, nothing to copy)",
    )
    p.add_argument(
        "--vector-store",
        choices=_STORES,
        default="auto",
        help="the target's vector store (default auto: pgvector with PostgreSQL)",
    )
    p.add_argument(
        "--batch-rows",
        type=int,
        default=1000,
        metavar="N",
        help="rows per write transaction, and vectors per page (1-1000, default 1000)",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--resume", action="store_true", help="continue an interrupted transfer into the target"
    )
    mode.add_argument(
        "--force",
        action="store_true",
        help="delete the target's Relata data first (PostgreSQL targets only)",
    )
    p.set_defaults(handler=_transfer)


def _settings(args: argparse.Namespace) -> tuple[Settings, Settings]:
    from relata.config.settings import SETTINGS

    source = settings_or_exit()
    if args.source:
        source = source.replace(database_url=_url(SETTINGS, args.source, "--from"))
    target_url = _url(SETTINGS, args.to, "--to")
    data_dir = str(Path(args.originals_to).expanduser().resolve()) if args.originals_to else None
    target = source.replace(
        database_url=target_url,
        vector_store=args.vector_store,
        data_dir=data_dir or str(source.data_path),
    )
    return source, target


def _url(settings: Any, value: str, option: str) -> str:
    parse = next(s.parse for s in settings if s.env == "RELATA_DATABASE_URL")
    try:
        url = str(parse(value))
    except ValueError:
        raise CliError(
            f"{option}: not a database URL (sqlite:///PATH or postgresql+psycopg://...)", 2
        ) from None
    if not url:
        raise CliError(f"{option}: a database URL is required", 2)
    return url


def _side(c: Container) -> Side:
    from relata.transfer.run import Side

    return Side(
        db=c.db,
        vectors=c.vectors,
        data_dir=c.settings.data_path,
        label=redact_url(c.settings.resolved_database_url),
    )


def _transfer(args: argparse.Namespace) -> int:
    from relata.transfer.run import transfer

    source_settings, target_settings = _settings(args)

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    with (
        open_container(log=False, settings=source_settings) as source,
        open_container(log=False, schema="any", settings=target_settings) as target,
    ):
        say(f"transferring {_side(source).label} -> {_side(target).label}")
        report = transfer(
            _side(source),
            _side(target),
            resume=args.resume,
            force=args.force,
            batch_rows=args.batch_rows,
            say=say,
        )
    _print(report)
    if not report.ok:
        return 1
    print(
        "done. Point serve and workers at the target: "
        f"RELATA_DATABASE_URL={redact_url(target_settings.resolved_database_url)} "
        f"RELATA_DATA_DIR={target_settings.data_path}"
        + (f" RELATA_VECTOR_STORE={args.vector_store}" if args.vector_store != "auto" else "")
    )
    return 0


def _print(report: TransferReport) -> None:
    rows = sum(c.source.rows for c in report.tables)
    bad = [c for c in report.tables if not c.ok]
    print(
        f"tables: {len(report.tables) - len(bad)} of {len(report.tables)} verified "
        f"({plural(rows, 'row')}, counts and checksums equal on both sides)"
        + (" after resuming" if report.resumed else "")
    )
    for c in bad:
        print(
            f"  MISMATCH {c.source.table}: source {c.source.rows} rows {c.source.sha256[:12]}, "
            f"target {c.target.rows} rows {c.target.sha256[:12]}"
        )
    vectors = sum(v.source for v in report.vectors)
    identical = sum(v.identical for v in report.vectors)
    print(
        f"vectors: {plural(vectors, 'vector')} in {plural(len(report.vectors), 'workspace')}, "
        f"{identical} bit-identical in the target"
    )
    for v in report.vectors:
        if not v.ok:
            print(
                f"  MISMATCH workspace {v.workspace_id}: source {v.source}, target {v.target}; "
                f"chunks {', '.join(v.differing[:5])}"
            )
    o = report.originals
    print(f"originals: {o.copied} copied, {o.present} already in place")
    if o.missing_count:
        print(
            f"  warning: {plural(o.missing_count, 'live item')} had no original in the source "
            f"(e.g. {', '.join(o.missing[:5])}); they have none in the target either"
        )
    if report.originals_differing:
        print(f"  MISMATCH originals of items {', '.join(report.originals_differing[:5])}")
