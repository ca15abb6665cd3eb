"""Retrieval metrics against hand-computed values, and BEIR-format loading."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from relata.domain.errors import ValidationError
from relata.search.evaluation import (
    BeirDataset,
    evaluate,
    iter_corpus,
    load_qrels,
    load_queries,
    mrr_at_k,
    ndcg_at_k,
    percentile,
    recall_at_k,
)

# Graded judgements: "a" is highly relevant (2), "b" and "d" relevant (1), "c" judged not.
JUDGED = {"a": 2, "b": 1, "c": 0, "d": 1}


def test_graded_ndcg_matches_the_hand_computation() -> None:
    # Ranking c, b, a: gains 0, 1, 2 at ranks 1-3; discounts 1/log2(2), 1/log2(3), 1/log2(4).
    dcg = 0 + 1 / math.log2(3) + 2 / 2
    # Ideal at 3: grades 2, 1, 1.
    idcg = 2 / 1 + 1 / math.log2(3) + 1 / 2
    assert ndcg_at_k(["c", "b", "a", "x"], JUDGED, 3) == pytest.approx(dcg / idcg)
    assert ndcg_at_k(["c", "b", "a", "x"], JUDGED, 3) == pytest.approx(0.52090, abs=1e-5)
    assert ndcg_at_k(["a", "b", "d"], JUDGED, 3) == pytest.approx(1.0)
    # Swapping the grade-2 and a grade-1 document costs something.
    assert ndcg_at_k(["b", "a", "d"], JUDGED, 3) < 1.0


def test_recall_and_mrr_match_the_hand_computation() -> None:
    assert recall_at_k(["c", "b", "a", "x"], JUDGED, 3) == pytest.approx(2 / 3)
    assert recall_at_k(["c", "b", "a", "d"], JUDGED, 100) == 1.0
    assert mrr_at_k(["c", "b", "a"], JUDGED, 10) == 0.5
    assert mrr_at_k(["c", "b", "a"], JUDGED, 1) == 0.0
    assert mrr_at_k(["d"], JUDGED, 10) == 1.0


def test_a_query_with_nothing_relevant_retrieved_scores_zero() -> None:
    ranked = ["c", "x", "y"]
    assert ndcg_at_k(ranked, JUDGED, 10) == 0.0
    assert recall_at_k(ranked, JUDGED, 10) == 0.0
    assert mrr_at_k(ranked, JUDGED, 10) == 0.0
    assert ndcg_at_k([], JUDGED, 10) == 0.0


def test_a_repeated_document_counts_once() -> None:
    assert recall_at_k(["b", "b", "b"], JUDGED, 3) == pytest.approx(1 / 3)
    assert ndcg_at_k(["b", "b"], {"b": 1}, 2) == pytest.approx(1.0)


def test_evaluate_averages_over_judged_queries() -> None:
    qrels = {
        "q1": {"a": 1},  # retrieved first: 1, 1, 1
        "q2": {"b": 1, "c": 1},  # one of two, at rank 2
        "q3": {"d": 1},  # missing from the run: zeros
        "q4": {"e": 0},  # nothing relevant: not evaluated
    }
    run = {"q1": ["a"], "q2": ["x", "b"], "q5": ["a"]}
    report = evaluate(run, qrels, k_ndcg=10, k_recall=100, k_mrr=10)
    assert report.queries == 3
    q2_ndcg = (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    assert report.ndcg == pytest.approx((1 + q2_ndcg + 0) / 3)
    assert report.recall == pytest.approx((1 + 0.5 + 0) / 3)
    assert report.mrr == pytest.approx((1 + 0.5 + 0) / 3)
    assert [s.query_id for s in report.per_query] == ["q1", "q2", "q3"]
    assert set(report.as_dict()) == {"ndcg@10", "recall@100", "mrr@10", "queries"}
    assert "ndcg@10=" in report.summary()


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 95) == 95.0
    assert percentile([3.0], 95) == 3.0
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        ndcg_at_k(["a"], JUDGED, 0)


def _write_dataset(root: Path) -> None:
    (root / "qrels").mkdir(parents=True)
    corpus = [
        {"_id": "d1", "title": "Light", "text": "Plants use light."},
        {"_id": 2, "text": "No title here."},
    ]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in corpus) + "\n\n")
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "plants"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\t2\t0\n")


def test_beir_files_load(tmp_path: Path) -> None:
    _write_dataset(tmp_path)
    ds = BeirDataset.locate(tmp_path, "test")
    docs = list(iter_corpus(ds.corpus))
    assert [(d.id, d.title, d.text) for d in docs] == [
        ("d1", "Light", "Plants use light."),
        ("2", "", "No title here."),
    ]
    assert load_queries(ds.queries) == {"q1": "plants"}
    assert load_qrels(ds.qrels) == {"q1": {"d1": 2, "2": 0}}


def test_beir_errors_name_the_file_and_line(tmp_path: Path) -> None:
    _write_dataset(tmp_path)
    with pytest.raises(ValidationError) as err:
        BeirDataset.locate(tmp_path, "train")
    assert err.value.field == "dataset" and "train.tsv" in err.value.message
    with pytest.raises(ValidationError) as err:
        BeirDataset.locate(tmp_path, "../etc")
    assert err.value.field == "split"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"_id": "ok", "text": "x"}\n{not json}\n')
    with pytest.raises(ValidationError, match=r"bad.jsonl line 2: not JSON"):
        list(iter_corpus(bad))
    bad.write_text('{"_id": "", "text": "x"}\n')
    with pytest.raises(ValidationError, match="line 1: field '_id'"):
        list(iter_corpus(bad))
    bad.write_text('{"_id": "q", "text": 5}\n')
    with pytest.raises(ValidationError, match="field 'text' must be a string"):
        load_queries(bad)
    qrels = tmp_path / "q.tsv"
    qrels.write_text("q1\td1\tvery\n")
    with pytest.raises(ValidationError, match=r"q.tsv line 1: score 'very'"):
        load_qrels(qrels)
    qrels.write_text("q1 d1 1\n")
    with pytest.raises(ValidationError, match="separated by tabs"):
        load_qrels(qrels)
