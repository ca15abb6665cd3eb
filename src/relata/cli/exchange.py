"""``relata export`` and ``relata import``: a workspace's knowledge out as JSON Lines, CSV or
GraphML, and a JSON Lines export into a new workspace (``relata.exchange``;
docs/decisions/0041-export-and-import.md).
"""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path
from typing import Any

from relata.cli.common import CliError, add_workspace_option, open_container, plural

_FORMATS = ["jsonl", "csv", "graphml"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="export a workspace's knowledge as JSON Lines, CSV (a zip) or GraphML",
        description="Write a workspace's items (metadata), entities with aliases and their "
        "review state, claims with quotations and offsets, disagreements with positions and "
        "resolutions, and relationships with type, score, evidence and review decisions to "
        "PATH, reading them in batches. jsonl is what `relata import` reads; csv is a zip of "
        "one CSV file per kind; graphml opens in Gephi or networkx.",
    )
    add_workspace_option(p)
    p.add_argument("--format", required=True, choices=_FORMATS, help="the file format")
    p.add_argument("--out", required=True, metavar="PATH", help="the file to write (must be new)")
    p.add_argument(
        "--with-originals",
        action="store_true",
        help="jsonl only: also each item's text and stored original (base64)",
    )
    p.set_defaults(handler=_export)

    p = sub.add_parser(
        "import",
        help="import a JSON Lines export into a new or empty workspace",
        description="Check every line of PATH (a `relata export --format jsonl` file), then "
        "write its records into the workspace SLUG, created if missing, with new ids; "
        "review decisions, resolutions and notes are kept. A bad line stops the import "
        "before anything is written, naming the line. Items get no chunks: `relata "
        "reprocess --all --workspace SLUG` makes them from imported originals.",
    )
    p.add_argument("path", metavar="PATH", help="a JSON Lines export")
    p.add_argument(
        "--workspace", required=True, metavar="SLUG", help="the workspace to import into"
    )
    p.set_defaults(handler=_import)


def _export(args: argparse.Namespace) -> int:
    from relata.domain.models import CLI_ACTOR

    out = Path(args.out)
    if out.exists():
        raise CliError(f"{out} exists: choose a new file")
    if not out.parent.is_dir():
        raise CliError(f"{out.parent} is not a folder")
    partial = out.with_name(f".{out.name}.partial")
    with open_container(log=False) as c:
        workspace = c.workspaces.resolve(args.workspace)
        chunks = c.exchange.export(
            workspace, args.format, actor=CLI_ACTOR, with_originals=args.with_originals
        )
        size = 0
        try:
            with partial.open("xb") as f:
                for chunk in chunks:
                    f.write(chunk)
                    size += len(chunk)
                f.flush()
                os.fsync(f.fileno())
            os.replace(partial, out)
        except BaseException:
            with contextlib.suppress(OSError):
                partial.unlink()
            raise
    print(f"exported workspace {workspace.slug!r} as {args.format} to {out} ({size} bytes)")
    return 0


def _import(args: argparse.Namespace) -> int:
    from relata.domain.models import CLI_ACTOR
    from relata.exchange.records import BY_NAME

    path = Path(args.path)
    if not path.is_file():
        raise CliError(f"{path} is not a file")
    with open_container(log=False, schema="migrate") as c:
        report = c.exchange.import_jsonl(path, args.workspace, actor=CLI_ACTOR)
    counts = ", ".join(plural(n, k, BY_NAME[k].plural) for k, n in report.counts.items())
    print(f"imported {path} into workspace {args.workspace!r}: {counts}")
    if report.originals:
        print(
            f"{plural(report.originals, 'original')} stored; run `relata reprocess --all "
            f"--workspace {args.workspace}` to chunk, embed and search them"
        )
    return 0
