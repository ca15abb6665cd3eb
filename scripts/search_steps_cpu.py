"""CPU per step of a search, one step at a time on one thread (issue 30).

Opens a data dir that holds an ingested corpus (say, a copy of a ``relata bench retrieval``
cache entry) and runs each judged query's steps one after another on this thread, timing
each with ``time.thread_time`` (the calling thread's CPU: the SQLite work and the one-thread
onnxruntime run happen on it). Steps are interleaved query by query, so load from elsewhere
falls on all alike. Prints CPU ms per call for each step and for the whole search (that one
with ``time.process_time``, every thread of the process, as the legs run on a pool).

    PYTHONPATH=src python scripts/search_steps_cpu.py --data-dir DIR \
        --queries ../shared/bench/scifact/queries.jsonl \
        --qrels ../shared/bench/scifact/qrels/train.tsv
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from relata.cli.benchmarks.common import fresh_settings, opened, quiet_settings
from relata.domain.cancel import Cancel
from relata.domain.vocabulary import SearchLeg
from relata.ranking.fusion import LEGS, RankFusion, fuse
from relata.search import legs
from relata.search.floor import worded_lookup
from relata.search.query import SearchQuery


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--queries", required=True)
    p.add_argument("--qrels", required=True)
    p.add_argument("--max-queries", type=int, default=300)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    judged = {line.split("\t")[0] for line in Path(args.qrels).read_text().splitlines()[1:]}
    texts = [
        doc["text"]
        for doc in map(json.loads, Path(args.queries).read_text().splitlines())
        if doc["_id"] in judged
    ][: args.max_queries]
    settings = fresh_settings(quiet_settings(), args.data_dir)
    with opened(settings, migrated=False) as c:
        ws = c.workspaces.resolve().id
        s: Any = c.search
        embedder: Any = c.embedder
        cancel = Cancel.never()
        n = 100
        s.search(ws, SearchQuery(text="warm up"))
        cpu: dict[str, float] = {}
        calls = 0

        def timed(name: str, run: Callable[[], Any]) -> Any:
            t0 = time.thread_time()
            out = run()
            cpu[name] = cpu.get(name, 0.0) + time.thread_time() - t0
            return out

        def one_query(text: str) -> None:
            q = SearchQuery(text=text)
            feeds = embedder.tokenize([text])[0][1]
            timed("embed: raw session.run", lambda: embedder.run_raw(feeds))
            vector = timed("embed: the port", lambda: embedder.embed([text], cancel)[0])
            hits: dict[str, Any] = {
                SearchLeg.TEXT: timed("leg text", lambda: legs.text_leg(s._text, ws, q, n)),
                SearchLeg.CHUNK_TEXT: timed(
                    "leg chunk_text", lambda: legs.chunk_leg(s._text, ws, q, n)
                ),
                SearchLeg.VECTOR: timed(
                    "leg vector", lambda: legs.vector_leg(s._vectors, ws, q, vector, n)
                ),
                SearchLeg.ENTITY: timed(
                    "leg entity", lambda: legs.entity_leg(s._entities, ws, q, n)
                ),
            }
            worded = timed(
                "floor look-up",
                lambda: worded_lookup(s._text, ws, text, hits, s.meaning_floor),
            )

            def incremental() -> Any:
                fusion = RankFusion(s._fusion)
                for leg in LEGS[:-1]:
                    fusion.add(leg, hits.get(leg))
                first = fusion.result()
                fusion.add(SearchLeg.RELATIONSHIP, hits[SearchLeg.RELATIONSHIP])
                return first, fusion.result()

            first = timed("fusion twice (fuse)", lambda: fuse(hits, s._fusion))
            seeds = timed("seeds", lambda: s._seeds(ws, first.results, q, worded))
            hits[SearchLeg.RELATIONSHIP] = timed(
                "leg relationship",
                lambda: legs.relationship_leg(s._relationships, s._items, ws, seeds),
            )
            timed("fusion twice (fuse)", lambda: fuse(hits, s._fusion))
            timed("fusion once (RankFusion, two steps)", incremental)
            t0 = time.process_time()
            s.search(ws, q)
            cpu["whole search (process CPU)"] = (
                cpu.get("whole search (process CPU)", 0.0) + time.process_time() - t0
            )

        for _ in range(args.rounds):
            for text in texts:
                one_query(text)
                calls += 1
    print(f"{calls} calls, load average {os.getloadavg()[0]:.2f}; CPU ms per call:")
    for name, seconds in cpu.items():
        print(f"  {name:40s} {seconds / calls * 1000:7.2f}")


if __name__ == "__main__":
    main()
