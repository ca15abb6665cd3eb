"""Degeneracy: schema-valid output with no substance is rejected (AI_PROVIDER_INTERFACE.md)."""

from __future__ import annotations

from typing import Any

import pytest

from relata.analysis.answer import ANSWER_SCHEMA, resolve_answer
from relata.analysis.degenerate import MIN_LENGTHS, check_field, degeneracy, schema_vocabulary
from relata.analysis.errors import InvalidModelOutput

ENTITY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "entities": {
            "type": "array",
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
}
CLAIM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"statement": {"type": "string"}, "nature": {"type": "string", "enum": ["fact"]}},
    "additionalProperties": False,
}
ALIAS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "additionalProperties": False,
}
SCHEMAS = {
    "generate_answer": ANSWER_SCHEMA,
    "extract_entities": ENTITY_SCHEMA,
    "extract_claims": CLAIM_SCHEMA,
    "propose_alias": ALIAS_SCHEMA,
}

# (task, field, value, degenerate?)
TABLE = [
    # generate_answer -> answer: 15 characters minimum
    ("generate_answer", "answer", "sufficient", True),  # a field name of the schema
    ("generate_answer", "answer", "Sufficient.", True),
    ("generate_answer", "answer", "citations", True),
    ("generate_answer", "answer", "string", True),
    ("generate_answer", "answer", "N/A", True),
    ("generate_answer", "answer", "TODO", True),
    ("generate_answer", "answer", "...", True),
    ("generate_answer", "answer", "…", True),
    ("generate_answer", "answer", "   ", True),
    ("generate_answer", "answer", "Yes, it is.", True),  # 11 characters
    ("generate_answer", "answer", "Acme was founded", False),  # 16 characters
    ("generate_answer", "answer", "The contract was signed in March 2021 [S1].", False),
    # extract_entities -> name: 2 characters minimum, enum members are schema words
    ("extract_entities", "name", "X", True),
    ("extract_entities", "name", "person", True),
    ("extract_entities", "name", "Organisation", True),
    ("extract_entities", "name", "name", True),
    ("extract_entities", "name", "Example", True),  # the documented precision cost
    ("extract_entities", "name", "Na", True),
    ("extract_entities", "name", '"string"', True),
    ("extract_entities", "name", "IBM", False),
    ("extract_entities", "name", "Ada Lovelace", False),
    # extract_claims -> statement: 10 characters minimum
    ("extract_claims", "statement", "statement", True),
    ("extract_claims", "statement", "fact", True),
    ("extract_claims", "statement", "It rains.", True),  # 9 characters
    ("extract_claims", "statement", "Revenue rose 12% in 2023.", False),
    # proposed alias -> name: 2 characters minimum
    ("propose_alias", "name", "A", True),
    ("propose_alias", "name", "tbd", True),
    ("propose_alias", "name", "UN", False),
]


@pytest.mark.parametrize(("task", "field", "value", "bad"), TABLE)
def test_degeneracy_table(task: str, field: str, value: str, bad: bool) -> None:
    if bad:
        with pytest.raises(InvalidModelOutput) as info:
            check_field(task, field, value, SCHEMAS[task])
        assert info.value.reason == "degenerate_content"
    else:
        check_field(task, field, value, SCHEMAS[task])


def test_minimums_match_the_spec_table() -> None:
    assert MIN_LENGTHS == {
        ("generate_answer", "answer"): 15,
        ("extract_entities", "name"): 2,
        ("extract_claims", "statement"): 10,
        ("propose_alias", "name"): 2,
    }


def test_schema_vocabulary_holds_field_names_and_enum_members() -> None:
    words = schema_vocabulary(ENTITY_SCHEMA)
    assert {"entities", "name", "type", "person", "organisation", "place"} <= words


def test_a_long_value_that_merely_contains_a_schema_word_is_fine() -> None:
    assert (
        degeneracy(
            "The evidence is sufficient to say yes.",
            min_length=15,
            vocabulary=frozenset({"sufficient"}),
        )
        is None
    )


def test_schema_echo_answer_is_reported_unavailable_not_shown() -> None:
    result = resolve_answer('{"answer": "sufficient", "sufficient": true, "citations": []}', ["S1"])
    assert result.status == "unavailable"
    assert result.answer is None
    assert result.reason == "degenerate_content"
