"""``relata ingest PATH --replace ID``: one file as a new version of an item
(docs/decisions/0045-item-versions.md), then (unless ``--no-wait``) its pass run here.

Prints the version made, or that the file is the current version's content (nothing changed).
Exit code 1 when the file is refused or the pass fails.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from relata.cli.common import CliError, open_container
from relata.cli.ingest import resolve_workspace
from relata.domain.errors import NotFound, RelataError
from relata.domain.models import CLI_ACTOR, ItemStatus


def _read(path: Path, limit: int) -> bytes:
    if not path.is_file():
        raise CliError(f"{path} is not a readable file")
    with path.open("rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise CliError(f"{path} is over the limit of {limit} bytes (RELATA_MAX_UPLOAD_BYTES)")
    return data


def replace(args: argparse.Namespace) -> int:
    from relata.ingest.bulk import wait_until_settled

    if args.jsonl or len(args.paths) != 1:
        raise CliError("--replace ID takes exactly one file (PATH), and no --jsonl", 2)
    path = Path(args.paths[0])
    with open_container(log=False, schema="migrate") as c:
        ws = resolve_workspace(c, args.workspace)
        data = _read(path, c.settings.max_upload_bytes)
        try:
            with c.versions.admit():
                done = c.versions.upload(
                    ws.id, args.replace, data, filename=path.name, actor=CLI_ACTOR
                )
        except NotFound:
            raise CliError(
                f"no item {args.replace!r} in workspace {ws.slug!r} (`relata items` lists them)"
            ) from None
        except RelataError as exc:
            raise CliError(f"{path}: {exc.message}") from None
        item_id = done.item.id
        if done.unchanged:
            print(f"unchanged: {path} is version {done.version.number} of {item_id} already")
            return 0
        print(f"{item_id}: version {done.version.number} from {path}")
        if args.no_wait:
            print("processing left to `relata serve` or `relata worker` (--no-wait)")
            return 0
        pool = c.worker_pool(workers=1)
        pool.start()
        try:
            settled = wait_until_settled(
                c.repos.items, c.queue, ws.id, [item_id], timeout=args.timeout
            )
        finally:
            pool.stop(c.settings.shutdown_timeout)
        item = c.repos.items.get(ws.id, item_id)
        print(f"processed: {item.status.value} in {settled.seconds:.1f} s")
        if not settled.finished:
            print("processing did not finish within --timeout; a worker will finish it")
            return 1
        if item.status is ItemStatus.FAILED:
            print(f"failed: {item.error} (`relata item {item_id}` shows its runs)")
            return 1
    return 0
