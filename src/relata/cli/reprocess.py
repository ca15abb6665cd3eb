"""``relata reprocess``: run the pipeline over items again, from a stage.

``relata reprocess ID...`` starts a new pass over each item from ``--from STAGE`` (default: the
stage it failed at, else the first); that stage and every later one run again, the earlier
ones do not. ``--failed`` does it for every failed item of the workspace (each from the stage
it failed at, unless ``--from``), ``--all`` for every item. The passes run in ``relata serve``
or ``relata worker``; ``--wait`` runs them here and reports how they ended.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from relata.cli.common import CliError, add_workspace_option, existing_workspace, open_container
from relata.domain.models import CLI_ACTOR
from relata.domain.vocabulary import StageKind

if TYPE_CHECKING:
    from relata.bootstrap import Container
    from relata.pipeline import Reprocessing

_PAGE = 1000
_MAX_ITEMS = 1_000_000  # a bound on --all; far beyond one embedded workspace


def register(sub: Any) -> None:
    p = sub.add_parser(
        "reprocess",
        help="run the pipeline over items again, from a stage",
        description="Run the pipeline over items again from a stage (default: the stage each "
        "item failed at, else the first): that stage and every later one run again. Name "
        "items by id, or use --failed or --all.",
    )
    p.add_argument("item_ids", nargs="*", metavar="ID", help="items to reprocess")
    add_workspace_option(p)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--failed", action="store_true", help="every failed item")
    which.add_argument("--all", action="store_true", dest="all_items", help="every item")
    p.add_argument(
        "--from",
        dest="from_stage",
        choices=[k.value for k in StageKind],
        help="the stage to start at",
    )
    p.add_argument("--wait", action="store_true", help="run the passes here and report")
    p.add_argument(
        "--timeout", type=float, default=3600.0, metavar="S", help="with --wait (default 3600)"
    )
    p.set_defaults(handler=_reprocess)


def _reprocess(args: argparse.Namespace) -> int:
    chosen = bool(args.item_ids) + args.failed + args.all_items
    if chosen != 1:
        raise CliError("name the items to reprocess (IDs), or pass --failed or --all", 2)
    with open_container(log=False) as c:
        ws = existing_workspace(c, args.workspace)
        if ws is None:
            print("nothing to reprocess: the workspace has no items yet")
            return 0
        started = _start(c, ws.id, args)
        if not started:
            print("nothing to reprocess" + (": no item has failed" if args.failed else ""))
            return 0
        for r in started:
            print(f"{r.item.id}  from {r.from_stage}  (pass {r.generation})")
        noun = "item" if len(started) == 1 else "items"
        if not args.wait:
            print(
                f"{len(started)} {noun} queued: the passes run in `relata serve` or "
                "`relata worker` (or pass --wait)"
            )
            return 0
        return _wait(c, ws.id, [r.item.id for r in started], args.timeout)


def _start(c: Container, workspace_id: str, args: argparse.Namespace) -> list[Reprocessing]:
    from relata.domain.errors import NotFound

    if args.failed:
        return c.items.reprocess_failed(workspace_id, from_stage=args.from_stage, actor=CLI_ACTOR)
    ids: list[str] = list(args.item_ids)
    if args.all_items:
        ids = []
        while len(ids) < _MAX_ITEMS:
            page = c.items.list(workspace_id, limit=_PAGE, offset=len(ids))
            ids += [i.id for i in page]
            if len(page) < _PAGE:
                break
    started = []
    for item_id in ids:
        try:
            started.append(
                c.items.reprocess(
                    workspace_id, item_id, from_stage=args.from_stage, actor=CLI_ACTOR
                )
            )
        except NotFound:
            raise CliError(f"no item {item_id!r} (`relata items` lists them)") from None
    return started


def _wait(c: Container, workspace_id: str, item_ids: list[str], timeout: float) -> int:
    from relata.ingest.bulk import wait_until_settled

    pool = c.worker_pool()
    pool.start()
    try:
        settled = wait_until_settled(
            c.repos.items, c.queue, workspace_id, item_ids, timeout=timeout
        )
    finally:
        pool.stop(c.settings.shutdown_timeout)
    counts = settled.counts
    print(
        f"ready {counts.get('ready', 0)}, failed {counts.get('failed', 0)} "
        f"in {settled.seconds:.1f} s"
    )
    if not settled.finished:
        print("not finished within --timeout; the rest goes on in a worker")
        return 1
    if counts.get("failed", 0):
        for item in c.repos.items.list_failed(workspace_id, limit=_PAGE):
            if item.id in item_ids:
                print(f"failed: {item.id} {item.original_filename or item.title}: {item.error}")
        return 1
    return 0
