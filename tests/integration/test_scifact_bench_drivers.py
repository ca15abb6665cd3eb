"""The SciFact benchmark drivers (`relata bench contradictions|relationships`) on a tiny
dataset written here in SciFact's layout: they ingest through the real pipeline and score
what it recorded, so a claim that restates one abstract is related to it first, and a claim
that contradicts an abstract's date is counted as a found CONTRADICT pair."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relata.cli.main import main

ABSTRACTS = [
    (
        "1",
        "Kestrel Marine Systems tidal array",
        "The Sabrewing Array began commercial operation "
        "in March 2019 in Halloran Sound, run by Kestrel Marine Systems.",
    ),
    (
        "2",
        "Grey seal counts at Skerry Rock",
        "Observers counted 143 grey seals hauled out at "
        "Skerry Rock at low water, against 131 the year before.",
    ),
    (
        "3",
        "Herring spawning in the estuary",
        "Herring spawned earlier in the estuary in warm "
        "springs, according to survey trawls over ten years.",
    ),
]
PAIRS = [
    ("10", "Observers counted 143 grey seals hauled out at Skerry Rock.", "2", "SUPPORT"),
    ("11", "The Sabrewing Array began commercial operation in June 2021.", "1", "CONTRADICT"),
]


def _dataset(folder: Path, pairs: list[tuple[str, str, str, str]] = PAIRS) -> Path:
    folder.mkdir()
    with (folder / "corpus.jsonl").open("w") as fh:
        for doc_id, title, text in ABSTRACTS:
            fh.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with (folder / "claims_train.jsonl").open("w") as fh:
        for claim_id, claim, doc_id, label in pairs:
            row = {"claim_id": claim_id, "claim": claim, "doc_id": doc_id, "label": label}
            fh.write(json.dumps(row) + "\n")
    return folder


def _report(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    out = capsys.readouterr().out.strip().splitlines()
    report: dict[str, object] = json.loads(out[-1])
    return report


def test_bench_relationships_relates_each_claim_to_its_abstract_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RELATA_EMBEDDING_PROVIDER", "none")
    data = _dataset(tmp_path / "scifact")
    assert main(["bench", "relationships", "--dataset", str(data), "--json"]) == 0
    report = _report(capsys)
    assert report["settled"] is True
    assert (report["claims"], report["abstracts"], report["pairs"]) == (2, 3, 2)
    assert report["recall_at_1"] == 1.0 and report["recall_at_5"] == 1.0
    # The search service on the claims' texts finds each claim's abstract first, too.
    assert report["search_abstracts_only"]["recall_at_1"] == 1.0
    assert report["contradict_pairs"] == 1
    stages = report["stages"]
    assert isinstance(stages, dict) and stages["relationships"]["runs"] == 5
    rel = stages["relationships"]
    assert 0 < rel["handler_cpu_s"] <= rel["handler_s"] + 0.01  # CPU beside wall, per stage
    growth = report["growth"]
    assert 0 < growth["first_cpu_ms_per_item"] <= growth["first_ms_per_item"] + 0.01
    assert growth["cpu_ratio"] > 0
    (window,) = growth["by_window"]  # three abstracts: one window, each run's candidates read
    assert window["items"] == 3 and window["candidates_per_item"] > 0


def test_bench_relationships_sorts_contradicts_links_by_what_the_labels_say(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Claim 12 restates abstract 1 (SUPPORT) and claim 11 contradicts its date (CONTRADICT):
    # the two claims contradict each other, which their opposite labels on abstract 1 imply.
    monkeypatch.setenv("RELATA_EMBEDDING_PROVIDER", "none")
    negated = (
        "12",
        "The Sabrewing Array began commercial operation in March 2019.",
        "1",
        "SUPPORT",
    )
    data = _dataset(tmp_path / "scifact", [*PAIRS, negated])
    assert main(["bench", "relationships", "--dataset", str(data), "--json"]) == 0
    report = _report(capsys)
    assert report["contradicts_found"] == 1  # claim 11 -> abstract 1
    by_label = report["contradicts_by_label"]
    assert by_label == {
        "contradict_pair": 1,
        "wrong_pair": 0,
        "uncited_abstract": 0,
        "claims_opposed": 1,  # one link, counted once though both claims list it
        "claims_both_supported": 0,
        "claims_unlabelled": 0,
    }
    assert report["contradicts_labelled_precision"] == 1.0
    # Claims 11 and 12 (both about abstract 1's date) are related, and one has the other as
    # its first relationship: among all relationships it lacks its abstract at rank 1, among
    # abstracts alone no claim does.
    assert report["recall_at_1"] < 1.0
    assert report["abstracts_only"] == {"recall_at_1": 1.0, "recall_at_5": 1.0, "recall_at_10": 1.0}


def test_bench_relationships_refuses_an_existing_keep_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _dataset(tmp_path / "scifact")
    keep = tmp_path / "kept"
    keep.mkdir()
    code = main(["bench", "relationships", "--dataset", str(data), "--keep", str(keep)])
    assert code != 0
    assert "exists" in capsys.readouterr().err
    assert list(keep.iterdir()) == []  # nothing written into it


def test_bench_contradictions_counts_the_planted_contradiction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _dataset(tmp_path / "scifact")
    assert main(["bench", "contradictions", "--dataset", str(data), "--json"]) == 0
    report = _report(capsys)
    assert report["pairs"] == 2 and report["abstracts"] == 2
    contradict = report["contradict"]
    assert isinstance(contradict, dict)
    assert contradict["tp"] == 1 and contradict["fn"] == 0  # the date on the same subject
    assert contradict["fp"] == 0  # the SUPPORT pair is not recorded as a contradiction
