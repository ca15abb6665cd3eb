"""``relata search "query"``: the same search service the API uses, from the command line."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from relata.cli.common import add_workspace_option, clip_words, open_container, plural
from relata.domain.models import SourceType
from relata.ranking.fusion import SECONDARY_LEGS
from relata.schemas.search import parse_legs, to_out
from relata.search.service import NOTHING_MATCHED, SearchQuery, SearchResponse

_SNIPPET_CHARS = 200


def register(sub: Any) -> None:
    p = sub.add_parser(
        "search",
        help="search a workspace and explain the ranking",
        description="Hybrid search of a workspace: full-text over items and chunks and, with "
        "an embedding provider, meaning-based (vector) matching, fused by reciprocal rank. "
        "Each result shows its best excerpt; --explain shows every leg's rank and share.",
    )
    p.add_argument("query", help="what to look for")
    add_workspace_option(p)
    p.add_argument("--limit", type=int, default=10, metavar="N", help="results (1-100, default 10)")
    p.add_argument(
        "--offset", type=int, default=0, metavar="N", help="skip this many results (paging)"
    )
    p.add_argument("--type", choices=[t.value for t in SourceType], help="only this item type")
    p.add_argument("--legs", metavar="LEGS", help="comma-separated legs to run (default: all)")
    p.add_argument(
        "--weak",
        action="store_true",
        help="also list the weak matches the relevance floor withholds (found by meaning "
        "alone, under the floor), last and marked weak",
    )
    p.add_argument("--json", action="store_true", help="print the API's JSON response")
    p.add_argument("--explain", action="store_true", help="show every leg's rank and share")
    p.set_defaults(handler=_search)


def _search(args: argparse.Namespace) -> int:
    with open_container(log=False) as c:
        ws = c.workspaces.resolve(args.workspace)
        query = SearchQuery(
            text=args.query,
            limit=args.limit,
            offset=args.offset,
            source_type=SourceType(args.type) if args.type else None,
            legs=parse_legs(args.legs),
            weak=args.weak,
        )
        resp = c.search.search(ws.id, query)
    if args.json:
        print(json.dumps(to_out(resp).model_dump(mode="json"), ensure_ascii=False, indent=2))
    else:
        _print(resp, args.explain)
    return 0


def _print(resp: SearchResponse, explain: bool) -> None:
    out = sys.stdout
    if resp.nothing_matched:
        print(NOTHING_MATCHED, file=out)
    for note in resp.notes:
        if note != NOTHING_MATCHED:
            print(f"note: {note}", file=out)
    if not resp.results:
        if not resp.nothing_matched:
            print("no results", file=out)
        return
    print(f"{plural(resp.total, 'result')}; showing {len(resp.results)}", file=out)
    for r in resp.results:
        weak = "  (weak match: under the relevance floor)" if r.weak else ""
        print(f"\n{r.rank:>3}. {r.item.title}  [{r.item.source_type.value}]  id={r.item.id}{weak}")
        if r.open_contradictions:
            disputes = plural(r.open_contradictions, "open contradiction")
            print(f"     disputed: {disputes} (`relata contradictions`)")
        if not explain:  # a supersession is said always (ADR 38); --explain lists every note
            for note in r.explanation.notes:
                if note.startswith(("superseded:", "the current statement")):
                    print(f"     {note}")
        for e in r.excerpts[:1]:
            print(f"     {clip_words(e.text, _SNIPPET_CHARS)}")
        if explain:
            print(f"     fused score {r.score:.5f}")
            for leg in r.explanation.legs:
                extra = ""
                if leg.similarity is not None:
                    extra = f", similarity {leg.similarity:.3f}"
                if leg.matched_terms:
                    extra += f", terms: {', '.join(leg.matched_terms[:8])}"
                if leg.leg in SECONDARY_LEGS and leg.contribution == 0 and leg.weight > 0:
                    extra += ", explains only: the direct legs rank it"
                print(
                    f"       {leg.leg:<12} rank {leg.rank:>4}  "
                    f"+{leg.contribution:.5f} (weight {leg.weight:g}){extra}"
                )
            for note in r.explanation.notes:
                print(f"       note: {note}")
    legs = ", ".join(f"{k}: {v}" for k, v in resp.legs.items())
    print(f"\nlegs — {legs}", file=out)
