"""``relata ask "question"``: a cited answer from the command line, through the API's service.

Prints the answer, the sources it cites and its sentences' verdicts against the excerpts
they cite (supported with the supporting sentence, UNSUPPORTED naming the facet, uncited), or
why the answer is unavailable (no model configured, no matching source, a rejected reply),
followed by every retrieved source. Exit code 0 in both cases; 1 when the model provider
failed or the input is invalid.

On a terminal (and without ``--json``) the answer is streamed (docs/decisions/
0042-streaming-answers.md): its text is printed as the model writes it, without citation
markers, then the checked answer as above; a streamed text the check rejects is said to be
rejected. Piped or redirected, the output is exactly as before.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

from relata.cli.common import add_workspace_option, clip_words, open_container, plural
from relata.domain.excerpts import clip_quote
from relata.schemas.answers import to_out
from relata.search.answers import DEFAULT_LIMIT, MAX_LIMIT, Answer, Answered, TextWritten
from relata.search.sentence_checks import SentenceCheck, SentenceVerdict, counts

if TYPE_CHECKING:
    from relata.bootstrap import Container

_SNIPPET_CHARS = 200


def register(sub: Any) -> None:
    p = sub.add_parser(
        "ask",
        help="answer a question from a workspace, citing its sources",
        description="Search the workspace for the question and ask the configured language "
        "model (RELATA_AI_PROVIDER, RELATA_AI_MODEL) to answer from the retrieved excerpts "
        "only. Without a model (the default), or when the reply is rejected, the answer is "
        "unavailable and the retrieved sources are printed with the reason.",
    )
    p.add_argument("question", help="what to ask")
    add_workspace_option(p)
    p.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"sources to answer from (1-{MAX_LIMIT}, default {DEFAULT_LIMIT})",
    )
    p.add_argument("--json", action="store_true", help="print the API's JSON response")
    p.set_defaults(handler=_ask)


def _ask(args: argparse.Namespace) -> int:
    with open_container(log=False) as c:
        ws = c.workspaces.resolve(args.workspace)
        if not args.json and sys.stdout.isatty():
            print_answer(stream_answer(c, ws.id, args.question, args.limit, sys.stdout), sys.stdout)
            return 0
        ans = c.answers.answer(ws.id, args.question, limit=args.limit)
    if args.json:
        print(json.dumps(to_out(ans).model_dump(mode="json"), ensure_ascii=False, indent=2))
    else:
        print_answer(ans, sys.stdout)
    return 0


def stream_answer(
    c: Container, workspace_id: str, question: str, limit: int, out: TextIO
) -> Answer:
    """Print the answer's text to ``out`` as it is written; the checked answer."""
    written = False
    for event in c.answers.stream(workspace_id, question, limit=limit):
        if isinstance(event, TextWritten):
            out.write(event.text)
            out.flush()
            written = written or bool(event.text.strip())
        elif isinstance(event, Answered):
            if written:
                print("\n", file=out)
                if event.answer.status != "ok":
                    print("note: the text above was rejected by the checks", file=out)
            return event.answer
    raise RuntimeError("the answer stream ended without an answer")  # pragma: no cover


def print_answer(ans: Answer, out: TextIO) -> None:
    if ans.status == "ok":
        print(ans.answer, file=out)
        print("\ncited:", file=out)
        for s in ans.citations:
            print(f"  [{s.ref}] {s.title}", file=out)
        if ans.dropped_citations:
            dropped = plural(ans.dropped_citations, "citation")
            verb = "was" if ans.dropped_citations == 1 else "were"
            print(f"note: {dropped} named no supplied source and {verb} dropped", file=out)
        print_checks(ans.checks, out)
    else:
        print(f"answer unavailable ({ans.reason}): {ans.message}", file=out)
    if not ans.sources:
        print("\nno sources", file=out)
        return
    print(f"\nsources ({len(ans.sources)}):", file=out)
    for s in ans.sources:
        snippet = clip_words(s.excerpt, _SNIPPET_CHARS)
        print(f"  [{s.ref}] {s.title}  item={s.item_id}  score={s.score:.4f}", file=out)
        print(f"       {snippet}", file=out)
        if s.superseded:
            print(f"       {s.superseded}", file=out)
    if ans.contradictions:
        titles = {src.item_id: src.title for src in ans.sources}
        n = len(ans.contradictions)
        print(
            f"\nthe sources disagree ({n} {'contradiction' if n == 1 else 'contradictions'}):",
            file=out,
        )
        for x in ans.contradictions:
            state = x.status.value + (f" as {x.resolution.value}" if x.resolution else "")
            print(f"  {x.subject_name}: {x.facet} ({state})  id={x.id}", file=out)
            for side in (x.first, x.second):
                conflict = (side.conflict_start - side.start, side.conflict_end - side.start)
                quote = clip_quote(side.quotation, _SNIPPET_CHARS, conflict)
                print(f"    {titles.get(side.item_id, side.item_id)}: “{quote}”", file=out)


def print_checks(checks: tuple[SentenceCheck, ...], out: TextIO) -> None:
    """Each sentence's verdict, and the cited sentence that supports it or says otherwise."""
    n = counts(checks)
    summary = ", ".join(f"{n[v]} {v.value}" for v in SentenceVerdict)
    print(f"\nchecked sentence by sentence: {summary}", file=out)
    for index, c in enumerate(checks, start=1):
        verdict = c.verdict.value
        if c.verdict is SentenceVerdict.UNSUPPORTED:
            verdict = f"UNSUPPORTED ({c.facet})"
        print(f"  {index}. {verdict}: {clip_words(c.text, _SNIPPET_CHARS)}", file=out)
        if c.reason:
            print(f"       {c.reason}", file=out)
        if c.span is not None:
            where = f"{c.span.ref} [{c.span.start}:{c.span.end}]"
            said = (
                f"supported by {where}"
                if c.verdict is SentenceVerdict.SUPPORTED
                else f"{where} says"
            )
            print(f"       {said}: {clip_words(c.span.text, _SNIPPET_CHARS)}", file=out)
