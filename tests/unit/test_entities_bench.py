"""``relata bench entities``: the scoring, the dataset checks and the dev set itself."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

import pytest

from relata.domain.errors import ValidationError
from relata.domain.models import EntityType
from relata.entities.bench import (
    dev_set_path,
    format_report,
    load_dataset,
    run_entities_bench,
    run_throughput_bench,
)
from relata.entities.deterministic import DeterministicExtractor
from relata.entities.mentions import ChunkText, Extraction, Extractor, Mention


class TableExtractor:
    """An extractor that returns fixed spans per text: the scoring is what is tested."""

    def __init__(self, spans: dict[str, list[tuple[int, int, EntityType]]]) -> None:
        self.spans = spans

    @property
    def extractor(self) -> Extractor:
        return Extractor.DETERMINISTIC

    @property
    def version(self) -> str:
        return "table-1"

    def extract(self, chunks: Sequence[ChunkText]) -> Extraction:
        mentions = []
        for chunk in chunks:
            for start, end, kind in self.spans.get(chunk.text, []):
                quotation = chunk.text[start:end]
                mentions.append(
                    Mention(
                        chunk.chunk_id,
                        start,
                        end,
                        quotation,
                        kind,
                        quotation,
                        quotation.casefold(),
                        Extractor.DETERMINISTIC,
                        "table-1",
                    )
                )
        return Extraction(tuple(mentions))


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


TEXT_A = "Ines Vaughan met Kestrel in Port Halloran."
TEXT_B = "IL-6 rose in Oslo."


def test_exact_span_typed_scores_overall_and_per_type(tmp_path: Path) -> None:
    dataset = _write(
        tmp_path / "d.jsonl",
        [
            {
                "id": "a",
                "text": TEXT_A,
                "entities": [[0, 12, "PER"], [17, 24, "ORG"], [28, 41, "LOC"]],
            },
            {"id": "b", "text": TEXT_B, "entities": [[13, 17, "LOC"]]},
        ],
    )
    extractor = TableExtractor(
        {
            TEXT_A: [
                (0, 12, EntityType.PERSON),  # right
                (17, 24, EntityType.PERSON),  # right span, wrong type: fp PER + fn ORG
                (33, 41, EntityType.LOCATION),  # wrong span: fp LOC + fn LOC
            ],
            TEXT_B: [(0, 4, EntityType.TERM), (13, 17, EntityType.LOCATION)],  # term ignored
        }
    )
    result = run_entities_bench(dataset, extractor=extractor, max_errors=10)
    assert result["overall"] == {
        "precision": 0.5, "recall": 0.5, "f1": 0.5, "tp": 2, "fp": 2, "fn": 2,
    }  # fmt: skip
    assert result["per_type"]["PER"] == {
        "precision": 0.5, "recall": 1.0, "f1": 0.6667, "tp": 1, "fp": 1, "fn": 0,
    }  # fmt: skip
    assert result["per_type"]["ORG"]["fn"] == 1
    assert result["per_type"]["ORG"]["f1"] == 0.0
    assert result["per_type"]["LOC"] == {
        "precision": 0.5, "recall": 0.5, "f1": 0.5, "tp": 1, "fp": 1, "fn": 1,
    }  # fmt: skip
    assert {(e["kind"], e["label"], e["text"]) for e in result["errors"]} == {
        ("fp", "PER", "Kestrel"),
        ("fn", "ORG", "Kestrel"),
        ("fp", "LOC", "Halloran"),
        ("fn", "LOC", "Port Halloran"),
    }
    t = result["throughput"]
    assert t["documents"] == 2
    assert t["characters"] == len(TEXT_A) + len(TEXT_B)
    assert t["words"] == 11
    assert t["wall_seconds"] >= 0 and t["cpu_seconds"] >= 0
    report = format_report(result)
    assert "overall" in report and "0.500" in report and "documents/s" in report
    assert "fn ORG a [17:24] 'Kestrel'" in report


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "line 1: not JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"id": "x", "entities": []}', '"text" must be a string'),
        ('{"id": "x", "text": "abc"}', '"entities" must be a list'),
        ('{"id": "x", "text": "abc", "entities": [[0, 9, "PER"]]}', "not within the text"),
        ('{"id": "x", "text": "abc", "entities": [[2, 1, "PER"]]}', "not within the text"),
        ('{"id": "x", "text": "abc", "entities": [[0, 1, "MISC"]]}', "'MISC' is not one of"),
        ('{"id": "x", "text": "abc", "entities": [[0, 1]]}', "must be [start, end, label]"),
    ],
)
def test_a_malformed_dataset_line_is_named(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(ValidationError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_dataset(path)


def test_a_missing_or_empty_dataset_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="no dataset file"):
        load_dataset(tmp_path / "missing.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(ValidationError, match="has no documents"):
        load_dataset(tmp_path / "empty.jsonl")


def test_the_dev_set_is_well_formed_and_varied() -> None:
    docs = load_dataset(dev_set_path())
    assert len(docs) >= 40
    assert len({d.id for d in docs}) == len(docs)
    genres = Counter(d.id.split("-")[0] for d in docs)
    assert set(genres) >= {"news", "minutes", "sci", "web", "demo"}
    for doc in docs:
        spans = sorted(doc.entities)
        for start, end, _ in spans:
            quoted = doc.text[start:end]
            assert quoted == quoted.strip(), (doc.id, quoted)
            # An annotation never cuts a word.
            assert start == 0 or not doc.text[start - 1].isalnum(), (doc.id, quoted)
            assert end == len(doc.text) or not doc.text[end].isalnum(), (doc.id, quoted)
        for (_, end, _), (start, _, _) in pairwise(spans):
            assert end <= start, doc.id  # no overlaps
    labels = Counter(label for d in docs for _, _, label in d.entities)
    assert min(labels.values()) >= 80


def test_the_extractor_on_the_dev_set() -> None:
    """A floor well above spaCy alone (0.56 on this file), so a regression shows."""
    result = run_entities_bench(dev_set_path(), extractor=DeterministicExtractor())
    assert result["overall"]["f1"] >= 0.80
    assert all(result["per_type"][label]["f1"] >= 0.70 for label in ("PER", "ORG", "LOC"))


def test_throughput_over_a_beir_corpus(tmp_path: Path) -> None:
    corpus = _write(
        tmp_path / "corpus.jsonl",
        [
            {"_id": "1", "title": "IL-6 in frailty", "text": "Serum IL-6 rose in Rotterdam."},
            {"_id": "2", "title": "", "text": "BRCA1 variants in Norway."},
        ],
    )
    result = run_throughput_bench(corpus, extractor=DeterministicExtractor())
    assert result["throughput"]["documents"] == 2
    assert result["mentions"]["term"] >= 3
    assert "corpus:" in format_report(result)
