"""``relata backup DEST`` and ``relata restore SRC``: the embedded default's database (vectors
included) and originals, consistent while serving and ingesting (``relata.transfer.backup``).

PostgreSQL deployments back up with ``pg_dump`` plus a copy of the originals folder
(docs/deploy.md): the commands refuse a PostgreSQL database and say so.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from relata.cli.common import CliError, open_container, plural, settings_or_exit, where

_PG_HINT = (
    "back up a PostgreSQL deployment with pg_dump and a copy of the data dir's originals "
    "folder (docs/deploy.md, 'Backup and restore')"
)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "backup",
        help="back up the embedded database and the originals into a new folder",
        description="Copy the SQLite database (its vectors included) with SQLite's online "
        "backup API and then the originals it references into DEST, with a manifest of row "
        "counts and checksums. Safe while `relata serve` and workers run. For PostgreSQL, "
        "use pg_dump (docs/deploy.md).",
    )
    p.add_argument("destination", metavar="DEST", help="a new (or empty) folder")
    p.set_defaults(handler=_backup)

    p = sub.add_parser(
        "restore",
        help="restore a backup into the data dir (which must hold no deployment)",
        description="Verify the backup at SRC against its manifest, then copy its originals "
        "and database into the data dir (RELATA_DATA_DIR). Refuses a data dir that already "
        "holds a deployment unless --force, which replaces it.",
    )
    p.add_argument("source", metavar="SRC", help="a folder written by `relata backup`")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace the deployment in the data dir (its database and originals are deleted)",
    )
    p.set_defaults(handler=_restore)


def _backup(args: argparse.Namespace) -> int:
    from relata.storage.vectors.factory import resolve_vector_store
    from relata.transfer.backup import backup

    settings = settings_or_exit()
    w = where(settings)
    with open_container(log=False) as c:  # a missing or unmigrated database: one line
        width = c.vectors.dimensions
        store = resolve_vector_store(c.settings.vector_store, c.db.dialect)
    if w.sqlite_file is None:
        raise CliError(f"relata backup copies the embedded SQLite database; {_PG_HINT}")
    report = backup(w.sqlite_file, settings.data_path, Path(args.destination), vector_width=width)
    m = report.manifest
    rows = sum(int(v["rows"]) for v in m["tables"].values())
    vectors = sum(m["vectors"]["per_workspace"].values())
    o = m["originals"]
    print(f"backed up {w.describe()}")
    print(
        f"into {report.destination}: database {m['database']['bytes']} bytes "
        f"(schema {m['schema_revision']}, {plural(rows, 'row')}, {plural(vectors, 'vector')}), "
        f"{plural(o['count'], 'original')} ({o['bytes']} bytes)"
        + (
            f"; taken {report.attempts} times (items were deleted meanwhile)"
            if report.attempts > 1
            else ""
        )
    )
    if o["missing_in_source_count"]:
        print(
            f"warning: {plural(o['missing_in_source_count'], 'live item')} had no original in "
            f"the data dir (e.g. {', '.join(o['missing_in_source'][:5])}): recorded in the "
            "manifest"
        )
    if store != "sqlite-vec":
        print(
            f"note: vectors live in {store} (RELATA_VECTOR_STORE), not in this backup: back "
            "it up separately, or re-embed after a restore (`relata reembed --all`)"
        )
    return 0


def _restore(args: argparse.Namespace) -> int:
    from relata.transfer.backup import restore

    settings = settings_or_exit()
    w = where(settings)
    expected = settings.data_path / "relata.db"
    if w.sqlite_file is None or w.sqlite_file.resolve() != expected:
        raise CliError(
            "relata restore writes relata.db into the data dir (RELATA_DATA_DIR): unset "
            f"RELATA_DATABASE_URL ({w.database}) to restore there"
        )
    report = restore(Path(args.source), settings.data_path, force=args.force)
    m = report.manifest
    checked = (
        "tables checked against the manifest"
        if report.tables_checked
        else f"schema {m['schema_revision']}: run `relata migrate` next"
    )
    print(
        f"restored {Path(args.source).resolve()} into {report.data_dir}: "
        f"{plural(report.originals, 'original')}, database verified ({checked})"
    )
    return 0
