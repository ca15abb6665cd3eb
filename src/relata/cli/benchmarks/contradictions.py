"""``relata bench contradictions``: the contradiction ledger against SciFact's labelled pairs,
through the real pipeline.

``claims_<split>.jsonl`` (../shared/bench/README.md) pairs a SciFact claim with an abstract it
cites, labelled SUPPORT, CONTRADICT or NOINFO. In a fresh data dir each cited abstract
(title and text, from ``corpus.jsonl``) is ingested as an item and each claim as its own short
item beside them; the pipeline runs as in production (parse, chunk, embed, entities, claims);
then a pair is predicted CONTRADICT when the ledger recorded a contradiction between the
claim's item and the abstract's. Reported: precision, recall and F1 of CONTRADICT (SUPPORT and
NOINFO pairs are the negatives), the facet each came from, claims per item, and each stage's
time. ``--model`` uses the configured language model (RELATA_AI_*) as well; without it no
model is used. The embedding provider is off unless ``--embed``: contradictions do not use
vectors.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from relata.cli.benchmarks.common import (
    add_json_flag,
    emit,
    fresh_settings,
    machine,
    machine_line,
    opened,
    positive_float,
    positive_int,
    quiet_settings,
    run_pipeline,
)
from relata.cli.benchmarks.scifact import (
    SPLITS,
    abstracts_of,
    claim_pairs,
    ingest_abstracts,
    ingest_claims,
    stage_line,
    stage_times,
)


def register(group: Any) -> None:
    p = group.add_parser(
        "contradictions",
        help="the contradiction ledger against SciFact's labelled claim/abstract pairs",
        description=(__doc__ or "").replace("``", "`"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--dataset", required=True, type=Path, metavar="DIR", help="the scifact folder")
    p.add_argument("--split", choices=SPLITS, default="train", help="claims_<split>.jsonl")
    p.add_argument("--limit", type=positive_int, default=100_000, metavar="N", help="pairs at most")
    p.add_argument("--workers", type=positive_int, default=2, metavar="N", help="workers")
    p.add_argument("--model", action="store_true", help="use the configured language model")
    p.add_argument("--embed", action="store_true", help="keep the embedding provider on")
    p.add_argument(
        "--timeout", type=positive_float, default=7200.0, metavar="S", help="for the pipeline"
    )
    add_json_flag(p)
    p.set_defaults(handler=_bench)


def _scores(tp: int, fp: int, fn: int) -> dict[str, float | int]:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 3), "recall": round(r, 3), "f1": round(f1, 3)} | {
        "tp": tp,
        "fp": fp,
        "fn": fn,
    }


def _bench(args: argparse.Namespace) -> int:
    base = quiet_settings()
    pairs = claim_pairs(args.dataset, args.split, args.limit)
    abstracts = abstracts_of(args.dataset, {p["doc_id"] for p in pairs})
    changes: dict[str, Any] = {}
    if not args.embed:
        changes["embedding_provider"] = "none"
    if not args.model:
        changes["ai_provider"] = ""
    with tempfile.TemporaryDirectory(prefix="relata-bench-contradictions-") as tmp:
        settings = fresh_settings(base, Path(tmp) / "data").replace(**changes)
        with opened(settings) as c:
            ws = c.workspaces.ensure(c.settings.default_workspace)[0].id
            t0, cpu0 = time.perf_counter(), time.process_time()
            doc_items = ingest_abstracts(c, ws, abstracts)
            claim_items = ingest_claims(c, ws, pairs)
            ingest_s = time.perf_counter() - t0
            all_items = [*doc_items.values(), *claim_items.values()]
            settled = run_pipeline(
                c,
                ws,
                all_items,
                workers=args.workers,
                timeout=args.timeout,
                poll_seconds=0.2,
            )
            wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
            report = _evaluate(c, ws, pairs, doc_items, claim_items)
            report["stages"] = stage_times(c, ws, all_items)
    report |= {
        "split": args.split,
        "pairs": len(pairs),
        "abstracts": len(abstracts),
        "model": bool(args.model),
        "settled": settled.finished,
        "counts": settled.counts,
        "ingest_s": round(ingest_s, 2),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "machine": machine(),
    }
    emit(report, _lines(report), as_json=args.json)
    return 0 if settled.finished else 1


def _evaluate(
    c: Any,
    ws: str,
    pairs: list[dict[str, str]],
    doc_items: dict[str, str],
    claim_items: dict[str, str],
) -> dict[str, Any]:
    recorded: dict[frozenset[str], str] = {}
    for item_id in claim_items.values():
        for x in c.claims.contradictions(ws, item_id=item_id, limit=1000):
            recorded.setdefault(frozenset({x.first.item_id, x.second.item_id}), x.facet)
    counts = Counter[str]()
    facets = Counter[str]()
    for p in pairs:
        key = frozenset({claim_items[p["claim_id"]], doc_items.get(p["doc_id"], "")})
        predicted = key in recorded
        actual = p["label"] == "CONTRADICT"
        counts[
            "tp" if predicted and actual else "fp" if predicted else "fn" if actual else "tn"
        ] += 1
        if predicted:
            facets[recorded[key]] += 1
    claims = sum(len(c.repos.claims.list_for_item(ws, i)) for i in claim_items.values())
    claims += sum(len(c.repos.claims.list_for_item(ws, i)) for i in doc_items.values())
    items = len(claim_items) + len(doc_items)
    return {
        "contradict": _scores(counts["tp"], counts["fp"], counts["fn"]),
        "facets": dict(facets),
        "claims": claims,
        "claims_per_item": round(claims / max(items, 1), 2),
        "ledger": sum(1 for _ in recorded),
    }


def _lines(r: dict[str, Any]) -> list[str]:
    s = r["contradict"]
    lines = [
        f"SciFact {r['split']}: {r['pairs']} pairs, {r['abstracts']} abstracts; "
        f"model {'on' if r['model'] else 'off'}",
        f"  CONTRADICT  P {s['precision']:.3f}  R {s['recall']:.3f}  F1 {s['f1']:.3f}  "
        f"(tp {s['tp']}, fp {s['fp']}, fn {s['fn']})",
        f"  facets {r['facets'] or '{}'}; {r['claims']} claims, {r['claims_per_item']} per item",
        f"  ingest {r['ingest_s']:.1f} s; total {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s CPU",
    ]
    for stage, t in r["stages"].items():
        lines.append(stage_line(stage, t, 9))
    if not r["settled"]:
        lines.append(f"  NOT SETTLED within --timeout: {r['counts']}")
    lines.append(machine_line(r["machine"]))
    return lines
