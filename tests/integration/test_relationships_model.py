"""The relationships stage's model pass over the real pipeline (real SQLite) on the
demo corpus: with the real tiny SmolLM2 model on llama.cpp, every item is ready, the stage's
runs count the model's calls and what became of each (an opinion or a counted rejection),
every opinion stored in a relationship's inputs is a relationship type at a confidence in
0-1, and the press release and the council minutes still contradict (the observed
contradiction outranks any opinion); with a model server that is down, every item is ready
all the same, the failure counted in the run's details and nothing of the model stored."""

from __future__ import annotations

import socket
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from relata.analysis.errors import INVALID_OUTPUT_REASONS
from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.models import ItemStatus, ProcessingRun, Relationship
from relata.domain.vocabulary import RelationshipType
from relata.ingest.service import IngestRequest
from relata.relationships.assisted import MAX_MODEL_PAIRS
from relata.relationships.scoring import PairFeatures, score_pair
from relata.seed import demo_documents
from tests.support.ingest import built, drain, workspace_id
from tests.support.llama import HANG_GUARD_SECONDS

PRESS = "sabrewing-array-press-release.txt"
MINUTES = "harbour-council-minutes.md"


def _model(base_url: str, model: str) -> dict[str, Any]:
    return {
        "embedding_provider": "none",
        "ai_provider": "openai",
        "openai_base_url": base_url,
        "ai_model": model,
    }


def _seed(c: Container) -> dict[str, str]:
    """The demo corpus, processed; file name -> item id."""
    ws = workspace_id(c)
    ids = {}
    for doc in demo_documents():
        item = c.ingest.ingest(
            ws, IngestRequest(data=doc.data, filename=doc.filename, created_at=doc.created_at)
        )
        ids[doc.filename] = item.id
    drain(c)
    return ids


def _runs(c: Container, ids: dict[str, str]) -> list[ProcessingRun]:
    """Each item's latest relationships run, in ``ids``' order; every item ready."""
    ws = workspace_id(c)
    runs = []
    for item_id in ids.values():
        assert c.repos.items.get(ws, item_id).status is ItemStatus.READY
        # The latest (runs are listed by start).
        run = [r for r in c.repos.runs.list_for_item(ws, item_id) if r.stage == "relationships"][-1]
        assert run.outcome == "succeeded"
        runs.append(run)
    return runs


def _relationships(c: Container, ids: dict[str, str]) -> list[Relationship]:
    ws = workspace_id(c)
    rels = c.repos.relationships.list_for_items(ws, list(ids.values()), include_rejected=True)
    return list({r.id: r for r in rels}.values())


def _press_and_minutes(c: Container, ids: dict[str, str]) -> Relationship:
    pair = {ids[PRESS], ids[MINUTES]}
    [rel] = [r for r in _relationships(c, ids) if {r.source_id, r.target_id} == pair]
    return rel


@pytest.mark.slow
def test_the_real_tiny_model_classifies_pairs_and_never_outranks_an_observation(
    tmp_path: Path, llama_base_url: str
) -> None:
    # SmolLM2 on two shared cores takes half a minute a call: the corpus is processed
    # without it (every stage's model part would be ten minutes), then the press release
    # passes the relationships stage again with the model on, against the four others.
    settings = Settings(
        data_dir=str(tmp_path / "data"), database_url=f"sqlite:///{tmp_path / 'relata.db'}"
    )
    with built(settings, embedding_provider="none") as c:
        ids = _seed(c)
        assert _press_and_minutes(c, ids).relationship_type is RelationshipType.CONTRADICTS
    changes = {
        **_model(llama_base_url, "smollm2-135m"),
        "ai_timeout": HANG_GUARD_SECONDS,
        "ai_max_tokens": 128,
    }
    with built(settings, **changes) as c:
        assert c.analysis.enabled
        ws = workspace_id(c)
        c.items.reprocess(ws, ids[PRESS], from_stage="relationships")
        drain(c)
        run = _runs(c, ids)[list(ids).index(PRESS)]
        details = run.details
        assert details["model"] == "ok", details
        assert run.versions["relationship_model"] == "smollm2-135m"
        assert 1 <= details["model_calls"] <= MAX_MODEL_PAIRS
        assert details["model_calls"] <= details["model_candidates"]
        assert set(details["model_skipped"]) <= INVALID_OUTPUT_REASONS
        assert set(details["model_opinions"]) <= {t.value for t in RelationshipType}
        # Each call gave an opinion or a counted rejection (one per reply).
        opinions = sum(details["model_opinions"].values())
        assert opinions + sum(details["model_skipped"].values()) == details["model_calls"]
        with_opinion = 0
        for rel in _relationships(c, ids):
            opinion = rel.features["inputs"]["model"]
            if opinion is None:
                continue
            with_opinion += 1
            assert ids[PRESS] in (rel.source_id, rel.target_id)
            kind, confidence = opinion
            assert RelationshipType(kind).value == kind
            assert 0.0 <= confidence <= 1.0
            model = rel.features["contributions"]["model"]
            assert 0.0 <= model["contribution"] <= model["weight"]
        assert with_opinion <= opinions
        rel = _press_and_minutes(c, ids)
        assert rel.relationship_type is RelationshipType.CONTRADICTS
        assert rel.features["type_basis"] == "contradiction"
        # An opinion only ever adds (reprocessing alone moves the score: more items name the
        # shared entities now than when the pair was first scored).
        inputs = PairFeatures.from_json(rel.features["inputs"])
        assert score_pair(replace(inputs, model=None)).score <= rel.score


def test_a_model_server_that_is_down_costs_only_the_models_part(settings: Settings) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    changes = {**_model(f"http://127.0.0.1:{closed}/v1", "fake-chat"), "ai_timeout": 2.0}
    with built(settings, **changes) as c:
        ids = _seed(c)
        runs = _runs(c, ids)
        for run in runs:
            details = run.details
            assert details["model_calls"] == 0
            assert run.versions["relationship_model"] == "fake-chat"
            if details["model_failures"]:
                assert details["model"].startswith("unavailable"), details
            else:
                assert details["model_candidates"] == 0 and details["model"] == "ok"
        # The stage asked at the first pair it could and stopped there, for each such item.
        assert sum(r.details["model_failures"] for r in runs) >= 1
        assert all(r.details["model_failures"] <= 1 for r in runs)
        rels = _relationships(c, ids)
        assert rels and all(r.features["inputs"]["model"] is None for r in rels)
        assert _press_and_minutes(c, ids).relationship_type is RelationshipType.CONTRADICTS
