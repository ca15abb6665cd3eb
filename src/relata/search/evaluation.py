"""Retrieval-quality metrics and BEIR-format dataset loading, for the retrieval benchmark.

The metrics follow trec_eval (through pytrec_eval, which is what BEIR reports), so figures are
comparable with published ones:

- **nDCG@k**: gain is the judged grade itself (linear, as trec_eval's ``ndcg_cut``), discount
  ``1/log2(rank + 1)``; the ideal ranking is every judged-relevant document sorted by grade.
- **recall@k**: relevant documents in the top k / all relevant documents of the query.
- **MRR@k**: 1 / rank of the first relevant document in the top k, else 0.

A document is relevant when its grade is > 0 (grades 0 and below are judged non-relevant). The
mean is taken over the queries that have at least one relevant document in the qrels; such a
query missing from the run counts as an empty ranking (0), and run queries without judgements
are ignored. A document id repeated in one ranking counts once, at its first position.

A BEIR folder holds ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl``
(``_id``, ``text``) and ``qrels/SPLIT.tsv`` (``query-id``, ``corpus-id``, ``score``, with a
header line). Loading errors are ``ValidationError(field="dataset")`` naming file and line.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relata.domain.errors import ValidationError

Qrels = Mapping[str, Mapping[str, int]]

MAX_LINE_CHARS = 16 * 1024 * 1024
_SPLIT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


# ---------------------------------------------------------------------------- metrics
def _first_k(ranked: Sequence[str], k: int) -> list[str]:
    if k < 1:
        raise ValueError("k must be at least 1")
    seen: set[str] = set()
    out: list[str] = []
    for doc in ranked:
        if doc not in seen:
            seen.add(doc)
            out.append(doc)
            if len(out) == k:
                break
    return out


def ndcg_at_k(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """Normalised discounted cumulative gain of one ranking; 0 when nothing is relevant."""
    top = _first_k(ranked, k)
    dcg = sum(
        judged.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(top) if judged.get(doc, 0) > 0
    )
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    relevant = {doc for doc, g in judged.items() if g > 0}
    if not relevant:
        return 0.0
    return sum(1 for doc in _first_k(ranked, k) if doc in relevant) / len(relevant)


def mrr_at_k(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    for i, doc in enumerate(_first_k(ranked, k)):
        if judged.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0-100) of ``values``; used for latency p50/p95."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= p <= 100:
        raise ValueError("p must be in 0-100")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


@dataclass(frozen=True, slots=True)
class QueryScores:
    query_id: str
    ndcg: float
    recall: float
    mrr: float


@dataclass(frozen=True, slots=True)
class EvaluationReport:
    k_ndcg: int
    k_recall: int
    k_mrr: int
    ndcg: float
    recall: float
    mrr: float
    per_query: tuple[QueryScores, ...]

    @property
    def queries(self) -> int:
        return len(self.per_query)

    def as_dict(self) -> dict[str, float | int]:
        return {
            f"ndcg@{self.k_ndcg}": round(self.ndcg, 4),
            f"recall@{self.k_recall}": round(self.recall, 4),
            f"mrr@{self.k_mrr}": round(self.mrr, 4),
            "queries": self.queries,
        }

    def summary(self) -> str:
        return "  ".join(f"{k}={v}" for k, v in self.as_dict().items())


def evaluate(
    run: Mapping[str, Sequence[str]],
    qrels: Qrels,
    *,
    k_ndcg: int = 10,
    k_recall: int = 100,
    k_mrr: int = 10,
) -> EvaluationReport:
    """Score a run (query id -> ranked document ids) against graded judgements."""
    scores: list[QueryScores] = []
    for qid in sorted(qrels):
        judged = qrels[qid]
        if not any(g > 0 for g in judged.values()):
            continue
        ranked = run.get(qid, ())
        scores.append(
            QueryScores(
                query_id=qid,
                ndcg=ndcg_at_k(ranked, judged, k_ndcg),
                recall=recall_at_k(ranked, judged, k_recall),
                mrr=mrr_at_k(ranked, judged, k_mrr),
            )
        )

    def mean(values: list[float]) -> float:
        return math.fsum(values) / len(values) if values else 0.0

    return EvaluationReport(
        k_ndcg=k_ndcg,
        k_recall=k_recall,
        k_mrr=k_mrr,
        ndcg=mean([s.ndcg for s in scores]),
        recall=mean([s.recall for s in scores]),
        mrr=mean([s.mrr for s in scores]),
        per_query=tuple(scores),
    )


# ---------------------------------------------------------------------------- BEIR files
@dataclass(frozen=True, slots=True)
class BeirDocument:
    id: str
    title: str
    text: str


@dataclass(frozen=True, slots=True)
class BeirDataset:
    """The three files of one BEIR dataset split; ``locate`` checks that they exist."""

    corpus: Path
    queries: Path
    qrels: Path

    @classmethod
    def locate(cls, root: str | Path, split: str) -> BeirDataset:
        if not _SPLIT.match(split):
            raise ValidationError(f"invalid split name {split!r}", field="split")
        base = Path(root)
        found = cls(base / "corpus.jsonl", base / "queries.jsonl", base / "qrels" / f"{split}.tsv")
        for path in (found.corpus, found.queries, found.qrels):
            if not path.is_file():
                raise ValidationError(f"{path} does not exist", field="dataset")
        return found


def _bad(path: Path, line: int, why: str) -> ValidationError:
    return ValidationError(f"{path.name} line {line}: {why}", field="dataset")


def _json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if len(line) > MAX_LINE_CHARS:
                raise _bad(path, n, f"longer than {MAX_LINE_CHARS} characters")
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise _bad(path, n, f"not JSON ({exc.msg})") from exc
            if not isinstance(record, dict):
                raise _bad(path, n, "not a JSON object")
            yield n, record


def _id(path: Path, n: int, record: dict[str, Any]) -> str:
    value = record.get("_id")
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value:
        raise _bad(path, n, "field '_id' must be a non-empty string")
    return value


def _text(path: Path, n: int, record: dict[str, Any], name: str, *, required: bool) -> str:
    value = record.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise _bad(path, n, f"field {name!r} must be a string")
    return value


def iter_corpus(path: str | Path) -> Iterator[BeirDocument]:
    """Stream the corpus documents (a corpus may not fit comfortably in memory twice)."""
    p = Path(path)
    for n, record in _json_lines(p):
        yield BeirDocument(
            id=_id(p, n, record),
            title=_text(p, n, record, "title", required=False),
            text=_text(p, n, record, "text", required=True),
        )


def load_queries(path: str | Path) -> dict[str, str]:
    p = Path(path)
    return {
        _id(p, n, record): _text(p, n, record, "text", required=True)
        for n, record in _json_lines(p)
    }


def load_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """``query-id <TAB> corpus-id <TAB> score`` lines; a header line is skipped."""
    p = Path(path)
    qrels: dict[str, dict[str, int]] = {}
    with p.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if len(line) > MAX_LINE_CHARS:
                raise _bad(p, n, f"longer than {MAX_LINE_CHARS} characters")
            parts = line.rstrip("\r\n").split("\t")
            if not line.strip() or (n == 1 and parts[0] == "query-id"):
                continue
            if len(parts) != 3 or not parts[0] or not parts[1]:
                raise _bad(p, n, "expected query-id, corpus-id and score separated by tabs")
            try:
                grade = int(parts[2])
            except ValueError as exc:
                raise _bad(p, n, f"score {parts[2]!r} is not an integer") from exc
            qrels.setdefault(parts[0], {})[parts[1]] = grade
    return qrels
