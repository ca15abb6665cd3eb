"""``relata bench``: the benchmarks, one subcommand each (drivers in ``relata.cli.benchmarks``)."""

from __future__ import annotations

from typing import Any

from relata.cli.benchmarks import (
    conflicts,
    contradictions,
    embed,
    entities,
    ingest,
    load,
    relationships,
    retrieval,
    scale,
    serve,
    text_legs,
)

#: In the order ``relata bench --help`` lists them; each module adds its own subcommand.
BENCHMARKS = (
    ingest,
    embed,
    retrieval,
    text_legs,
    entities,
    contradictions,
    conflicts,
    relationships,
    load,
    serve,
    scale,
)

DESCRIPTION = (
    "Measure Relata on a corpus and print a report; --json ends it with the same report as "
    "one JSON line. Every benchmark works in a fresh temporary data dir, never the configured "
    "one. The figures, the machines and the exact commands are recorded in "
    "docs/benchmarks.md."
)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "bench",
        help=(
            "benchmarks: ingestion, embedding, retrieval, text legs, entities, contradictions, "
            "conflicts, relationships, load, serve, scale"
        ),
        description=DESCRIPTION,
    )
    group = p.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    for benchmark in BENCHMARKS:
        benchmark.register(group)
