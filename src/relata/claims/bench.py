"""``relata bench contradictions`` (pure part): the facet detector on SciFact claim pairs.

``claims_<split>.jsonl`` (../shared/bench/README.md) pairs a SciFact claim with an abstract
it cites, labelled SUPPORT, CONTRADICT or NOINFO. Each pair is scored the way the pipeline
would see it: the claim is a one-sentence item, the abstract (title and text) another; both
are split into sentences and every sentence becomes a claim about one subject, the cited
abstract (SciFact's citation is what makes them about the same thing; the full benchmark
runs the real pipeline, entity subjects and all). The pair is predicted CONTRADICT when any
claim-sentence / abstract-sentence pair contradicts (``contradict.compare``).

Reported: precision, recall and F1 of CONTRADICT (SUPPORT and NOINFO pairs are the
negatives), the confusion by label, the facet each prediction came from, claims per item,
the time of sentence splitting plus facets (the claims stage's work) and of comparison, and
the same scores at other statement-overlap thresholds (``OPERATING_POINTS``), the knob
that trades recall for precision.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from relata.claims.contradict import MIN_OVERLAP, Contradiction, compare
from relata.claims.extract import ClaimDraft, Subject, claim_from_sentence
from relata.claims.sentences import split_sentences
from relata.domain.errors import ValidationError

LABELS: Final = ("SUPPORT", "CONTRADICT", "NOINFO")
SPLITS: Final = ("train", "dev", "test")
MAX_LINE_BYTES: Final = 4 << 20
MAX_PAIRS: Final = 100_000
MAX_DOCUMENTS: Final = 1_000_000
#: Statement-overlap thresholds reported beside the detector's own, to show the trade-off.
OPERATING_POINTS: Final = (0.3, 0.4, 0.5, 0.6, 0.7)


@dataclass(frozen=True, slots=True)
class Pair:
    claim_id: str
    claim: str
    doc_id: str
    label: str


def _lines(path: Path, limit: int) -> Iterator[tuple[int, Any]]:
    if not path.is_file():
        raise ValidationError(f"{path} does not exist or is not a file", field="dataset")
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if lineno > limit:
                raise ValidationError(f"{path} has more than {limit} lines", field="dataset")
            if len(raw) > MAX_LINE_BYTES:
                raise ValidationError(
                    f"{path}: line {lineno} is over {MAX_LINE_BYTES} bytes", field="dataset"
                )
            line = raw.decode("utf-8").strip()
            if not line:
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValidationError(
                    f"{path}: line {lineno} is not JSON ({exc.msg})", field="dataset"
                ) from exc


def _text(path: Path, lineno: int, row: Any, key: str) -> str:
    value = row.get(key) if isinstance(row, dict) else None
    if value is None or isinstance(value, bool) or not isinstance(value, str | int):
        raise ValidationError(f"{path}: line {lineno}: {key!r} must be a string", field="dataset")
    return str(value)


def load_pairs(path: Path) -> list[Pair]:
    """The labelled pairs of a ``claims_<split>.jsonl`` file."""
    pairs = []
    for lineno, row in _lines(path, MAX_PAIRS):
        label = _text(path, lineno, row, "label")
        if label not in LABELS:
            raise ValidationError(
                f"{path}: line {lineno}: label {label!r} is not one of {', '.join(LABELS)}",
                field="dataset",
            )
        pairs.append(
            Pair(
                _text(path, lineno, row, "claim_id"),
                _text(path, lineno, row, "claim"),
                _text(path, lineno, row, "doc_id"),
                label,
            )
        )
    return pairs


def load_abstracts(path: Path, wanted: set[str]) -> dict[str, str]:
    """Title and text of the wanted documents of a BEIR ``corpus.jsonl``."""
    found: dict[str, str] = {}
    for lineno, row in _lines(path, MAX_DOCUMENTS):
        doc_id = _text(path, lineno, row, "_id")
        if doc_id in wanted:
            title = _text(path, lineno, row, "title").strip()
            body = _text(path, lineno, row, "text")
            found[doc_id] = f"{title}\n\n{body}" if title else body
    missing = wanted - found.keys()
    if missing:
        raise ValidationError(
            f"{path} lacks {len(missing)} cited documents, e.g. {sorted(missing)[0]!r}",
            field="dataset",
        )
    return found


def sentence_claims(item_id: str, text: str, subject_key: str) -> list[ClaimDraft]:
    """Every sentence of ``text`` as a claim about one subject (see the module docstring)."""
    claims = []
    for sentence in split_sentences(text):
        subject = Subject(subject_key, subject_key, sentence.start, sentence.start)
        claim = claim_from_sentence(item_id, sentence, subject)
        if claim is not None:
            claims.append(claim)
    return claims


def _first_contradiction(
    claim: list[ClaimDraft], abstract: list[ClaimDraft], min_overlap: float = MIN_OVERLAP
) -> Contradiction | None:
    found = [
        c
        for a in claim
        for b in abstract
        if (c := compare(a, b, min_overlap=min_overlap)) is not None
    ]
    return max(found, key=lambda c: c.confidence) if found else None


def _scores(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return round(precision, 4), round(recall, 4), round(f1, 4)


def run_contradictions_bench(scifact_dir: Path | str, *, split: str = "train") -> dict[str, Any]:
    """Precision, recall and F1 of CONTRADICT on ``claims_<split>.jsonl`` (module docstring)."""
    if split not in SPLITS:
        raise ValidationError(f"split {split!r} is not one of {', '.join(SPLITS)}", field="split")
    root = Path(scifact_dir)
    pairs = load_pairs(root / f"claims_{split}.jsonl")
    abstracts = load_abstracts(root / "corpus.jsonl", {p.doc_id for p in pairs})

    started = time.perf_counter()
    abstract_claims = {d: sentence_claims(f"doc:{d}", t, d) for d, t in abstracts.items()}
    claim_texts = {p.claim_id: p for p in pairs}
    claim_claims = {
        cid: sentence_claims(f"claim:{cid}", p.claim, f"claim:{cid}")
        for cid, p in claim_texts.items()
    }
    extract_seconds = time.perf_counter() - started

    started = time.perf_counter()
    confusion: Counter[str] = Counter()
    facets: Counter[str] = Counter()
    correct_facets: Counter[str] = Counter()
    for p in pairs:
        # The pair is the candidate: the claim cites the abstract (module docstring).
        found = _first_contradiction(claim_claims[p.claim_id], abstract_claims[p.doc_id])
        predicted = found is not None
        confusion[f"{p.label}:{'contradict' if predicted else 'none'}"] += 1
        if found is not None:
            facets[found.facet.value] += 1
            if p.label == "CONTRADICT":
                correct_facets[found.facet.value] += 1
    compare_seconds = time.perf_counter() - started

    tp = confusion["CONTRADICT:contradict"]
    fp = confusion["SUPPORT:contradict"] + confusion["NOINFO:contradict"]
    fn = confusion["CONTRADICT:none"]
    precision, recall, f1 = _scores(tp, fp, fn)
    points = []
    for threshold in OPERATING_POINTS:
        hits = [
            (
                p.label,
                _first_contradiction(claim_claims[p.claim_id], abstract_claims[p.doc_id], threshold)
                is not None,
            )
            for p in pairs
        ]
        ptp = sum(1 for label, hit in hits if hit and label == "CONTRADICT")
        pfp = sum(1 for label, hit in hits if hit and label != "CONTRADICT")
        pfn = sum(1 for label, hit in hits if not hit and label == "CONTRADICT")
        pp, pr, pf = _scores(ptp, pfp, pfn)
        points.append({"min_overlap": threshold, "precision": pp, "recall": pr, "f1": pf})
    items = len(abstract_claims) + len(claim_claims)
    n_claims = sum(map(len, abstract_claims.values())) + sum(map(len, claim_claims.values()))
    return {
        "split": split,
        "pairs": len(pairs),
        "labels": dict(Counter(p.label for p in pairs)),
        "min_overlap": MIN_OVERLAP,
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "true_positives": tp,
        "false_positives": fp,
        "false_negatives": fn,
        "confusion": dict(sorted(confusion.items())),
        "by_facet": dict(sorted(facets.items())),
        "correct_by_facet": dict(sorted(correct_facets.items())),
        "items": items,
        "claims": n_claims,
        "claims_per_item": round(n_claims / items, 2) if items else 0.0,
        "extract_seconds": round(extract_seconds, 3),
        "compare_seconds": round(compare_seconds, 3),
        "ms_per_item": round(1000 * extract_seconds / items, 3) if items else 0.0,
        "operating_points": points,
    }


def format_report(result: dict[str, Any]) -> str:
    """The bench result as a few lines for a terminal."""
    labels = ", ".join(f"{k} {v}" for k, v in sorted(result["labels"].items()))
    facets = ", ".join(
        f"{k} {result['correct_by_facet'].get(k, 0)}/{v}" for k, v in result["by_facet"].items()
    )
    return "\n".join(
        [
            f"contradictions on SciFact claims_{result['split']}: {result['pairs']} pairs "
            f"({labels})",
            f"  CONTRADICT  precision {result['precision']:.3f}  recall {result['recall']:.3f}"
            f"  F1 {result['f1']:.3f}  (tp {result['true_positives']}, "
            f"fp {result['false_positives']}, fn {result['false_negatives']})",
            f"  by facet (correct/predicted): {facets or 'none'}",
            f"  claims: {result['claims']} in {result['items']} items "
            f"({result['claims_per_item']} per item)",
            f"  time: sentences + facets {result['extract_seconds']:.2f} s "
            f"({result['ms_per_item']:.2f} ms per item), comparison "
            f"{result['compare_seconds']:.2f} s",
            f"  other statement-overlap thresholds (the detector uses {result['min_overlap']}):",
            *(
                f"    {p['min_overlap']:.1f}: precision {p['precision']:.3f}  recall "
                f"{p['recall']:.3f}  F1 {p['f1']:.3f}"
                for p in result["operating_points"]
            ),
        ]
    )
