"""``relata bench retrieval``: retrieval quality and latency on a BEIR-format dataset."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from relata.cli.common import CliError, settings_or_exit
from relata.observability.logging import configure_logging
from relata.search.bench import BenchOptions, run_retrieval_bench


def add_retrieval(group: Any) -> None:
    p = group.add_parser(
        "retrieval",
        help="nDCG@10, recall@100, MRR@10 and latency on a BEIR dataset",
        description="Ingest a BEIR corpus through the real pipeline into a fresh data dir "
        "(reusing a cache keyed by corpus, model and chunker when present), run every query "
        "of the split through the search service, and report quality and latency, fused and "
        "per leg.",
    )
    p.add_argument(
        "--dataset", required=True, metavar="DIR", help="corpus.jsonl, queries.jsonl, qrels/"
    )
    p.add_argument("--split", required=True, metavar="NAME", help="qrels/NAME.tsv")
    p.add_argument(
        "--cache-dir",
        default=".bench-cache",
        metavar="DIR",
        help="where ingested corpora are kept for reuse ('' to disable)",
    )
    p.add_argument("--max-queries", type=int, default=None, metavar="N")
    p.add_argument("--no-legs", action="store_true", help="skip the per-leg runs")
    p.add_argument("--workers", type=int, default=None, metavar="N")
    p.add_argument("--json", action="store_true", help="end with one JSON object on a line")
    p.set_defaults(handler=_bench_retrieval)


def _bench_retrieval(args: argparse.Namespace) -> int:
    from relata.cli.bench import machine

    base = settings_or_exit()
    configure_logging("error", base.log_format)
    if args.max_queries is not None and args.max_queries < 1:
        raise CliError("--max-queries must be at least 1", exit_code=2)
    opts = BenchOptions(
        dataset=Path(args.dataset),
        split=args.split,
        cache_dir=Path(args.cache_dir) if args.cache_dir else None,
        max_queries=args.max_queries,
        legs_alone=not args.no_legs,
        workers=args.workers,
    )
    report = run_retrieval_bench(base, opts, lambda msg: print(msg, file=sys.stderr))
    report["machine"] = machine()
    print(
        f"fused: ndcg@10 {report['ndcg@10']:.4f}  recall@100 {report['recall@100']:.4f}  "
        f"mrr@10 {report['mrr@10']:.4f}  p50 {report['p50_ms']} ms  p95 {report['p95_ms']} ms  "
        f"({report['queries']} queries, {report['corpus_items']} items, cache {report['cache']})"
    )
    for leg, r in report.get("legs_alone", {}).items():
        print(
            f"{leg + ' alone:':<18} ndcg@10 {r['ndcg@10']:.4f}  recall@100 {r['recall@100']:.4f}"
            f"  mrr@10 {r['mrr@10']:.4f}  p50 {r['p50_ms']} ms  p95 {r['p95_ms']} ms"
        )
    if args.json:
        print(json.dumps(report, sort_keys=True))
    return 0
