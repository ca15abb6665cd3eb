"""``relata entities``, ``relata entity ID`` and ``relata aliases``: the people,
organisations, places and terms a workspace's items name, and the candidate aliases a person
confirms or rejects, through the same entity service the API uses.

``entities [QUERY] [--type T]`` lists entities by how often they are named (QUERY matches
normalised names, so "Dr. Ines Vaughan's" finds "Ines Vaughan"); ``entity ID`` shows one with
every quotation that names it, its aliases and the entities named beside it; ``aliases``
lists the candidates best first, and ``--confirm ID`` / ``--reject ID`` records a decision
(``--note`` says why). A rejected pair is never proposed again, even after reprocessing.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from relata.cli.common import CliError, add_workspace_option, existing_workspace, open_container
from relata.domain.models import CLI_ACTOR
from relata.domain.vocabulary import EntityType

if TYPE_CHECKING:
    from relata.entities.service import AliasView

_QUOTE_CHARS = 80
_LOCAL_ACTOR = "cli"


def register(sub: Any) -> None:
    p = sub.add_parser(
        "entities",
        help="list the entities a workspace's items name",
        description="List the people, organisations, places and terms a workspace's items "
        "name, most named first. QUERY matches normalised names (case, honorifics, "
        "possessives and punctuation do not matter). `relata entity ID` shows one.",
    )
    p.add_argument("query", nargs="?", metavar="QUERY", help="part of a name to look for")
    add_workspace_option(p)
    p.add_argument("--type", choices=[t.value for t in EntityType], help="only this type")
    p.add_argument(
        "--limit", type=int, default=50, metavar="N", help="how many (1-1000, default 50)"
    )
    p.add_argument("--json", action="store_true", help="one JSON array instead of a table")
    p.set_defaults(handler=_entities)

    p = sub.add_parser(
        "entity",
        help="show one entity: every quotation naming it, its aliases, what it is named with",
        description="Show one entity: every quotation that names it (item, offsets), its "
        "aliases with their status and reason, and the entities named in the same items.",
    )
    p.add_argument("entity_id", metavar="ID", help="the entity's id (from `relata entities`)")
    add_workspace_option(p)
    p.add_argument("--json", action="store_true", help="print everything as one JSON object")
    p.set_defaults(handler=_entity)

    p = sub.add_parser(
        "aliases",
        help="review candidate aliases: list them, confirm or reject one",
        description="List candidate aliases (names that may be one subject), best first, with "
        "the reason each was proposed; --confirm ID links the two entities (both records "
        "stay), --reject ID records that they are different (never proposed again).",
    )
    add_workspace_option(p)
    decision = p.add_mutually_exclusive_group()
    decision.add_argument("--confirm", metavar="ID", help="confirm this candidate alias")
    decision.add_argument("--reject", metavar="ID", help="reject this candidate alias")
    p.add_argument("--note", help="why (kept with the decision)")
    p.add_argument(
        "--status",
        choices=["candidate", "confirmed", "rejected"],
        default="candidate",
        help="which to list (default: candidate)",
    )
    p.add_argument(
        "--limit", type=int, default=50, metavar="N", help="how many (1-1000, default 50)"
    )
    p.add_argument("--json", action="store_true", help="one JSON array instead of a table")
    p.set_defaults(handler=_aliases)


def _dump(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def _entities(args: argparse.Namespace) -> int:
    from relata.schemas.entities import entity_out

    with open_container(log=False) as c:
        ws = existing_workspace(c, args.workspace)
        found = []
        if ws is not None:
            found = c.entities.list(
                ws.id,
                query=args.query,
                entity_type=EntityType(args.type) if args.type else None,
                limit=args.limit,
            )
    if args.json:
        _dump([entity_out(e).model_dump(mode="json") for e in found])
        return 0
    if not found:
        print("no entities" + (f" matching {args.query!r}" if args.query else ""))
        return 0
    rows = [("ID", "TYPE", "SEEN", "ITEMS", "NAME")]
    rows += [
        (e.id, e.entity_type.value, str(e.observation_count), str(e.item_count), e.name)
        for e in found
    ]
    widths = [max(len(r[n]) for r in rows) for n in range(4)]
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=False)) + "  " + r[-1])
    return 0


def _entity(args: argparse.Namespace) -> int:
    from relata.domain.errors import NotFound
    from relata.schemas.entities import entity_detail_out

    with open_container(log=False) as c:
        ws = c.workspaces.resolve(args.workspace)
        try:
            detail = c.entities.get(ws.id, args.entity_id)
        except NotFound:
            raise CliError(
                f"no entity {args.entity_id!r} in workspace {ws.slug!r} "
                "(`relata entities` lists them)"
            ) from None
    if args.json:
        _dump(entity_detail_out(detail).model_dump(mode="json"))
        return 0
    e = detail.entity
    print(f"{e.name}  ({e.entity_type.value})  id={e.id}")
    if len(detail.type_votes) > 1:
        votes = ", ".join(f"{t} {n}" for t, n in detail.type_votes)
        print(f"type by its mentions' evidence: {votes} (the majority decides)")
    if not detail.observations:
        print("no sources: every item that named it is gone (kept for a person's decision)")
    else:
        n, k = e.observation_count, e.item_count
        print(
            f"\nnamed {n} {'time' if n == 1 else 'times'} in {k} {'item' if k == 1 else 'items'}:"
        )
    for o in detail.observations:
        ob = o.observation
        title = o.item_title or "(item gone)"
        print(f"  {title}  [{ob.start}:{ob.end}]  “{ob.quotation[:_QUOTE_CHARS]}”")
    if detail.aliases:
        print("\naliases:")
        for v in detail.aliases:
            print("  " + _alias_line(v))
    if detail.co_mentioned:
        print("\nnamed with:")
        for other, shared in detail.co_mentioned:
            items = "item" if shared == 1 else "items"
            print(f"  {other.name} ({other.entity_type.value}): {shared} {items}")
    return 0


def _alias_line(v: AliasView) -> str:
    a = v.alias
    first = v.entity.name if v.entity else "?"
    second = v.other.name if v.other else "?"
    return f"{a.id}  {a.status.value:<9} {a.score:.2f}  {first} ~ {second}: {a.reason}"


def _aliases(args: argparse.Namespace) -> int:
    from relata.domain.errors import NotFound
    from relata.domain.models import AliasStatus
    from relata.schemas.entities import alias_out

    with open_container(log=False) as c:
        ws = existing_workspace(c, args.workspace)
        target = args.confirm or args.reject
        if target:
            if ws is None:
                raise CliError(f"no alias {target!r}: the workspace has no entities yet")
            status = AliasStatus.CONFIRMED if args.confirm else AliasStatus.REJECTED
            try:
                decided = c.entities.decide(
                    ws.id, target, status, by=_LOCAL_ACTOR, note=args.note, actor=CLI_ACTOR
                )
            except NotFound:
                raise CliError(f"no alias {target!r} (`relata aliases` lists them)") from None
            print(f"{status.value}: " + _alias_line(decided))
            return 0
        if args.note:
            raise CliError("--note goes with --confirm or --reject", exit_code=2)
        found = []
        if ws is not None:
            found = c.entities.aliases(ws.id, status=AliasStatus(args.status), limit=args.limit)
    if args.json:
        _dump([alias_out(v).model_dump(mode="json") for v in found])
        return 0
    if not found:
        print(f"no {args.status} aliases")
        return 0
    for v in found:
        print(_alias_line(v))
    if args.status == "candidate":
        print("\nconfirm with `relata aliases --confirm ID`, reject with `--reject ID`")
    return 0
