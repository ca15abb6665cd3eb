"""``relata items``, ``relata item ID`` and ``relata delete ID``: the workspace's items from the
command line, through the same item catalog the API uses.

``items`` lists a page of items (newest first) filtered by status and type; ``item`` shows one
item's metadata, status, error, chunk count, every processing run (stage, outcome, error) and
its versions;
``delete`` removes an item and everything derived from it, after a confirmation on a terminal
(``--yes`` skips it; without a terminal ``--yes`` is required).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from relata.cli.common import CliError, add_workspace_option, existing_workspace, open_container
from relata.domain.models import CLI_ACTOR, ItemStatus, SourceType

if TYPE_CHECKING:
    from relata.bootstrap import Container
    from relata.domain.models import Item, ItemVersion, ProcessingRun, Workspace
    from relata.ingest.catalog import ItemDetail

_TITLE_CHARS = 48


def register(sub: Any) -> None:
    p = sub.add_parser(
        "items",
        help="list a workspace's items, newest first",
        description="List a workspace's items, newest first: id, type, status, chunk count, "
        "when ingested, and the filename (or the title when there is none). "
        "`relata item ID` shows one in full.",
    )
    add_workspace_option(p)
    p.add_argument(
        "--status", choices=[s.value for s in ItemStatus], help="only items in this state"
    )
    p.add_argument("--type", choices=[t.value for t in SourceType], help="only items of this type")
    p.add_argument(
        "--limit", type=int, default=50, metavar="N", help="how many (1-1000, default 50)"
    )
    p.add_argument("--offset", type=int, default=0, metavar="N", help="skip this many first")
    p.add_argument("--json", action="store_true", help="one JSON array instead of a table")
    p.set_defaults(handler=_items)

    p = sub.add_parser(
        "item",
        help="show one item: metadata, status, error, chunks, processing runs and versions",
        description="Show one item: its metadata, status and error, its chunk count, every "
        "processing run (stage, outcome, when, error) and its versions (newest first; a "
        "previous version's original is kept up to RELATA_KEEP_PREVIOUS_ORIGINALS).",
    )
    p.add_argument("item_id", metavar="ID", help="the item's id (from `relata items`)")
    add_workspace_option(p)
    p.add_argument("--json", action="store_true", help="print everything as one JSON object")
    p.set_defaults(handler=_item)

    p = sub.add_parser(
        "delete",
        help="delete an item and everything derived from it",
        description="Delete an item: its record, chunks, vectors, processing runs and stored "
        "original. Asks for confirmation on a terminal; --yes skips the question (and is "
        "required when standard input is not a terminal).",
    )
    p.add_argument("item_id", metavar="ID", help="the item's id (from `relata items`)")
    add_workspace_option(p)
    p.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    p.set_defaults(handler=_delete)


# ---------------------------------------------------------------- plain data (--json)
def _ts(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def item_dict(item: Item) -> dict[str, Any]:
    """One item as ``--json`` prints it (the API's item fields)."""
    return {
        "id": item.id,
        "title": item.title,
        "source_type": item.source_type.value,
        "status": item.status.value,
        "error": item.error,
        "failed_stage": item.failed_stage,
        "original_filename": item.original_filename,
        "media_type": item.media_type,
        "size_bytes": item.size_bytes,
        "metadata": dict(item.metadata),
        "chunk_count": item.chunk_count,
        "deliberate_duplicate": item.deliberate_duplicate,
        "created_at": _ts(item.created_at),
        "ingested_at": _ts(item.ingested_at),
        "updated_at": _ts(item.updated_at),
    }


def run_dict(run: ProcessingRun) -> dict[str, Any]:
    return {
        "id": run.id,
        "stage": run.stage,
        "outcome": str(run.outcome),
        "started_at": _ts(run.started_at),
        "finished_at": _ts(run.finished_at),
        "error": run.error,
        "versions": dict(run.versions),
        "details": run.details,
    }


def _name(item: Item) -> str:
    name = item.original_filename or item.title
    return name if len(name) <= _TITLE_CHARS else name[: _TITLE_CHARS - 1] + "…"


# ---------------------------------------------------------------- handlers
def _get(c: Container, ws: Workspace, item_id: str) -> ItemDetail:
    from relata.domain.errors import NotFound

    try:
        return c.items.get(ws.id, item_id)
    except NotFound:
        raise CliError(
            f"no item {item_id!r} in workspace {ws.slug!r} (`relata items` lists them)"
        ) from None


def _items(args: argparse.Namespace) -> int:
    with open_container(log=False) as c:
        ws = existing_workspace(c, args.workspace)
        found: list[Item] = []
        if ws is not None:
            found = c.items.list(
                ws.id,
                limit=args.limit,
                offset=args.offset,
                status=ItemStatus(args.status) if args.status else None,
                source_type=SourceType(args.type) if args.type else None,
            )
    if args.json:
        print(json.dumps([item_dict(i) for i in found], indent=2, ensure_ascii=False))
        return 0
    if not found:
        print("no items")
        return 0
    rows = [("ID", "TYPE", "STATUS", "CHUNKS", "INGESTED", "NAME")]
    for i in found:
        ingested = i.ingested_at.strftime("%Y-%m-%d %H:%M")
        rows.append(
            (i.id, i.source_type.value, i.status.value, str(i.chunk_count), ingested, _name(i))
        )
    widths = [max(len(r[n]) for r in rows) for n in range(len(rows[0]) - 1)]
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=False)) + "  " + r[-1])
    return 0


def _item(args: argparse.Namespace) -> int:
    with open_container(log=False) as c:
        ws = c.workspaces.resolve(args.workspace)
        detail = _get(c, ws, args.item_id)
        versions = c.versions.list(ws.id, args.item_id)
    item, runs = detail.item, detail.runs
    if args.json:
        from relata.schemas.versions import versions_out

        listed = versions_out(item.id, versions).model_dump(mode="json")["versions"]
        data = item_dict(item) | {"runs": [run_dict(r) for r in runs], "versions": listed}
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return 0
    out = sys.stdout.write
    out(f"id:        {item.id}\n")
    out(f"title:     {item.title}\n")
    if item.original_filename:
        out(f"file:      {item.original_filename}\n")
    out(f"type:      {item.source_type.value} ({item.size_bytes} bytes)\n")
    status = item.status.value
    if item.failed_stage:
        status += f" (at {item.failed_stage})"
    out(f"status:    {status}\n")
    if item.error:
        out(f"error:     {item.error}\n")
    out(f"chunks:    {item.chunk_count}\n")
    if item.created_at:
        out(f"created:   {item.created_at.isoformat()}\n")
    out(f"ingested:  {item.ingested_at.isoformat()}\n")
    for key, value in item.metadata.items():
        out(f"meta:      {key} = {value}\n")
    out(f"\nprocessing runs ({len(runs)}):\n" if runs else "\nno processing runs yet\n")
    for r in runs:
        when = r.started_at.strftime("%Y-%m-%d %H:%M:%S")
        out(f"  {when}  {r.stage:<10} {r.outcome!s:<10}" + (f" {r.error}" if r.error else ""))
        out("\n")
    _versions(out, versions)
    if item.status is ItemStatus.FAILED:
        out(f"\nto try again: relata reprocess {item.id}\n")
    return 0


def _versions(out: Any, versions: list[ItemVersion]) -> None:
    """The item's versions, newest first; a previous one's original may be gone."""
    out(f"\nversions ({len(versions)}):\n")
    for n, v in enumerate(versions):
        when = v.created_at.strftime("%Y-%m-%d %H:%M:%S")
        note = "current" if n == 0 else ("kept" if v.original_path else "original removed")
        name = v.filename or "-"
        out(f"  {v.number:>3}  {when}  {v.sha256[:12]}  {v.size_bytes:>9} B  {note:<16} {name}\n")


def _delete(args: argparse.Namespace) -> int:
    if not args.yes and not sys.stdin.isatty():
        raise CliError(
            "refusing to delete without --yes: standard input is not a terminal", exit_code=2
        )
    with open_container(log=False) as c:
        ws = c.workspaces.resolve(args.workspace)
        item = _get(c, ws, args.item_id).item
        if not args.yes:
            answer = input(f"Delete {_name(item)!r} ({item.id}) and all derived from it? [y/N] ")
            if answer.strip().lower() not in {"y", "yes"}:
                print("not deleted")
                return 1
        c.items.delete(ws.id, item.id, actor=CLI_ACTOR)
    print(f"deleted {item.id} ({_name(item)})")
    return 0
