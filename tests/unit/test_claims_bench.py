"""The contradictions bench on SciFact-shaped pairs (written here, not SciFact's own)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from relata.claims.bench import OPERATING_POINTS, format_report, run_contradictions_bench
from relata.domain.errors import ValidationError

CORPUS = [
    {
        "_id": "d1",
        "title": "Exercise and mortality",
        "text": "Exercise reduces cancer mortality in adults. Follow-up was ten years.",
    },
    {"_id": "d2", "title": "", "text": "Aspirin increases the risk of bleeding in older adults."},
    {"_id": "d3", "title": "Unrelated", "text": "Seals were counted at low water."},
    {"_id": "d9", "title": "Never cited", "text": "Nothing."},
]
PAIRS = [
    # a contradiction the detector finds (true positive)
    {
        "claim_id": "1",
        "claim": "Exercise increases cancer mortality in adults.",
        "doc_id": "d1",
        "label": "CONTRADICT",
        "evidence_sentences": [],
    },
    # agreement (true negative)
    {
        "claim_id": "2",
        "claim": "Aspirin increases the risk of bleeding in older adults.",
        "doc_id": "d2",
        "label": "SUPPORT",
        "evidence_sentences": [],
    },
    # a contradiction it cannot see (false negative)
    {
        "claim_id": "3",
        "claim": "Seals avoid the turbines.",
        "doc_id": "d3",
        "label": "CONTRADICT",
        "evidence_sentences": [],
    },
    # labelled no-info, yet the facets conflict (false positive)
    {
        "claim_id": "4",
        "claim": "Aspirin reduces the risk of bleeding in older adults.",
        "doc_id": "d2",
        "label": "NOINFO",
        "evidence_sentences": [],
    },
]


def _write(root: Path, pairs: list[dict[str, object]], corpus: list[dict[str, object]]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "claims_train.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus))
    return root


def test_the_bench_scores_contradict_against_every_other_label(tmp_path: Path) -> None:
    result = run_contradictions_bench(_write(tmp_path / "sf", PAIRS, CORPUS))
    assert result["pairs"] == 4
    assert (result["true_positives"], result["false_positives"], result["false_negatives"]) == (
        1,
        1,
        1,
    )
    assert (result["precision"], result["recall"], result["f1"]) == (0.5, 0.5, 0.5)
    assert result["confusion"] == {
        "CONTRADICT:contradict": 1,
        "CONTRADICT:none": 1,
        "NOINFO:contradict": 1,
        "SUPPORT:none": 1,
    }
    assert result["by_facet"] == {"direction": 2}
    assert result["correct_by_facet"] == {"direction": 1}
    assert result["items"] == 3 + 4  # the cited abstracts and the claims
    assert [p["min_overlap"] for p in result["operating_points"]] == list(OPERATING_POINTS)
    report = format_report(result)
    assert "precision 0.500" in report
    assert "direction 1/2" in report


def test_a_missing_cited_document_is_named(tmp_path: Path) -> None:
    root = _write(tmp_path / "sf", PAIRS, CORPUS[1:])
    with pytest.raises(ValidationError, match=re.escape("lacks 1 cited documents, e.g. 'd1'")):
        run_contradictions_bench(root)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 1 is not JSON"),
        (json.dumps({**PAIRS[0], "label": "MAYBE"}), "label 'MAYBE' is not one of"),
        (json.dumps({**PAIRS[0], "claim": None}), "'claim' must be a string"),
    ],
)
def test_a_bad_pair_line_is_refused_with_its_line(tmp_path: Path, line: str, message: str) -> None:
    root = _write(tmp_path / "sf", [], CORPUS)
    (root / "claims_train.jsonl").write_text(line + "\n")
    with pytest.raises(ValidationError, match=message):
        run_contradictions_bench(root)


def test_an_unknown_split_or_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="split 'holdout' is not one of"):
        run_contradictions_bench(tmp_path, split="holdout")
    with pytest.raises(ValidationError, match="does not exist"):
        run_contradictions_bench(tmp_path, split="dev")
