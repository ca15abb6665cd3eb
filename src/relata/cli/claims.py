"""``relata claims ITEM``, ``relata contradictions`` and ``relata resolve``: what items state
about their entities, and the ledger of where sources disagree, through the same claim service
the API uses.

``contradictions [--status open|resolved] [--subject NAME]`` shows both sides of each, with
their quotations; ``resolve ID --as RESOLUTION [--note TEXT]`` records a person's resolution
(first_correct, second_correct, both_valid, not_a_contradiction), which reprocessing never
overwrites.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from relata.cli.common import CliError, add_workspace_option, existing_workspace, open_container
from relata.domain.models import CLI_ACTOR
from relata.domain.vocabulary import ContradictionStatus, Resolution

if TYPE_CHECKING:
    from relata.bootstrap import Container
    from relata.domain.models import Contradiction

_LOCAL_ACTOR = "cli"
_QUOTE = 160


def register(sub: Any) -> None:
    p = sub.add_parser(
        "claims",
        help="list the claims an item makes about its entities",
        description="List the statements an item makes about the entities it names, in text "
        "order: subject, nature, the exact quotation and its offsets, and the comparable "
        "facets (dates, quantities, polarity, direction).",
    )
    p.add_argument("item_id", metavar="ITEM", help="the item's id (from `relata items`)")
    add_workspace_option(p)
    p.add_argument("--json", action="store_true", help="one JSON array instead of text")
    p.set_defaults(handler=_claims)

    p = sub.add_parser(
        "contradictions",
        help="list where sources disagree, with both quotations",
        description="List the contradiction ledger: two claims of different items about the "
        "same subject that cannot both hold, each with its quotation, the conflicting facet, "
        "and its status. `relata resolve ID --as RESOLUTION` resolves one.",
    )
    add_workspace_option(p)
    p.add_argument("--status", choices=[s.value for s in ContradictionStatus], help="filter")
    p.add_argument("--subject", metavar="NAME", help="only about this entity")
    p.add_argument(
        "--limit", type=int, default=50, metavar="N", help="how many (1-1000, default 50)"
    )
    p.add_argument("--json", action="store_true", help="one JSON array instead of text")
    p.set_defaults(handler=_contradictions)

    p = sub.add_parser(
        "resolve",
        help="resolve a contradiction (kept through reprocessing)",
        description="Resolve a contradiction: first_correct, second_correct, both_valid (a "
        "different time or context) or not_a_contradiction (not proposed again while both "
        "claims are unchanged). Reprocessing never overwrites a resolution.",
    )
    p.add_argument("contradiction_id", metavar="ID", help="from `relata contradictions`")
    add_workspace_option(p)
    p.add_argument(
        "--as",
        dest="resolution",
        required=True,
        choices=[r.value for r in Resolution],
        help="the resolution",
    )
    p.add_argument("--note", help="why (kept with the resolution)")
    p.set_defaults(handler=_resolve)


def _dump(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def _claims(args: argparse.Namespace) -> int:
    from relata.domain.errors import NotFound
    from relata.schemas.claims import claim_out

    with open_container(log=False) as c:
        ws = c.workspaces.resolve(args.workspace)
        try:
            found = c.claims.for_item(ws.id, args.item_id)
        except NotFound:
            raise CliError(f"no item {args.item_id!r} (`relata items` lists them)") from None
    if args.json:
        _dump([claim_out(x).model_dump(mode="json") for x in found])
        return 0
    if not found:
        print("no claims: the item states nothing about an entity it names")
        return 0
    for x in found:
        facets = ", ".join(
            f"{k} {v}" for k, v in x.facets.items() if v and k in {"dates", "quantities"}
        )
        if x.facets.get("polarity") == "negated":
            facets = ", ".join(filter(None, [facets, "negated"]))
        print(f"[{x.start}:{x.end}] {x.subject_name} ({x.nature}): “{x.quotation or ''}”")
        if facets:
            print(f"    {facets}")
    return 0


def _side(c: Container, ws: str, label: str, item_id: str, quotation: str, span: str) -> str:
    items = c.repos.items.get_many(ws, [item_id], with_text=False)
    title = items[0].title if items else "(item gone)"
    return f"  {label}: {title}  [{span}]\n     “{' '.join(quotation.split())[:_QUOTE]}”"


def _print(c: Container, ws: str, x: Contradiction) -> None:
    status = x.status.value + (f" as {x.resolution.value}" if x.resolution else "")
    print(f"{x.id}  {status}  {x.subject_name}: {x.facet} ({x.reason})")
    for label, s in (("first", x.first), ("second", x.second)):
        print(_side(c, ws, label, s.item_id, s.quotation, f"{s.start}:{s.end}"))
    if x.note:
        print(f"  note: {x.note}")


def _contradictions(args: argparse.Namespace) -> int:
    from relata.schemas.claims import contradiction_out

    with open_container(log=False) as c:
        ws = existing_workspace(c, args.workspace)
        found = []
        if ws is not None:
            found = c.claims.contradictions(
                ws.id,
                status=ContradictionStatus(args.status) if args.status else None,
                subject=args.subject,
                limit=args.limit,
            )
        if args.json:
            _dump([contradiction_out(x).model_dump(mode="json") for x in found])
            return 0
        if not found:
            print("no contradictions" + (f" ({args.status})" if args.status else ""))
            return 0
        for x in found:
            _print(c, ws.id if ws else "", x)
            print()
    if any(x.status is ContradictionStatus.OPEN for x in found):
        print(
            "resolve one with `relata resolve ID --as first_correct|second_correct|"
            "both_valid|not_a_contradiction [--note TEXT]`"
        )
    return 0


def _resolve(args: argparse.Namespace) -> int:
    from relata.domain.errors import NotFound

    with open_container(log=False) as c:
        ws = c.workspaces.resolve(args.workspace)
        try:
            done = c.claims.resolve(
                ws.id,
                args.contradiction_id,
                Resolution(args.resolution),
                by=_LOCAL_ACTOR,
                note=args.note,
                actor=CLI_ACTOR,
            )
        except NotFound:
            raise CliError(
                f"no contradiction {args.contradiction_id!r} (`relata contradictions` lists them)"
            ) from None
        _print(c, ws.id, done)
    return 0
