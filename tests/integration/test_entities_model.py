"""The entities stage with a real language model (llama.cpp serving SmolLM2-135M on
127.0.0.1): whatever the tiny model answers, its rows are validated, counted and merged, every
stored quotation slices the item's text at its offsets, and the item is never failed by the
model; with the model server down, the stage degrades to the deterministic extractor."""

from __future__ import annotations

import socket

import pytest

from relata.config.settings import Settings
from relata.domain.models import ItemStatus
from relata.ingest.service import IngestRequest
from tests.support.ingest import built, drain, workspace_id
from tests.support.llama import HANG_GUARD_SECONDS

pytestmark = pytest.mark.slow

TEXT = (
    "Dr. Ines Vaughan of the Meridian Tidal Institute met engineers from Kestrel Marine "
    "Systems in Port Halloran to discuss turbine SB-04."
)


def _model(base_url: str) -> dict[str, object]:
    return {
        "embedding_provider": "none",
        "ai_provider": "openai",
        "openai_base_url": base_url,
        "ai_model": "smollm2-135m",
        "ai_timeout": HANG_GUARD_SECONDS,
        "ai_max_tokens": 256,
    }


def test_model_rows_are_validated_and_merged_and_never_fail_the_item(
    settings: Settings, llama_base_url: str
) -> None:
    with built(settings, **_model(llama_base_url)) as c:
        assert c.analysis.enabled
        ws = workspace_id(c)
        item = c.ingest.ingest(ws, IngestRequest(text=TEXT, title="Meeting"))
        drain(c)
        assert c.repos.items.get(ws, item.id).status is ItemStatus.READY
        [run] = [r for r in c.repos.runs.list_for_item(ws, item.id) if r.stage == "entities"]
        assert run.outcome == "succeeded"
        details = run.details
        assert details["model"] == "ok" and details["model_calls"] == 1
        assert details["model_rows"] == details["model_added"] + details["model_agreed"] + sum(
            n for r, n in details["model_skipped"].items() if r in _MERGE_SKIPS
        )
        assert run.versions["entity_model"] == "smollm2-135m"
        observations = c.repos.entities.observations_for_item(ws, item.id)
        assert {o.extractor for o in observations} <= {"deterministic", "model"}
        for o in observations:
            assert TEXT[o.start : o.end] == o.quotation
        # The deterministic extractor's entities are there whatever the model said.
        names = {e.name for e in c.repos.entities.list(ws)}
        assert {"Meridian Tidal Institute", "Kestrel Marine Systems"} <= names


_MERGE_SKIPS = {"type_disagreement", "overlaps_deterministic", "no_key"}


def test_a_model_server_that_is_down_costs_only_the_models_rows(settings: Settings) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    with built(settings, **{**_model(f"http://127.0.0.1:{closed}/v1"), "ai_timeout": 2.0}) as c:
        ws = workspace_id(c)
        item = c.ingest.ingest(ws, IngestRequest(text=TEXT, title="Meeting"))
        drain(c)
        assert c.repos.items.get(ws, item.id).status is ItemStatus.READY
        [run] = [r for r in c.repos.runs.list_for_item(ws, item.id) if r.stage == "entities"]
        assert run.outcome == "succeeded" and run.details["model"].startswith("unavailable")
        assert run.details["mentions"] >= 2
