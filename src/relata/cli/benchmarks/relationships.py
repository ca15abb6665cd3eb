"""``relata bench relationships``: relationship discovery against SciFact's citations, through
the real pipeline.

In a fresh data dir the corpus's abstracts (``corpus.jsonl``, all of them unless
``--corpus-limit``; the cited ones always) are ingested and the pipeline runs to the end
(parse, chunk, embed, entities, claims, relationships); then each claim of
``claims_<split>.jsonl`` is ingested as its own short item and the pipeline runs again, so
every claim's relationships are discovered with the whole corpus in place. Reported:

- **recall@5**: the share of claims with a cited abstract among their five best-scored
  relationships (and @1, @10), and the share of (claim, cited abstract) pairs related at all;
  beside it, recall@k among the claim's relationships with abstracts only (other claims set
  aside), and, for reference, among the abstracts the search service returns for the claim's
  text (the fused legs the API uses);
- **contradicts**: of the CONTRADICT pairs, how many are related with type ``contradicts``;
  and every ``contradicts`` relationship of a claim, counted once, by what the labels say of
  it: with a cited abstract labelled SUPPORT or NOINFO (wrong), with an abstract the claim
  does not cite (unlabelled), or between two claims: *opposed* when they cite one abstract
  with opposite labels (SUPPORT and CONTRADICT: SciFact's negated claims, a contradiction the
  labels imply), *both supported* when one abstract supports both (both hold, so the link is
  wrong), else unlabelled (two NOINFO claims, say: a negated claim is often NOINFO too);
- relationships per item, by type; the relationship stage's handler time per item in the
  first and the last thousand abstracts processed, wall and CPU (does it grow with the
  workspace?), and every stage's time beside the raw embedder's.

The embedding provider is the configured one (default: the local model): nearest neighbours
by meaning are one of the candidate sources. No language model is used unless ``--model``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter, defaultdict
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
from relata.cli.common import CliError
from relata.search.service import MAX_LIMIT, SearchQuery

#: Window of items (in processing order) whose relationship-stage time is compared.
WINDOW = 1000


def register(group: Any) -> None:
    p = group.add_parser(
        "relationships",
        help="relationship discovery against SciFact's claim -> cited abstract links",
        description=(__doc__ or "").replace("``", "`"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--dataset", required=True, type=Path, metavar="DIR", help="the scifact folder")
    p.add_argument("--split", choices=SPLITS, default="train", help="claims_<split>.jsonl")
    p.add_argument("--limit", type=positive_int, default=100_000, metavar="N", help="pairs at most")
    p.add_argument(
        "--corpus-limit",
        type=positive_int,
        default=None,
        metavar="N",
        help="abstracts at most besides the cited ones (default: the whole corpus)",
    )
    p.add_argument("--workers", type=positive_int, default=2, metavar="N", help="workers")
    p.add_argument(
        "--keep",
        type=Path,
        default=None,
        metavar="DIR",
        help="build the data dir here (a new folder) and keep it, to inspect with relata",
    )
    p.add_argument("--model", action="store_true", help="use the configured language model")
    p.add_argument(
        "--timeout", type=positive_float, default=14400.0, metavar="S", help="for the pipeline"
    )
    add_json_flag(p)
    p.set_defaults(handler=_bench)


def _bench(args: argparse.Namespace) -> int:
    base = quiet_settings()
    pairs = claim_pairs(args.dataset, args.split, args.limit)
    cited = {p["doc_id"] for p in pairs}
    corpus = abstracts_of(args.dataset, None)
    if args.corpus_limit is not None:
        extra = [d for d in corpus if d not in cited][: args.corpus_limit]
        corpus = {d: corpus[d] for d in corpus if d in cited or d in set(extra)}
    changes: dict[str, Any] = {}
    if not args.model:
        changes["ai_provider"] = ""
    if args.keep is not None and args.keep.exists():
        raise CliError(f"--keep {args.keep}: it exists; name a new folder")
    with tempfile.TemporaryDirectory(prefix="relata-bench-relationships-") as tmp:
        data = args.keep if args.keep is not None else Path(tmp) / "data"
        settings = fresh_settings(base, data).replace(**changes)
        with opened(settings) as c:
            ws = c.workspaces.ensure(c.settings.default_workspace)[0].id
            t0, cpu0 = time.perf_counter(), time.process_time()
            doc_items = ingest_abstracts(c, ws, corpus)
            corpus_settled = run_pipeline(
                c,
                ws,
                list(doc_items.values()),
                workers=args.workers,
                timeout=args.timeout,
                poll_seconds=0.5,
            )
            corpus_wall = time.perf_counter() - t0
            claim_items = ingest_claims(c, ws, pairs)
            claims_settled = run_pipeline(
                c,
                ws,
                list(claim_items.values()),
                workers=args.workers,
                timeout=args.timeout,
                poll_seconds=0.2,
            )
            wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
            report = _evaluate(c, ws, pairs, doc_items, claim_items)
            all_items = [*doc_items.values(), *claim_items.values()]
            report["stages"] = stage_times(c, ws, all_items)
            report["growth"] = _growth(c, ws, list(doc_items.values()))
    report |= {
        "split": args.split,
        "pairs": len(pairs),
        "claims": len(claim_items),
        "abstracts": len(doc_items),
        "model": bool(args.model),
        "settled": corpus_settled.finished and claims_settled.finished,
        "counts": claims_settled.counts,
        "corpus_wall_s": round(corpus_wall, 2),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "machine": machine(),
    }
    emit(report, _lines(report), as_json=args.json)
    return 0 if report["settled"] else 1


def _evaluate(
    c: Any,
    ws: str,
    pairs: list[dict[str, str]],
    doc_items: dict[str, str],
    claim_items: dict[str, str],
) -> dict[str, Any]:
    cited: dict[str, set[str]] = defaultdict(set)
    contradicted: dict[str, set[str]] = defaultdict(set)
    labels: dict[str, dict[str, str]] = defaultdict(dict)  # claim item -> abstract -> label
    for p in pairs:
        doc = doc_items.get(p["doc_id"])
        if doc is None:
            continue
        claim = claim_items[p["claim_id"]]
        cited[claim].add(doc)
        labels[claim][doc] = p["label"]
        if p["label"] == "CONTRADICT":
            contradicted[claim].add(doc)
    hits = {1: 0, 5: 0, 10: 0}
    # The same, counting only the claim's relationships with abstracts: how well abstracts
    # rank among themselves, apart from the other claims (near-paraphrases of one finding,
    # citing the same abstract) that take the first places.
    abstract_hits = {1: 0, 5: 0, 10: 0}
    pairs_related = 0
    types = Counter[str]()
    per_claim: list[int] = []
    contradicts_found = 0
    claim_set = set(claim_items.values())
    seen: set[str] = set()
    kinds = Counter[str]()
    for claim, docs in cited.items():
        rels = c.repos.relationships.list_for_items(ws, [claim], limit=1000)
        per_claim.append(len(rels))
        others = [r.target_id if r.source_id == claim else r.source_id for r in rels]
        abstracts = [o for o in others if o not in claim_set]
        for k in hits:
            hits[k] += bool(docs & set(others[:k]))
            abstract_hits[k] += bool(docs & set(abstracts[:k]))
        pairs_related += len(docs & set(others))
        for r, other in zip(rels, others, strict=True):
            types[r.relationship_type.value] += 1
            if r.relationship_type.value == "contradicts":
                contradicts_found += other in contradicted[claim]
                if r.id not in seen:
                    seen.add(r.id)
                    kinds[contradicts_kind(labels, claim_set, claim, other)] += 1
    n = max(len(cited), 1)
    contradict_pairs = sum(len(v) for v in contradicted.values())
    total_pairs = sum(len(v) for v in cited.values())
    return {
        "recall_at_1": round(hits[1] / n, 3),
        "recall_at_5": round(hits[5] / n, 3),
        "recall_at_10": round(hits[10] / n, 3),
        "pairs_related": round(pairs_related / max(total_pairs, 1), 3),
        "abstracts_only": {f"recall_at_{k}": round(v / n, 3) for k, v in abstract_hits.items()},
        "search_abstracts_only": _search_reference(
            c, ws, cited, {claim_items[p["claim_id"]]: p["claim"] for p in pairs}, claim_set
        ),
        "contradict_pairs": contradict_pairs,
        "contradicts_found": contradicts_found,
        "contradicts_by_label": {k: kinds[k] for k in CONTRADICTS_KINDS},
        # Of the links the labels judge (a labelled pair; two claims one abstract supports
        # and contradicts, or supports both), the share they imply.
        "contradicts_labelled_precision": _share(
            kinds["contradict_pair"] + kinds["claims_opposed"],
            kinds["contradict_pair"]
            + kinds["claims_opposed"]
            + kinds["wrong_pair"]
            + kinds["claims_both_supported"],
        ),
        "claim_relationship_types": dict(types),
        "relationships_per_claim": round(sum(per_claim) / n, 2),
    }


def _search_reference(
    c: Any, ws: str, cited: dict[str, set[str]], texts: dict[str, str], claims: set[str]
) -> dict[str, float]:
    """A reference for the ranking: each claim's text (``texts``) as a query to the search
    service (the fused legs the API uses), recall@k of its cited abstracts (``cited``: claim
    item -> abstract items) among the results that are not claims (``claims``). Relationships
    rank abstracts from what the items hold; this is what the product's own retrieval makes
    of the same signals."""
    hits = {1: 0, 5: 0, 10: 0}
    for claim, docs in cited.items():
        # The largest page, so that the claims ranked first still leave ten abstracts.
        response = c.search.search(ws, SearchQuery(text=texts[claim], limit=MAX_LIMIT))
        ranked = [r.item.id for r in response.results if r.item.id not in claims]
        for k in hits:
            hits[k] += bool(docs & set(ranked[:k]))
    n = max(len(cited), 1)
    return {f"recall_at_{k}": round(v / n, 3) for k, v in hits.items()}


CONTRADICTS_KINDS = (
    "contradict_pair",
    "wrong_pair",
    "uncited_abstract",
    "claims_opposed",
    "claims_both_supported",
    "claims_unlabelled",
)


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def contradicts_kind(
    labels: dict[str, dict[str, str]], claims: set[str], claim: str, other: str
) -> str:
    """What the labels say of a ``contradicts`` relationship between the claim item
    ``claim`` and ``other`` (one of ``CONTRADICTS_KINDS``); ``claims``: every claim item."""
    if other not in claims:  # an abstract
        label = labels.get(claim, {}).get(other)
        if label is None:
            return "uncited_abstract"
        return "contradict_pair" if label == "CONTRADICT" else "wrong_pair"
    mine, theirs = labels.get(claim, {}), labels.get(other, {})
    pairs = {(mine[d], theirs[d]) for d in mine.keys() & theirs.keys()}
    if {("SUPPORT", "CONTRADICT"), ("CONTRADICT", "SUPPORT")} & pairs:
        return "claims_opposed"
    if ("SUPPORT", "SUPPORT") in pairs:
        return "claims_both_supported"
    return "claims_unlabelled"


def _growth(c: Any, ws: str, doc_items: list[str]) -> dict[str, Any]:
    """The relationship stage's handler time per item, wall and the worker thread's CPU, in
    processing order: the first ``WINDOW`` abstracts against the last ``WINDOW`` (the
    workspace is that much larger). Wall time also grows or shrinks with what else runs (the
    last abstracts meet fewer embed jobs), CPU time only with the stage's own work."""
    runs: list[tuple[Any, float, float | None, float | None]] = []
    for item_id in doc_items:
        for r in c.repos.runs.list_for_item(ws, item_id):
            ms, cpu = r.details.get("duration_ms"), r.details.get("cpu_ms")
            found = r.details.get("candidates")
            if r.stage == "relationships" and isinstance(ms, int | float):
                cpu_ms = float(cpu) if isinstance(cpu, int | float) else None
                n = float(found) if isinstance(found, int | float) else None
                runs.append((r.started_at, float(ms), cpu_ms, n))
    runs.sort(key=lambda x: x[0])
    if len(runs) < 2 * WINDOW:
        half = len(runs) // 2
        first, last = runs[:half], runs[half:]
    else:
        first, last = runs[:WINDOW], runs[-WINDOW:]

    def mean(values: list[float | None]) -> float | None:
        # Over the runs that recorded the value (CPU time is absent from runs made before it was).
        known = [v for v in values if v is not None]
        return round(sum(known) / len(known), 2) if known else None

    def ratio(a: float | None, b: float | None) -> float | None:
        return round(b / max(a, 1e-9), 2) if a is not None and b is not None else None

    wall = mean([x[1] for x in first]), mean([x[1] for x in last])
    # The worker thread's CPU time: what the stage did, not what else ran meanwhile.
    cpu = mean([x[2] for x in first]), mean([x[2] for x in last])
    # Every WINDOW in order (the workspace held about k * WINDOW items during the k-th), so
    # the growth from 1k to 5k items reads apart from that of the first, nearly empty one.
    windows = [runs[k : k + WINDOW] for k in range(0, len(runs), WINDOW)]
    return {
        "window": len(first),
        "first_ms_per_item": wall[0] or 0.0,
        "last_ms_per_item": wall[1] or 0.0,
        "ratio": ratio(*wall) or 0.0,
        "first_cpu_ms_per_item": cpu[0],
        "last_cpu_ms_per_item": cpu[1],
        "cpu_ratio": ratio(*cpu),
        "by_window": [
            {
                "items": len(w),
                "ms_per_item": mean([x[1] for x in w]),
                "cpu_ms_per_item": mean([x[2] for x in w]),
                "candidates_per_item": mean([x[3] for x in w]),
            }
            for w in windows
        ],
    }


def _lines(r: dict[str, Any]) -> list[str]:
    g = r["growth"]
    lines = [
        f"SciFact {r['split']}: {r['claims']} claims ({r['pairs']} cited pairs) beside "
        f"{r['abstracts']} abstracts; model {'on' if r['model'] else 'off'}",
        f"  recall@1 {r['recall_at_1']:.3f}  recall@5 {r['recall_at_5']:.3f}  "
        f"recall@10 {r['recall_at_10']:.3f}; cited pairs related at all {r['pairs_related']:.3f}",
        "  abstracts only (other claims set aside): recall@1/5/10 "
        + " / ".join(f"{v:.3f}" for v in r["abstracts_only"].values())
        + "; the search service on the claims' texts: "
        + " / ".join(f"{v:.3f}" for v in r["search_abstracts_only"].values()),
        f"  contradicts: {r['contradicts_found']} of {r['contradict_pairs']} CONTRADICT pairs; "
        f"contradicts links of claims by what the labels say: {r['contradicts_by_label']} "
        f"(labelled precision {r['contradicts_labelled_precision']})",
        f"  claims' relationships by type {r['claim_relationship_types']}, "
        f"{r['relationships_per_claim']} per claim",
        f"  relationship stage per item: first {g['window']} {g['first_ms_per_item']} ms, "
        f"last {g['window']} {g['last_ms_per_item']} ms (x{g['ratio']}); CPU "
        f"{g['first_cpu_ms_per_item']} -> {g['last_cpu_ms_per_item']} ms (x{g['cpu_ratio']})",
        "  by thousand processed (CPU ms / candidates per item): "
        + ", ".join(f"{w['cpu_ms_per_item']} / {w['candidates_per_item']}" for w in g["by_window"]),
        f"  corpus {r['corpus_wall_s']:.1f} s; total {r['wall_s']:.1f} s wall, "
        f"{r['cpu_s']:.1f} s CPU",
    ]
    for stage, t in r["stages"].items():
        lines.append(stage_line(stage, t, 13))
    if not r["settled"]:
        lines.append(f"  NOT SETTLED within --timeout: {r['counts']}")
    lines.append(machine_line(r["machine"]))
    return lines
