"""``relata bench entities``: exact-span typed precision, recall and F1 of the entity
extractor on an annotated dataset, and its throughput.

The dataset is JSON lines ``{"id", "text", "entities": [[start, end, "PER"|"ORG"|"LOC"],
...]}`` (Relata's person, organisation and location map to those three labels; other types are
ignored). Without ``--dataset`` it scores the project's own development set
(src/relata/entities/devset/dev.jsonl). ``--corpus`` times the extractor over an unannotated
BEIR ``corpus.jsonl`` instead (for example SciFact's), the figure the pipeline's cost goals
compare with the embedder's. No language model is used: this is the deterministic extractor.
"""

from __future__ import annotations

import argparse
from typing import Any

from relata.cli.benchmarks.common import (
    add_json_flag,
    emit,
    existing_file,
    machine,
    machine_line,
    positive_int,
)


def register(group: Any) -> None:
    p = group.add_parser(
        "entities",
        help="entity extraction: exact-span P/R/F1 per type, and speed",
        description=(__doc__ or "").replace("``", "`"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = p.add_mutually_exclusive_group()
    source.add_argument(
        "--dataset",
        type=existing_file,
        metavar="FILE",
        help="annotated JSON lines (default: dev set)",
    )
    source.add_argument(
        "--corpus", type=existing_file, metavar="FILE", help="time the extractor on a BEIR corpus"
    )
    p.add_argument(
        "--limit", type=positive_int, default=10_000, metavar="N", help="documents at most"
    )
    p.add_argument(
        "--errors", type=int, default=0, metavar="N", help="list up to N wrong spans (tuning)"
    )
    add_json_flag(p)
    p.set_defaults(handler=_bench_entities)


def _bench_entities(args: argparse.Namespace) -> int:
    from relata.entities.bench import (
        dev_set_path,
        format_report,
        run_entities_bench,
        run_throughput_bench,
    )
    from relata.entities.deterministic import DeterministicExtractor

    extractor = DeterministicExtractor()
    if args.corpus is not None:
        result = run_throughput_bench(args.corpus, extractor=extractor, limit=args.limit)
    else:
        result = run_entities_bench(
            args.dataset or dev_set_path(), extractor=extractor, max_errors=max(0, args.errors)
        )
    result["machine"] = machine()
    emit(result, [format_report(result), machine_line(result["machine"])], as_json=args.json)
    return 0
