"""``relata related ITEM`` and ``relata review``: the scored, evidenced links between items and
a person's decision on them, through the same relationship service the API uses
(docs/decisions/0019-relationships.md).

``related ITEM [--all]`` prints one line per related item: the relationship's id, type, score
and review state, the other item's title and id, and why. ``review`` on a terminal walks the
review queue, best first: both titles, the type, score, why and every quotation of the
evidence, then ``[c]onfirm [r]eject [e]dit type [s]kip [q]uit``. ``review --confirm ID``,
``--reject ID`` and ``--edit ID --type TYPE`` (each with ``--note``) decide without asking;
``review --list`` prints the queue. Without a terminal on standard input and without an
action, ``review`` lists: it never waits for an answer nobody can give.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from relata.cli.common import CliError, add_workspace_option, existing_workspace, open_container
from relata.domain.excerpts import clip_quote
from relata.domain.models import CLI_ACTOR
from relata.domain.vocabulary import RelationshipType

if TYPE_CHECKING:
    from relata.bootstrap import Container
    from relata.domain.models import Relationship

#: Who decided, as the other CLI reviews record it (``relata resolve``, ``relata aliases``).
_LOCAL_ACTOR = "cli"
_QUOTE = 160
_TYPES = [t.value for t in RelationshipType]
_PROMPT = "[c]onfirm [r]eject [e]dit type [s]kip [q]uit: "


def register(sub: Any) -> None:
    p = sub.add_parser(
        "related",
        help="list an item's related items, with why",
        description="List the items related to ITEM, best score first, one line each: the "
        "relationship's id, type, score and review state, the other item's title and id, and "
        "why (the evidence in words). Rejected relationships are left out unless --all.",
    )
    p.add_argument("item_id", metavar="ITEM", help="the item's id (from `relata items`)")
    add_workspace_option(p)
    p.add_argument("--all", action="store_true", help="include the rejected ones")
    p.add_argument(
        "--limit", type=int, default=50, metavar="N", help="how many (1-200, default 50)"
    )
    p.add_argument("--json", action="store_true", help="one JSON array instead of text")
    p.set_defaults(handler=_related)

    p = sub.add_parser(
        "review",
        help="review relationships: confirm, reject or re-type them",
        description="On a terminal, walk the review queue (unreviewed relationships, best "
        "first), showing both items, the type, score, why and the evidence quotations, and "
        "ask to [c]onfirm, [r]eject, [e]dit the type, [s]kip or [q]uit. --confirm ID, "
        "--reject ID and --edit ID --type TYPE decide one without asking; --list prints the "
        "queue. Without a terminal and without an action it lists. A decision is kept "
        "through reprocessing; a rejected relationship comes back only when its evidence "
        "changes materially.",
    )
    add_workspace_option(p)
    action = p.add_mutually_exclusive_group()
    action.add_argument("--confirm", metavar="ID", help="confirm this relationship")
    action.add_argument("--reject", metavar="ID", help="reject this relationship")
    action.add_argument("--edit", metavar="ID", help="set this relationship's type (--type)")
    action.add_argument("--list", action="store_true", help="print the queue, do not ask")
    p.add_argument("--type", choices=_TYPES, help="the new type, with --edit")
    p.add_argument("--note", help="why (kept with the decision)")
    p.add_argument(
        "--limit", type=int, default=20, metavar="N", help="how many (1-200, default 20)"
    )
    p.add_argument("--json", action="store_true", help="JSON instead of text (never asks)")
    p.set_defaults(handler=_review)


def _dump(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def _flat(text: str, limit: int = _QUOTE) -> str:
    return clip_quote(text, limit)


def _title(titles: Mapping[str, str], item_id: str) -> str:
    return titles.get(item_id, "(item gone)")


def _state(rel: Relationship) -> str:
    return rel.review_status.value


def _why(rel: Relationship, titles: Mapping[str, str]) -> str:
    from relata.relationships.explain import evidence_phrases

    return "; ".join(evidence_phrases(rel, titles)) or "no evidence recorded"


# ---------------------------------------------------------------- relata related
def _related(args: argparse.Namespace) -> int:
    from relata.domain.errors import NotFound
    from relata.schemas.relationships import related_out

    with open_container(log=False) as c:
        ws = c.workspaces.resolve(args.workspace)
        try:
            found = c.relationships.related(
                ws.id, args.item_id, include_rejected=args.all, limit=args.limit
            )
        except NotFound:
            raise CliError(f"no item {args.item_id!r} (`relata items` lists them)") from None
        titles = c.relationships.titles(ws.id, [r.relationship for r in found])
    if args.json:
        _dump([related_out(r, titles).model_dump(mode="json") for r in found])
        return 0
    if not found:
        print("no related items" + ("" if args.all else " (--all includes rejected ones)"))
        return 0
    for r in found:
        rel = r.relationship
        print(
            f"{rel.id}  {rel.relationship_type.value:<14} {rel.score:.3f}  {_state(rel):<10}  "
            f"{r.other_title} ({r.other_id}): {_why(rel, titles)}"
        )
    return 0


# ---------------------------------------------------------------- relata review
def _review(args: argparse.Namespace) -> int:
    target = args.confirm or args.reject or args.edit
    if args.type and not args.edit:
        raise CliError("--type goes with --edit ID", exit_code=2)
    if args.edit and not args.type:
        raise CliError(f"--edit needs --type (one of: {', '.join(_TYPES)})", exit_code=2)
    if target:
        return _decide(args, target)
    if args.note:
        raise CliError("--note goes with --confirm, --reject or --edit", exit_code=2)
    interactive = not (args.list or args.json) and sys.stdin.isatty()
    with open_container(log=False) as c:
        ws = existing_workspace(c, args.workspace)
        queue = c.relationships.queue(ws.id, limit=args.limit) if ws is not None else []
        titles = c.relationships.titles(ws.id, queue) if ws is not None else {}
        if args.json:
            from relata.schemas.relationships import relationship_out

            _dump([relationship_out(r, titles).model_dump(mode="json") for r in queue])
            return 0
        if ws is None or not queue:
            print("nothing to review: no relationship is waiting for a decision")
            return 0
        if interactive:
            return _walk(c, ws.id, queue, titles)
    for rel in queue:
        print(_line(rel, titles))
    print(
        "\nreview them with `relata review` on a terminal, or decide one with "
        "`relata review --confirm ID`, `--reject ID` or `--edit ID --type TYPE`"
    )
    return 0


def _line(rel: Relationship, titles: Mapping[str, str]) -> str:
    first, second = _title(titles, rel.source_id), _title(titles, rel.target_id)
    return (
        f"{rel.id}  {rel.relationship_type.value:<14} {rel.score:.3f}  "
        f"{first} ~ {second}: {_why(rel, titles)}"
    )


def _decide(args: argparse.Namespace, target: str) -> int:
    from relata.domain.errors import NotFound
    from relata.schemas.relationships import relationship_out

    decision = "confirm" if args.confirm else "reject" if args.reject else "edit"
    with open_container(log=False) as c:
        ws = existing_workspace(c, args.workspace)
        if ws is None:
            raise CliError(f"no relationship {target!r}: the workspace has no items yet")
        try:
            done = c.relationships.review(
                ws.id,
                target,
                decision,
                by=_LOCAL_ACTOR,
                relationship_type=args.type,
                note=args.note,
                actor=CLI_ACTOR,
            )
        except NotFound:
            raise CliError(
                f"no relationship {target!r} (`relata review --list` lists the queue)"
            ) from None
        titles = c.relationships.titles(ws.id, [done])
    if args.json:
        _dump(relationship_out(done, titles).model_dump(mode="json"))
    else:
        print(f"{done.review_status.value}: " + _line(done, titles))
    return 0


# ---------------------------------------------------------------- the interactive walk
def _show(n: int, total: int, rel: Relationship, titles: Mapping[str, str]) -> None:
    from relata.relationships.explain import standing

    print(f"[{n}/{total}] {rel.relationship_type.value}  {rel.score:.3f}  ({standing(rel)})")
    print(f"  id {rel.id}")
    print(f"  {_title(titles, rel.source_id)}  ({rel.source_id})")
    print(f"  {_title(titles, rel.target_id)}  ({rel.target_id})")
    print(f"  why: {_why(rel, titles)}")
    lines = _evidence_lines(rel, titles)
    if lines:
        print("  evidence:")
        for line in lines:
            print(f"    {line}")


def _quote(span: Mapping[str, Any], titles: Mapping[str, str]) -> str:
    where = f"{span.get('start')}:{span.get('end')}"
    title = _title(titles, str(span.get("item")))
    return f"{title} [{where}]: “{_flat(str(span.get('quotation', '')))}”"


def _evidence_lines(rel: Relationship, titles: Mapping[str, str]) -> list[str]:
    """Every evidence record, with the quotation from each side it holds."""
    lines: list[str] = []
    for record in rel.evidence:
        kind = str(record.get("kind"))
        if kind == "reference":
            named = _title(titles, str(record.get("referenced_item")))
            lines.append(f"reference ({record.get('reference_kind')}) to {named}:")
            lines.append("  " + _quote(record.get("span", {}), titles))
            continue
        if kind == "shared_entity":
            lines.append(
                f"both name {record.get('entity_name')} (rarity {record.get('rarity', 0):.2f}):"
            )
        else:
            what = "contradict" if kind == "contradicting_claims" else "agree"
            facet = f", {record['facet']}" if record.get("facet") else ""
            lines.append(
                f"claims that {what} about {record.get('subject_name')} "
                f"(confidence {record.get('confidence', 0):.2f}{facet}):"
            )
        for side in ("first", "second"):
            if isinstance(record.get(side), Mapping):
                lines.append("  " + _quote(record[side], titles))
    return lines


def _ask(prompt: str) -> str | None:
    """One answer from standard input, stripped; ``None`` at its end (taken as quit)."""
    try:
        return input(prompt).strip()
    except EOFError:
        print()
        return None


def _ask_type(current: RelationshipType) -> RelationshipType | None:
    choices = "  ".join(f"{n}) {t}" for n, t in enumerate(_TYPES, 1))
    print(f"  types: {choices}")
    while True:
        answer = _ask(f"  new type (now {current.value}; name or number, blank to go back): ")
        answer = answer.lower() if answer is not None else None
        if not answer:
            return None
        if answer.isdigit() and 1 <= int(answer) <= len(_TYPES):
            return RelationshipType(_TYPES[int(answer) - 1])
        if answer in _TYPES:
            return RelationshipType(answer)
        print(f"  not a type: {answer!r}")


def _walk(c: Container, ws: str, queue: list[Relationship], titles: Mapping[str, str]) -> int:
    """Ask about each queued relationship in turn, then say what was done."""
    done = {"confirmed": 0, "rejected": 0, "edited": 0, "skipped": 0}
    for n, rel in enumerate(queue, 1):
        if n > 1:
            print()
        _show(n, len(queue), rel, titles)
        decided = _one(c, ws, rel)
        if decided is None:
            break
        done[decided] += 1
    print("\n" + ", ".join(f"{k} {v}" for k, v in done.items()))
    return 0


def _one(c: Container, ws: str, rel: Relationship) -> str | None:
    """Ask until an answer decides ``rel``: what was done (``skipped`` too), ``None`` to quit."""
    while True:
        answer = _ask(_PROMPT)
        answer = answer.lower() if answer is not None else None
        if answer is None or answer in {"q", "quit"}:
            return None
        if answer in {"s", "skip"}:
            return "skipped"
        if answer in {"c", "confirm", "r", "reject"}:
            decision = "confirm" if answer.startswith("c") else "reject"
            done = c.relationships.review(ws, rel.id, decision, by=_LOCAL_ACTOR, actor=CLI_ACTOR)
            print(f"  {done.review_status.value}")
            return done.review_status.value
        if answer in {"e", "edit"}:
            new_type = _ask_type(rel.relationship_type)
            if new_type is None:
                continue
            typed = _ask("  note (optional): ")
            done = c.relationships.review(
                ws,
                rel.id,
                "edit",
                by=_LOCAL_ACTOR,
                relationship_type=new_type,
                note=typed or None,
                actor=CLI_ACTOR,
            )
            print(f"  edited: now {done.relationship_type.value}")
            return "edited"
        if answer:
            print(f"  answer c, r, e, s or q (not {answer!r})")
