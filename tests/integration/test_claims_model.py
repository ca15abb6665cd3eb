"""The claims stage's model paths over a real pipeline (real SQLite, a real HTTP
provider on 127.0.0.1): the model's claims are validated (unknown nature, degenerate
statement, unknown subject, an unlocatable quotation: discarded and counted, in the run's
details and on the metric) and merged with the deterministic ones, each stored quotation the
item's own text; its judgement on a candidate pair the facets did not flag adds a contradiction
ranked below every facet one, and the facet-flagged pair is never put to it; a malformed
reply, a low-confidence verdict, a server that is down or the real tiny SmolLM2 model never
fail the item."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from relata.analysis.errors import INVALID_OUTPUT_REASONS
from relata.bootstrap import Container
from relata.claims.assisted import MODEL_CONFIDENCE_CAP
from relata.config.settings import Settings
from relata.domain.models import ItemStatus, ProcessingRun
from relata.ingest.service import IngestRequest
from tests.support.fake_provider import FakeProvider
from tests.support.ingest import built, drain, workspace_id
from tests.support.llama import HANG_GUARD_SECONDS

RELEASE = (
    "Press release",
    "The Sabrewing Array entered commercial operation in March 2019.\n"
    "The Sabrewing Array was built by Kestrel Marine Systems\nin Port Halloran. "
    "Kestrel Marine Systems supplied the turbines for the Sabrewing Array.",
)
MINUTES = (
    "Council minutes",
    "The Sabrewing Array was first connected to the grid in June 2021. "
    "Kestrel Marine Systems supplied the cables for the Sabrewing Array.",
)
BUILT = "The Sabrewing Array was built by Kestrel Marine Systems in Port Halloran."
#: A pair the facet rules flag (opposite directions) whose statements are also similar: the
#: model must never be asked about it, nor replace it.
INCREASED = " Kestrel Marine Systems increased the output of the Sabrewing Array."
REDUCED = " Kestrel Marine Systems reduced the output of the Sabrewing Array."


def _row(subject: str, quotation: str, **changes: str) -> dict[str, str]:
    return {
        "subject": subject,
        "statement": f"{subject} is the subject of this statement.",
        "nature": "fact",
        "quotation": quotation,
    } | changes


OPERATION = "The Sabrewing Array entered commercial operation in March 2019."
#: What the scripted model says about the press release: one good claim (its quotation
#: reflowed: the text breaks a line where the model wrote a space), and one of each fault.
RELEASE_ROWS = [
    _row("Kestrel Marine Systems", BUILT, statement="Kestrel Marine Systems built the array."),
    _row("Sabrewing Array", OPERATION),  # where the deterministic claim is: adds nothing
    _row("Sabrewing Array", OPERATION.replace("March 2019", "May 2017")),  # not in the text
    _row("Sabrewing Array", OPERATION, nature="rumour"),
    _row("Sabrewing Array", OPERATION, statement="TODO"),
    _row("Meridian Tidal Institute", OPERATION),  # no entity of the item
    _row("Kestrel Marine Systems", OPERATION),  # its quotation does not name it
]
RELEASE_SKIPS = {
    "same_place": 1,
    "unlocatable_quotation": 1,
    "unknown_enum": 1,
    "degenerate_content": 1,
    "unknown_subject": 1,
    "subject_not_quoted": 1,
}
MERGE_SKIPS = {"same_place", "subject_not_quoted", "duplicate", "not_in_item"}

Judge = Callable[[str], str]


def _scripted(judge: Judge, claims: Callable[[str], str] | None = None) -> Callable[[Any], str]:
    def content(doc: Any) -> str:
        task = doc["response_format"]["json_schema"]["name"]
        user = doc["messages"][1]["content"]
        if task == "relata_extract_claims":
            if claims is not None:
                return claims(user)
            return json.dumps({"claims": RELEASE_ROWS if "March 2019" in user else []})
        if task == "relata_judge_contradiction":
            return judge(user)
        return json.dumps({"entities": []})

    return content


def _verdict(verdict: str, confidence: float) -> Judge:
    reason = "One source names turbines and the other cables."
    return lambda _: json.dumps({"verdict": verdict, "reason": reason, "confidence": confidence})


def _model(base_url: str, model: str = "fake-chat") -> dict[str, object]:
    return {
        "embedding_provider": "none",
        "ai_provider": "openai",
        "openai_base_url": base_url,
        "ai_model": model,
        "ai_timeout": 5.0,
    }


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as server:
        yield server


def _ingest(c: Container, *docs: tuple[str, str]) -> dict[str, str]:
    ws = workspace_id(c)
    ids = {
        title: c.ingest.ingest(ws, IngestRequest(text=text, title=title)).id for title, text in docs
    }
    drain(c)
    return ids


def _claims_run(c: Container, item_id: str) -> ProcessingRun:
    runs = c.repos.runs.list_for_item(workspace_id(c), item_id)
    [run] = [r for r in runs if r.stage == "claims"]
    assert run.outcome == "succeeded"
    return run


def _judge_requests(fake: FakeProvider) -> list[str]:
    return [
        r.json["messages"][1]["content"]
        for r in fake.requests_to("/v1/chat/completions")
        if r.json["response_format"]["json_schema"]["name"] == "relata_judge_contradiction"
    ]


def _invalid(c: Container, task: str, reason: str) -> float:
    value = c.metrics.registry.get_sample_value(
        "relata_model_invalid_output_total", {"task": task, "reason": reason}
    )
    return value or 0.0


def _assert_quotations_slice_their_items(c: Container, ids: dict[str, str]) -> None:
    ws = workspace_id(c)
    for item_id in ids.values():
        text = c.repos.items.get(ws, item_id).text or ""
        for claim in c.claims.for_item(ws, item_id):
            assert text[claim.start : claim.end] == claim.quotation
        for x in c.claims.contradictions(ws, item_id=item_id):
            for side in (x.first, x.second):
                side_text = c.repos.items.get(ws, side.item_id).text or ""
                assert side_text[side.start : side.end] == side.quotation


def test_model_claims_are_validated_counted_and_merged(
    settings: Settings, fake: FakeProvider
) -> None:
    fake.chat_content = _scripted(_verdict("contradicts", 1.0))
    with built(settings, **_model(fake.url + "/v1")) as c:
        ids = _ingest(c, RELEASE, MINUTES)
        ws = workspace_id(c)
        release = _claims_run(c, ids["Press release"])
        assert release.details["model"] == "ok"
        assert release.details["model_skipped"] == RELEASE_SKIPS
        assert release.details["model_rows"] == 3  # the rows the task let through
        assert release.details["model_claims"] == 1
        assert release.versions["claim_model"] == "fake-chat"
        for reason in ("unlocatable_quotation", "unknown_enum", "degenerate_content"):
            assert _invalid(c, "extract_claims", reason) == 1
        claims = c.claims.for_item(ws, ids["Press release"])
        [added] = [x for x in claims if x.extractor == "model"]
        assert added.subject == "kestrel marine systems"
        assert added.statement == "Kestrel Marine Systems built the array."
        assert added.quotation == BUILT.replace("Systems in", "Systems\nin")  # the item's words
        assert (added.extractor_version, added.confidence) == ("fake-chat", 0.5)
        # The deterministic claims are all there, the one the model repeated only once.
        assert sum(x.extractor == "deterministic" for x in claims) == 3
        _assert_quotations_slice_their_items(c, ids)


def test_a_judgement_adds_a_contradiction_below_the_observed_one_never_over_it(
    settings: Settings, fake: FakeProvider
) -> None:
    fake.chat_content = _scripted(_verdict("contradicts", 1.0))
    release, minutes = (RELEASE[0], RELEASE[1] + INCREASED), (MINUTES[0], MINUTES[1] + REDUCED)
    with built(settings, **_model(fake.url + "/v1")) as c:
        ids = _ingest(c, release, minutes)
        ws = workspace_id(c)
        found = c.claims.contradictions(ws)
        observed = {x.facet: x for x in found if x.detector == "facets"}
        assert set(observed) == {"date", "direction"}
        judged = [x for x in found if x.detector == "model"]
        assert judged, "the model's verdict on an unflagged candidate pair was not recorded"
        for x in judged:
            assert x.facet == "judgement" and x.detector_version == "fake-chat"
            assert x.reason == "One source names turbines and the other cables."
            assert (
                x.confidence == MODEL_CONFIDENCE_CAP < min(o.confidence for o in observed.values())
            )
            assert "kestrel marine systems" in x.subject
            assert {x.first.statement, x.second.statement} != {INCREASED.strip(), REDUCED.strip()}
        # The turbines/cables pair went to the judge; the facet-flagged pairs never did.
        asked = _judge_requests(fake)
        assert any("turbines" in u and "cables" in u for u in asked)
        assert not any("increased" in u and "reduced" in u for u in asked)
        assert not any("March 2019" in u and "June 2021" in u for u in asked)
        runs = [_claims_run(c, i) for i in ids.values()]
        assert sum(r.details["model_contradictions"] for r in runs) == len(judged)
        assert sum(r.details["model_verdicts"].get("contradicts", 0) for r in runs) == len(asked)
        _assert_quotations_slice_their_items(c, ids)


def test_a_low_confidence_verdict_adds_nothing_and_is_counted(
    settings: Settings, fake: FakeProvider
) -> None:
    fake.chat_content = _scripted(_verdict("contradicts", 0.6))
    with built(settings, **_model(fake.url + "/v1")) as c:
        ids = _ingest(c, RELEASE, MINUTES)
        assert [x.detector for x in c.claims.contradictions(workspace_id(c))] == ["facets"]
        runs = [_claims_run(c, i) for i in ids.values()]
        asked = len(_judge_requests(fake))
        assert asked >= 1
        assert sum(r.details["model_judge_skipped"].get("below_confidence", 0) for r in runs) == (
            asked
        )


def test_malformed_replies_cost_only_the_models_part(
    settings: Settings, fake: FakeProvider
) -> None:
    fake.chat_content = _scripted(lambda _: "not json", claims=lambda _: '{"claims": "none"}')
    with built(settings, **_model(fake.url + "/v1")) as c:
        ids = _ingest(c, RELEASE, MINUTES)
        ws = workspace_id(c)
        for item_id in ids.values():
            assert c.repos.items.get(ws, item_id).status is ItemStatus.READY
            details = _claims_run(c, item_id).details
            assert details["model"] == "ok" and details["model_claims"] == 0
            assert details["model_skipped"] == {"schema_violation": 1}
        asked = len(_judge_requests(fake))
        runs = [_claims_run(c, i) for i in ids.values()]
        assert sum(r.details["model_judge_skipped"].get("not_json", 0) for r in runs) == asked
        assert _invalid(c, "judge_contradiction", "not_json") == asked >= 1
        assert _invalid(c, "extract_claims", "schema_violation") == 2
        assert {x.extractor for i in ids.values() for x in c.claims.for_item(ws, i)} == {
            "deterministic"
        }
        assert [x.detector for x in c.claims.contradictions(ws)] == ["facets"]


def test_a_model_server_that_is_down_leaves_the_deterministic_claims(
    settings: Settings,
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    changes = {**_model(f"http://127.0.0.1:{closed}/v1"), "ai_timeout": 2.0}
    with built(settings, **changes) as c:
        ids = _ingest(c, RELEASE, MINUTES)
        ws = workspace_id(c)
        for item_id in ids.values():
            assert c.repos.items.get(ws, item_id).status is ItemStatus.READY
            details = _claims_run(c, item_id).details
            assert details["model"].startswith("unavailable")
            assert details["model_calls"] == 0 and details["model_claims"] == 0
        claims = [x for i in ids.values() for x in c.claims.for_item(ws, i)]
        assert len(claims) == 5 and {x.extractor for x in claims} == {"deterministic"}
        [planted] = c.claims.contradictions(ws)
        assert (planted.facet, planted.detector) == ("date", "facets")


@pytest.mark.slow
def test_the_real_tiny_model_is_validated_counted_and_never_fails_the_item(
    settings: Settings, llama_base_url: str
) -> None:
    changes = {
        **_model(llama_base_url, "smollm2-135m"),
        "ai_timeout": HANG_GUARD_SECONDS,
        "ai_max_tokens": 256,
    }
    with built(settings, **changes) as c:
        assert c.analysis.enabled
        ids = _ingest(c, RELEASE, MINUTES)
        ws = workspace_id(c)
        task_skips = 0
        for item_id in ids.values():
            assert c.repos.items.get(ws, item_id).status is ItemStatus.READY
            run = _claims_run(c, item_id)
            details = run.details
            assert details["model"] == "ok" and details["model_calls"] >= 1
            assert run.versions["claim_model"] == "smollm2-135m"
            skipped = details["model_skipped"]
            assert set(skipped) <= INVALID_OUTPUT_REASONS | MERGE_SKIPS
            merged = sum(n for r, n in skipped.items() if r in MERGE_SKIPS)
            assert details["model_rows"] == details["model_claims"] + merged
            task_skips += sum(n for r, n in skipped.items() if r in INVALID_OUTPUT_REASONS)
        # Every discarded row (an unlocatable quotation among them) is on the metric too.
        assert task_skips == sum(_invalid(c, "extract_claims", r) for r in INVALID_OUTPUT_REASONS)
        claims = [x for i in ids.values() for x in c.claims.for_item(ws, i)]
        assert sum(x.extractor == "deterministic" for x in claims) == 5
        _assert_quotations_slice_their_items(c, ids)
        found = c.claims.contradictions(ws)
        assert any(x.detector == "facets" and x.facet == "date" for x in found)
        for x in found:
            if x.detector == "model":
                assert x.confidence <= MODEL_CONFIDENCE_CAP and x.facet == "judgement"
