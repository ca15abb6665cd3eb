"""Calibrate the search relevance floor (ADR 40) on a BEIR dataset's judged queries.

The floor withholds a search result that no word or entity of the query matched (found by
meaning alone) when its similarity is under ``RELATA_SEARCH_MEANING_FLOOR``. What that can
cost a judged query is bounded without running the whole pipeline: removing results only
moves the others up, so recall@10 falls by at most the share of a query's relevant documents
that the floor would remove: those sharing no search term with the query (the text legs' own
tokenizer and stop words, FTS5 porter) whose best chunk is under the floor. This script
measures that bound for a range of floors, and, for a set of queries no document is about,
how many the floor turns into "nothing matched" (no lexical match anywhere, no chunk at or
above the floor).

    .venv/bin/python scripts/calibrate_relevance_floor.py ../shared/bench/scifact train \
        [VECS.npy] [--all]

Without ``--all`` only the documents the floor could remove are embedded (a minute); with it
the whole corpus too (VECS.npy keeps its vectors between runs), to measure how close the
nonsense queries come to anything.

Chunks approximate the chunker (abstracts are one or two chunks); the text embedded is the
embed stage's passage (title, then the chunk). Prints one JSON object.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np

from relata.claims.words import STOP_WORDS as FUNCTION_WORDS
from relata.domain.cancel import Cancel
from relata.embeddings.onnx import OnnxEmbedder
from relata.storage.sql.text_search import fts5_query, query_terms

#: Queries no document of a scientific or a business corpus is about (written for this
#: calibration; the tests use others of the same kind).
NONSENSE = [
    "zebra quantum xylophone",
    "purple elephant trampoline",
    "banana helicopter symphony",
    "how to knit a sweater for a giraffe",
    "best pizza toppings in naples",
    "xylophone tuning for beginners",
    "flibbertigibbet wombat snorkel",
    "qwzx plorf vintrel",
    "who won the 1974 world cup final",
    "dragon kite festival schedule",
    "origami swan folding instructions",
    "medieval castle drawbridge mechanism",
    "skateboard ollie trick tutorial",
    "jazz saxophone improvisation scales",
    "lorem ipsum dolor sit amet",
    "unicorn glitter marshmallow",
    "haunted lighthouse ghost stories",
    "chess opening sicilian dragon",
    "volcano surfing in nicaragua",
    "penguin tuxedo rental",
    "asdf jkl qwerty uiop",
    "recipe for sourdough bread starter",
    "cheapest flights to reykjavik",
    "karaoke night song list",
    "pirate treasure map riddle",
]

CHUNK = 1000
OVERLAP = 200


def chunks(text: str) -> list[str]:
    if len(text) <= CHUNK:
        return [text]
    out, start = [], 0
    while start < len(text):
        end = min(len(text), start + CHUNK)
        if end < len(text):
            space = text.rfind(" ", start + CHUNK // 2, end)
            end = space if space > 0 else end
        out.append(text[start:end])
        if end >= len(text):
            break
        start = max(end - OVERLAP, start + 1)
    return out


def main(dataset: Path, split: str, cache: Path | None = None, whole: bool = False) -> None:
    corpus = [json.loads(line) for line in (dataset / "corpus.jsonl").open()]
    queries = {
        (q := json.loads(line))["_id"]: q["text"] for line in (dataset / "queries.jsonl").open()
    }
    qrels: dict[str, set[str]] = {}
    for n, line in enumerate((dataset / "qrels" / f"{split}.tsv").open()):
        parts = line.split()
        if n == 0 and not parts[-1].isdigit():
            continue
        if int(parts[2]) > 0:
            qrels.setdefault(parts[0], set()).add(parts[1])
    judged = {q: queries[q] for q in qrels if q in queries}

    db = sqlite3.connect(":memory:")
    db.execute("create virtual table fts using fts5(doc, body, tokenize='porter unicode61')")
    db.executemany(
        "insert into fts(doc, body) values (?, ?)",
        [(d["_id"], f"{d.get('title', '')}\n{d.get('text', '')}") for d in corpus],
    )

    def lexical(text: str) -> set[str]:
        # As the floor counts a text match: by a word that is not a function word.
        terms = [t for t in query_terms(text) if t not in FUNCTION_WORDS]
        if not terms:
            return set()
        rows = db.execute("select doc from fts where fts match ?", (fts5_query(terms),))
        return {r[0] for r in rows}

    embedder = OnnxEmbedder(None)
    t0, c0 = time.perf_counter(), time.process_time()
    passages, owner = [], []
    # Only the relevant documents that share no content word with their query can be
    # removed by the floor: embed those (or, with the whole corpus, also measure how close
    # the nonsense queries come to anything: --all, ~10k passages).
    wanted = None
    if not whole:
        wanted = {d for q, rel in qrels.items() if q in judged for d in rel - lexical(judged[q])}
    for d in corpus:
        if wanted is not None and d["_id"] not in wanted:
            continue
        for c in chunks(d.get("text", "")):
            passages.append(f"{d.get('title', '')}\n{c}")
            owner.append(d["_id"])
    if whole and cache is not None and cache.is_file():
        vecs = np.load(cache)
    else:
        vecs = np.asarray(embedder.embed(passages, Cancel.never()), dtype=np.float32)
        if whole and cache is not None:
            np.save(cache, vecs)
    qids = list(judged) + [f"nonsense:{i}" for i in range(len(NONSENSE))]
    qtexts = list(judged.values()) + NONSENSE
    qvecs = np.asarray(embedder.embed(qtexts, Cancel.never()), dtype=np.float32)
    embed_wall, embed_cpu = time.perf_counter() - t0, time.process_time() - c0
    sims = qvecs @ vecs.T  # normalised vectors: cosine
    doc_index: dict[str, list[int]] = {}
    for i, d in enumerate(owner):
        doc_index.setdefault(d, []).append(i)

    floors = [round(0.20 + 0.01 * i, 2) for i in range(26)]
    lost_share = {f: 0.0 for f in floors}
    lost_docs = {f: 0 for f in floors}
    relevant_total = 0
    no_lexical_sims: list[float] = []
    for n, qid in enumerate(qids[: len(judged)]):
        rel = qrels[qid]
        matched = lexical(judged[qid])
        relevant_total += len(rel)
        for doc in rel:
            if doc in matched or doc not in doc_index:
                continue
            best = float(max(sims[n, i] for i in doc_index[doc]))
            no_lexical_sims.append(round(best, 3))
            for f in floors:
                if best < f:
                    lost_share[f] += 1 / len(rel)
                    lost_docs[f] += 1
    nonsense: list[dict[str, object]] = []
    for k, text in enumerate(NONSENSE):
        n = len(judged) + k
        nonsense.append(
            {
                "query": text,
                "lexical_matches": len(lexical(text)),
                "best_similarity": round(float(sims[n].max()), 3) if whole else None,
            }
        )
    empty = {
        f: sum(
            1
            for q in nonsense
            if q["lexical_matches"] == 0 and whole and float(q["best_similarity"]) < f  # type: ignore[arg-type]
        )
        for f in floors
    }
    print(
        json.dumps(
            {
                "queries": len(judged),
                "relevant_pairs": relevant_total,
                "relevant_without_lexical_match": len(no_lexical_sims),
                "their_best_similarity": sorted(no_lexical_sims),
                "recall_at_10_loss_bound": {
                    str(f): round(lost_share[f] / len(judged), 4) for f in floors
                },
                "relevant_removed": {str(f): lost_docs[f] for f in floors},
                "nonsense_queries": len(NONSENSE),
                "nonsense_without_lexical_match": sum(
                    1 for q in nonsense if q["lexical_matches"] == 0
                ),
                "nonsense_nothing_matched": {str(f): empty[f] for f in floors},
                "nonsense": nonsense,
                "passages": len(passages),
                "embedding": {"wall_s": round(embed_wall, 1), "cpu_s": round(embed_cpu, 1)},
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--all"]
    main(
        Path(args[0]),
        args[1],
        Path(args[2]) if len(args) > 2 else None,
        whole="--all" in sys.argv,
    )
