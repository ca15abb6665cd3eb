"""``relata claims ITEM``, ``relata contradictions`` and ``relata resolve``: what items state
about their entities, and the ledger of where sources disagree, through the same claim service
the API uses.

``contradictions [--status open|resolved|superseded] [--kind contradiction|supersession]
[--subject NAME]`` shows one row per disagreement (docs/decisions/0038): its subject, what is
disputed and its positions side by side, each with how many sources hold it and their
quotations; ``--pairs`` shows the pair-level records underneath instead. ``resolve ID --as
RESOLUTION [--position N] [--note TEXT]`` records a person's resolution of a disagreement
(position_correct with a position, both_valid, not_a_contradiction, superseded) or of a pair
(first_correct, second_correct, both_valid, not_a_contradiction), which reprocessing never
overwrites.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from relata.cli.common import CliError, add_workspace_option, existing_workspace, open_container
from relata.domain.disagreements import topic_label
from relata.domain.excerpts import clip_quote
from relata.domain.models import CLI_ACTOR, ClaimSide
from relata.domain.vocabulary import (
    ContradictionStatus,
    DisagreementKind,
    DisagreementStatus,
    Resolution,
)

if TYPE_CHECKING:
    from relata.bootstrap import Container
    from relata.domain.models import Contradiction, Disagreement

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
        help="list where sources disagree: one row per disagreement, positions side by side",
        description="List the disagreements: a subject, what is disputed, and two or more "
        "positions, each a value with how many sources hold it and their quotations. A "
        "supersession (a state that changed: dated sources, the newer one holds) is listed "
        "too, with status superseded. `relata resolve ID --as RESOLUTION` resolves one; "
        "`--pairs` lists the pair-level contradictions underneath.",
    )
    add_workspace_option(p)
    p.add_argument("--status", choices=[s.value for s in DisagreementStatus], help="filter")
    p.add_argument("--kind", choices=[k.value for k in DisagreementKind], help="filter")
    p.add_argument("--pairs", action="store_true", help="the pair-level records underneath instead")
    p.add_argument("--subject", metavar="NAME", help="only about this entity")
    p.add_argument(
        "--limit", type=int, default=50, metavar="N", help="how many (1-1000, default 50)"
    )
    p.add_argument("--json", action="store_true", help="one JSON array instead of text")
    p.set_defaults(handler=_contradictions)

    p = sub.add_parser(
        "resolve",
        help="resolve a disagreement or a pair (kept through reprocessing)",
        description="Resolve a disagreement: position_correct --position N, both_valid (a "
        "different time or context), not_a_contradiction, or superseded (confirms a "
        "supersession; any other resolution overrules it). A pair (`--pairs` ids): "
        "first_correct, second_correct, both_valid or not_a_contradiction. Reprocessing never "
        "overwrites a resolution; a disagreement reopens when a position's claims change.",
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
    p.add_argument(
        "--position", type=int, metavar="N", help="with position_correct: the position's number"
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


def _quoted(quotation: str, start: int, conflict: tuple[int, int]) -> str:
    """The quotation cut at word boundaries, the conflicting words (item offsets) whole."""
    return clip_quote(quotation, _QUOTE, (conflict[0] - start, conflict[1] - start))


def _side(c: Container, ws: str, label: str, s: ClaimSide) -> str:
    items = c.repos.items.get_many(ws, [s.item_id], with_text=False)
    title = items[0].title if items else "(item gone)"
    quote = _quoted(s.quotation, s.start, (s.conflict_start, s.conflict_end))
    return f"  {label}: {title}  [{s.start}:{s.end}]\n     “{quote}”"


def _print(c: Container, ws: str, x: Contradiction) -> None:
    status = x.status.value + (f" as {x.resolution.value}" if x.resolution else "")
    print(f"{x.id}  {status}  {x.subject_name}: {x.facet} ({x.reason})")
    for label, s in (("first", x.first), ("second", x.second)):
        print(_side(c, ws, label, s))
    if x.note:
        print(f"  note: {x.note}")


def _titles(c: Container, ws: str, ids: list[str]) -> dict[str, str]:
    return {i.id: i.title for i in c.repos.items.get_many(ws, sorted(set(ids)), with_text=False)}


def _print_disagreement(c: Container, ws: str, d: Disagreement) -> None:
    status = d.status.value + (f" as {d.resolution.value}" if d.resolution else "")
    if d.position is not None:
        status += f" {d.position + 1}"
    print(f"{d.id}  {status}  {d.subject_name}: {topic_label(d.topic)} ({d.kind.value})")
    titles = _titles(c, ws, [s.item_id for p in d.positions for s in p.sources])
    for n, p in enumerate(d.positions):
        held = len({s.item_id for s in p.sources})
        mark = ""
        if d.current is not None:
            mark = "  [current]" if n == d.current else "  [superseded]"
        print(f"  {n + 1}. “{p.value}”: {held} source{'s' if held != 1 else ''}{mark}")
        dates = dict(p.dates)
        for s in p.sources:
            when = f", {dates[s.item_id]}" if s.item_id in dates else ""
            title = titles.get(s.item_id, "(item gone)")
            print(f"     {title}{when}  [{s.start}:{s.end}]")
            if s.quotation.split() != p.value.split():  # else the value above says it
                quote = _quoted(s.quotation, s.start, (s.conflict_start, s.conflict_end))
                print(f"       “{quote}”")
    if d.note:
        print(f"  note: {d.note}")


def _contradictions(args: argparse.Namespace) -> int:
    from relata.schemas.claims import contradiction_out, disagreement_out

    if args.pairs:
        if args.kind:
            raise CliError("--kind applies to disagreements, not --pairs")
        if args.status == DisagreementStatus.SUPERSEDED.value:
            raise CliError("--status superseded applies to disagreements, not --pairs")
    with open_container(log=False) as c:
        ws = existing_workspace(c, args.workspace)
        if args.pairs:
            pairs: list[Contradiction] = []
            if ws is not None:
                pairs = c.claims.contradictions(
                    ws.id,
                    status=ContradictionStatus(args.status) if args.status else None,
                    subject=args.subject,
                    limit=args.limit,
                )
            if args.json:
                _dump([contradiction_out(x).model_dump(mode="json") for x in pairs])
                return 0
            if not pairs:
                print("no contradictions" + (f" ({args.status})" if args.status else ""))
                return 0
            for x in pairs:
                _print(c, ws.id if ws else "", x)
                print()
            return 0
        found: list[Disagreement] = []
        if ws is not None:
            found = c.claims.disagreements(
                ws.id,
                status=DisagreementStatus(args.status) if args.status else None,
                kind=DisagreementKind(args.kind) if args.kind else None,
                subject=args.subject,
                limit=args.limit,
            )
        if args.json:
            _dump([disagreement_out(x).model_dump(mode="json") for x in found])
            return 0
        if not found:
            print("no disagreements" + (f" ({args.status})" if args.status else ""))
            return 0
        for d in found:
            _print_disagreement(c, ws.id if ws else "", d)
            print()
    if any(d.status is not DisagreementStatus.RESOLVED for d in found):
        print(
            "resolve one with `relata resolve ID --as position_correct --position N|both_valid|"
            "not_a_contradiction|superseded [--note TEXT]`"
        )
    return 0


def _resolve(args: argparse.Namespace) -> int:
    from relata.domain.errors import NotFound, ValidationError

    pair_only = {Resolution.FIRST_CORRECT.value, Resolution.SECOND_CORRECT.value}
    with open_container(log=False) as c:
        ws = c.workspaces.resolve(args.workspace)
        try:
            if args.resolution not in pair_only:
                try:
                    d = c.claims.resolve_disagreement(
                        ws.id,
                        args.contradiction_id,
                        Resolution(args.resolution),
                        by=_LOCAL_ACTOR,
                        position=args.position,
                        note=args.note,
                        actor=CLI_ACTOR,
                    )
                except NotFound:
                    pass
                else:
                    _print_disagreement(c, ws.id, d)
                    return 0
            if args.position is not None:
                raise CliError("--position applies to a disagreement (`relata contradictions`)")
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
                f"no disagreement or contradiction {args.contradiction_id!r} "
                "(`relata contradictions` lists them)"
            ) from None
        except ValidationError as exc:
            raise CliError(str(exc)) from None
        _print(c, ws.id, done)
    return 0
