"""decode_strict: the one parser of model content (ADR 0007)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relata.analysis.decode import decode_strict, unwrap_fence
from relata.analysis.errors import INVALID_OUTPUT_REASONS, InvalidModelOutput
from relata.analysis.schema import check_schema, validate
from relata.domain.errors import Permanent

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "kind": {"type": "string", "enum": ["person", "organisation"]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "count": {"type": "integer"},
    },
    "required": ["name", "kind"],
    "additionalProperties": False,
}
GOOD = '{"name": "Ada Lovelace", "kind": "person", "confidence": 0.9, "tags": ["math"]}'


def reason_of(raw: str, *, max_bytes: int = 4096) -> str:
    with pytest.raises(InvalidModelOutput) as info:
        decode_strict(raw, SCHEMA, max_bytes=max_bytes)
    return info.value.reason


def test_valid_object_is_returned() -> None:
    assert decode_strict(GOOD, SCHEMA)["name"] == "Ada Lovelace"


def test_invalid_output_is_permanent_so_the_queue_never_retries_it() -> None:
    assert issubclass(InvalidModelOutput, Permanent)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("", "not_json"),
        ("Sure! Here is the JSON you asked for.", "not_json"),
        ('{"name": "Ada", "kind": "person"', "not_json"),
        (GOOD + ' {"name": "Bob", "kind": "person"}', "trailing_content"),
        (GOOD + " and that is my answer", "trailing_content"),
        (GOOD + "}", "trailing_content"),
        ('{"name": "Ada", "kind": "person", "extra": 1}', "unknown_field"),
        ('{"name": "Ada", "name": "Bob", "kind": "person"}', "duplicate_field"),
        ('{"name": "Ada"}', "schema_violation"),
        ('{"name": "Ada", "kind": "robot"}', "schema_violation"),
        ('{"name": "Ada", "kind": "person", "confidence": 1.5}', "schema_violation"),
        ('{"name": "Ada", "kind": "person", "confidence": NaN}', "not_json"),
        ('{"name": "Ada", "kind": "person", "confidence": 1e999}', "not_json"),
        ('{"name": "Ada", "kind": "person", "count": true}', "schema_violation"),
        ('{"name": "Ada", "kind": "person", "tags": ["a", "b", "c", "d"]}', "schema_violation"),
        ('{"name": "' + "x" * 41 + '", "kind": "person"}', "schema_violation"),
        ('["name", "kind"]', "schema_violation"),
        ('"just a string"', "schema_violation"),
        ("[" * 5000 + "]" * 5000, "not_json"),
        ('{"name": "Ada", "kind": "person", "count": ' + "9" * 5000 + "}", "not_json"),
    ],
)
def test_rejections_carry_their_reason(raw: str, reason: str) -> None:
    assert reason_of(raw, max_bytes=20_000) == reason


def test_payload_is_bounded_before_parsing() -> None:
    assert reason_of(GOOD, max_bytes=len(GOOD) - 1) == "too_large"
    # Multi-byte characters count in bytes, not characters.
    wide = '{"name": "' + "é" * 30 + '", "kind": "person"}'
    assert reason_of(wide, max_bytes=len(wide) + 5) == "too_large"


def test_nested_unknown_field_is_found() -> None:
    schema = {
        "type": "object",
        "properties": {
            "rows": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"a": {"type": "string"}},
                    "additionalProperties": False,
                },
            }
        },
        "additionalProperties": False,
    }
    with pytest.raises(InvalidModelOutput) as info:
        decode_strict('{"rows": [{"a": "x"}, {"a": "y", "b": 1}]}', schema)
    assert info.value.reason == "unknown_field"
    assert "$.rows[1]" in info.value.message


def test_error_message_never_contains_the_content() -> None:
    secret = "Confidential merger with Initech"
    for raw in (
        f'{{"name": "{secret}", "kind": "spy"}}',
        f'{{"name": "x", "kind": "person", "{secret}": 1}}',
        f"{secret}",
    ):
        with pytest.raises(InvalidModelOutput) as info:
            decode_strict(raw, SCHEMA)
        assert secret not in str(info.value)


# ---------------------------------------------------------------- fences
FENCE_TABLE = [
    ("complete json fence", f"```json\n{GOOD}\n```", None),
    ("complete bare fence", f"```\n{GOOD}\n```", None),
    ("complete fence, JSON tag in capitals", f"```JSON\n{GOOD}\n```", None),
    ("fence with surrounding whitespace", f"\n  ```json\n{GOOD}\n```  \n", None),
    ("partial: no closing fence", f"```json\n{GOOD}\n", "bad_fence"),
    ("partial: closing fence on the JSON line", f"```json\n{GOOD}```", "bad_fence"),
    ("partial: only a closing fence", f"{GOOD}\n```", "bad_fence"),
    ("partial: opening fence only, one line", "```json", "bad_fence"),
    ("nested fence", f"```\n```json\n{GOOD}\n```\n```", "bad_fence"),
    ("two fences in a row", f"```json\n{GOOD}\n```\n```json\n{GOOD}\n```", "bad_fence"),
    ("fence with another language", f"```python\n{GOOD}\n```", "bad_fence"),
    ("single-line fence", f"```json {GOOD} ```", "bad_fence"),
    ("prose before the fence is not searched", f"Here you go:\n```json\n{GOOD}\n```", "bad_fence"),
    ("prose after the fence", f"```json\n{GOOD}\n```\nHope this helps", "bad_fence"),
    ("empty fence", "```json\n```", "not_json"),
    ("fence around non-JSON", "```json\nname: Ada\n```", "not_json"),
    ("fence around JSON with trailing text", f"```json\n{GOOD} ok\n```", "trailing_content"),
]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [(r, why) for _, r, why in FENCE_TABLE],
    ids=[name for name, _, _ in FENCE_TABLE],
)
def test_fence_table(raw: str, reason: str | None) -> None:
    if reason is None:
        assert decode_strict(raw, SCHEMA) == json.loads(GOOD)
    else:
        assert reason_of(raw) == reason


def test_unfenced_text_passes_through_unwrap_untouched() -> None:
    assert unwrap_fence(GOOD) == GOOD


# ---------------------------------------------------------------- properties
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_arbitrary_text_raises_only_invalid_model_output(raw: str) -> None:
    try:
        out = decode_strict(raw, SCHEMA, max_bytes=200)
    except InvalidModelOutput as exc:
        assert exc.reason in INVALID_OUTPUT_REASONS
    else:
        validate(out, SCHEMA)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_arbitrary_json_raises_only_invalid_model_output(value: Any) -> None:
    raw = json.dumps(value)
    try:
        decode_strict(raw, SCHEMA)
    except InvalidModelOutput as exc:
        assert exc.reason in INVALID_OUTPUT_REASONS


valid_docs = st.fixed_dictionaries(
    {
        "name": st.text(max_size=40),
        "kind": st.sampled_from(["person", "organisation"]),
    },
    optional={
        "confidence": st.floats(min_value=0, max_value=1),
        "tags": st.lists(st.text(max_size=10), max_size=3),
        "count": st.integers(-1000, 1000),
    },
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_docs)
def test_valid_documents_round_trip(doc: dict[str, Any]) -> None:
    assert decode_strict(json.dumps(doc), SCHEMA, max_bytes=10_000) == doc


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_docs, st.text(min_size=1, max_size=40).filter(lambda t: t.strip() != ""))
def test_trailing_content_is_never_accepted(doc: dict[str, Any], tail: str) -> None:
    with pytest.raises(InvalidModelOutput):
        decode_strict(json.dumps(doc) + tail, SCHEMA, max_bytes=10_000)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_docs, st.text(min_size=1, max_size=12), json_values)
def test_unknown_fields_are_never_accepted(doc: dict[str, Any], key: str, value: Any) -> None:
    if key in SCHEMA["properties"]:
        key = key + "_x"
    doc = {**doc, key: value}
    with pytest.raises(InvalidModelOutput) as info:
        decode_strict(json.dumps(doc), SCHEMA, max_bytes=10_000)
    assert info.value.reason in {"unknown_field", "too_large"}


def test_schema_subset_refuses_unsupported_keywords() -> None:
    check_schema(SCHEMA)
    with pytest.raises(ValueError, match="unsupported"):
        check_schema({"type": "string", "pattern": "^a"})
    with pytest.raises(ValueError, match="additionalProperties"):
        check_schema({"type": "object", "additionalProperties": {"type": "string"}})
    with pytest.raises(ValueError, match="required"):
        check_schema({"type": "object", "properties": {}, "required": ["x"]})
