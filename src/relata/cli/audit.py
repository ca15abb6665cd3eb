"""``relata audit``: a workspace's append-only audit log, newest first.

One line per event: when, the action, who (``cli``, ``local`` for the HTTP API until accounts
exist, later a user or a token), the target by id, the request id and the small structured
details. Nothing here can change an event: the database refuses it (``relata.audit``).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from relata.cli.common import add_workspace_option, existing_workspace, open_container
from relata.domain.vocabulary import AuditAction

if TYPE_CHECKING:
    from relata.domain.models import AuditEvent

_ACTIONS = [a.value for a in AuditAction]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "audit",
        help="list a workspace's audit log (who did what, when), newest first",
        description="List a workspace's audit events, newest first: uploads, deletions, "
        "reprocessing, review decisions, re-embedding and workspace creation, each with who "
        "did it, the target's id, the request id and small details (never document content).",
    )
    add_workspace_option(p)
    p.add_argument("--action", choices=_ACTIONS, metavar="ACTION", help="only this action")
    p.add_argument(
        "--since", metavar="ISO", help="events at or after this date or date-time (UTC if naive)"
    )
    p.add_argument(
        "--until", metavar="ISO", help="events before this date-time (a bare date: that day too)"
    )
    p.add_argument(
        "--limit", type=int, default=50, metavar="N", help="how many (1-1000, default 50)"
    )
    p.add_argument("--offset", type=int, default=0, metavar="N", help="skip this many first")
    p.add_argument("--json", action="store_true", help="one JSON array instead of a table")
    p.set_defaults(handler=_audit)


def _event_dict(e: AuditEvent) -> dict[str, Any]:
    return {
        "id": e.id,
        "action": e.action,
        "at": e.at.isoformat(),
        "actor": {"kind": e.actor_kind, "user_id": e.actor_user_id, "token_id": e.actor_token_id},
        "target": {"kind": e.target_kind, "id": e.target_id} if e.target_kind else None,
        "request_id": e.request_id,
        "details": e.details,
    }


def _actor(e: AuditEvent) -> str:
    who = e.actor_kind
    if e.actor_user_id:
        who += f":{e.actor_user_id}"
    if e.actor_token_id:
        who += f" token:{e.actor_token_id}"
    return who


def _details(e: AuditEvent) -> str:
    return " ".join(f"{k}={v}" for k, v in e.details.items() if v is not None)


def _audit(args: argparse.Namespace) -> int:
    from relata.domain.instants import parse_instant

    since = parse_instant(args.since, "--since")
    until = parse_instant(args.until, "--until", end_of_day=True)
    with open_container(log=False) as c:
        ws = existing_workspace(c, args.workspace)
        events: list[AuditEvent] = []
        if ws is not None:
            events = c.audit.list(
                ws.id,
                action=args.action,
                since=since,
                until=until,
                limit=args.limit,
                offset=args.offset,
            )
    if args.json:
        print(json.dumps([_event_dict(e) for e in events], indent=2, ensure_ascii=False))
        return 0
    if not events:
        print("no audit events")
        return 0
    rows = [("AT", "ACTION", "ACTOR", "TARGET", "REQUEST", "DETAILS")]
    for e in events:
        target = f"{e.target_kind}:{e.target_id}" if e.target_kind else ""
        at = e.at.strftime("%Y-%m-%d %H:%M:%S")
        rows.append((at, e.action, _actor(e), target, e.request_id or "-", _details(e)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        print(
            ("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=False)) + "  " + r[-1]).rstrip()
        )
    return 0
