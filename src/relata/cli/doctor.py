"""``relata doctor``: consistency checks of a data dir and its database, and the repairs.

It reports what a killed process can leave half-done in ingestion (``relata.ingest.recovery``:
stray stored originals, uploads whose processing never started, interrupted deletes, live
items whose original is gone) and, per workspace, what the settings page warns about the
stored vectors (a vector count that differs from the chunk count, chunks of another model).
``--fix`` repairs what can be repaired (the first three; the vectors take ``relata reembed``,
which the warning names). What is younger than the grace period is left alone and said so.

Exit status: 0 when nothing needs attention (or everything found was repaired), 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from relata.cli.common import open_container, plural, where

if TYPE_CHECKING:
    from relata.bootstrap import Container
    from relata.domain.models import Item
    from relata.ingest.originals import StoredFile
    from relata.ingest.recovery import Report

_SHOWN = 20  # rows listed per finding in the text output (all of them with --json)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "doctor",
        help="check the data dir and database for what a crash left behind; --fix repairs",
        description="Check the data dir and the database: stored originals no item refers "
        "to (and temporary files of interrupted writes), uploads whose processing never "
        "started, interrupted deletes, items whose stored original is missing, and vector "
        "counts that differ from the chunk counts. --fix removes the stray files, starts the "
        "unstarted uploads and finishes the deletes. Only what is older than "
        "RELATA_RECOVERY_GRACE_SECONDS (or --grace) is touched: younger work may still be "
        "under way in another process. Exit status 1 when something needs attention.",
    )
    p.add_argument("--fix", action="store_true", help="repair what can be repaired")
    p.add_argument(
        "--grace",
        type=int,
        metavar="SECONDS",
        help="leave alone what is younger than this (default RELATA_RECOVERY_GRACE_SECONDS)",
    )
    p.add_argument("--json", action="store_true", help="one JSON object instead of text")
    p.set_defaults(handler=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    from relata.domain.errors import ValidationError
    from relata.domain.models import CLI_ACTOR

    if args.grace is not None and args.grace < 0:
        raise ValidationError("--grace must be 0 or more seconds", field="--grace")
    with open_container(log=False) as c:
        grace = timedelta(seconds=args.grace) if args.grace is not None else c.recovery.grace
        report = c.recovery.run(fix=args.fix, grace=grace, actor=CLI_ACTOR)
        vectors = _vector_warnings(c)
        place = where(c.settings).describe()
    attention = (0 if args.fix else report.repairable) + len(report.missing_originals)
    attention += sum(len(w) for w in vectors.values())
    if args.json:
        print(json.dumps(_as_json(report, vectors, grace, attention), indent=2))
    else:
        _print(report, vectors, grace, place, attention)
    return 1 if attention else 0


def _vector_warnings(c: Container) -> dict[str, list[str]]:
    return {
        ws.slug: found
        for ws in c.workspaces.all()
        if (found := c.model_status.stored_warnings(ws.id))
    }


def _file(f: StoredFile) -> dict[str, Any]:
    when = datetime.fromtimestamp(f.modified, UTC).isoformat(timespec="seconds")
    return {"path": f.rel, "kind": f.kind.value, "bytes": f.size, "modified": when}


def _item(i: Item) -> dict[str, str]:
    return {"workspace_id": i.workspace_id, "item_id": i.id}


def _as_json(
    r: Report, vectors: dict[str, list[str]], grace: timedelta, attention: int
) -> dict[str, Any]:
    return {
        "fixed": r.fixed,
        "grace_seconds": int(grace.total_seconds()),
        "scanned_files": r.scanned_files,
        "stray_originals": [_file(f) for f in r.stray],
        "younger_than_grace": [_file(f) for f in r.young],
        "unknown_files": [_file(f) for f in r.unknown],
        "unstarted_uploads": [_item(i) for i in r.unstarted],
        "interrupted_deletes": [_item(i) for i in r.interrupted_deletes],
        "missing_originals": [{"workspace_id": w, "item_id": i} for w, i in r.missing_originals],
        "vector_warnings": vectors,
        "needs_attention": attention,
    }


def _print(
    r: Report, vectors: dict[str, list[str]], grace: timedelta, place: str, attention: int
) -> None:
    print(f"relata doctor: {place}")
    done = "removed" if r.fixed else "--fix removes them"
    _finding(
        f"stray originals (no item refers to them; temporary files of interrupted writes): {done}",
        [f"{f.rel} ({f.kind.value}, {f.size} bytes)" for f in r.stray],
    )
    done = "started" if r.fixed else "--fix starts their processing"
    _finding(
        f"uploads whose processing never started: {done}",
        [f"{i.id} in workspace {i.workspace_id}" for i in r.unstarted],
    )
    done = "finished" if r.fixed else "--fix finishes them"
    _finding(
        f"interrupted deletes: {done}",
        [f"{i.id} in workspace {i.workspace_id}" for i in r.interrupted_deletes],
    )
    _finding(
        "items whose stored original is missing (delete them, or upload the file again)",
        [f"{i} in workspace {w}" for w, i in r.missing_originals],
    )
    for slug, warnings in vectors.items():
        _finding(f"vectors of workspace {slug}", warnings)
    seconds = int(grace.total_seconds())
    if r.young:
        print(
            f"left alone: {plural(len(r.young), 'unreferenced file')} younger than "
            f"{seconds} s (RELATA_RECOVERY_GRACE_SECONDS or --grace): an upload may still "
            "be writing them"
        )
    if r.unknown:
        print(f"not Relata's, left alone under originals/: {plural(len(r.unknown), 'file')}")
        for f in r.unknown[:_SHOWN]:
            print(f"  {f.rel}")
    print(f"checked {plural(r.scanned_files, 'stored file')}")
    if attention:
        print(f"{plural(attention, 'finding')} need attention")
    else:
        print("ok: nothing needs attention" + (" (after the repairs)" if r.fixed else ""))


def _finding(title: str, rows: list[str]) -> None:
    if not rows:
        return
    print(f"{title}: {len(rows)}")
    for row in rows[:_SHOWN]:
        print(f"  {row}")
    if len(rows) > _SHOWN:
        print(f"  ... and {len(rows) - _SHOWN} more (--json lists them all)")
