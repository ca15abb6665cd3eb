"""Degeneracy: schema-valid output that carries no substance.

A JSON schema constrains shape, not substance. A small model asked for
``{"answer": ..., "sufficient": ...}`` sometimes returns the schema back —
``{"answer": "sufficient", ...}`` — which is valid and empty. Every free-text field a task
shows or stores is therefore checked here; a value is degenerate when it is

* a bare field name or enum member of the task's own schema,
* a placeholder word (``PLACEHOLDERS``: "string", "n/a", "TODO", "...", ...), or
* shorter than the field's minimum (``MIN_LENGTHS``, from the provider-interface spec).

The same word list applies to every field, which costs a little precision on names (an
organisation called exactly "Example" is rejected); a rejected row is skipped and the rest of
the task proceeds. This is a floor on obvious emptiness, not a quality judgement.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator, Mapping
from typing import Any, Final

from relata.analysis.errors import DEGENERATE_CONTENT, InvalidModelOutput

# (task, field) -> minimum length in characters, after trimming.
MIN_LENGTHS: Final[Mapping[tuple[str, str], int]] = {
    ("generate_answer", "answer"): 15,
    ("extract_entities", "name"): 2,
    ("extract_claims", "statement"): 10,
    ("propose_alias", "name"): 2,
}

PLACEHOLDERS: Final[frozenset[str]] = frozenset(
    {
        "string",
        "str",
        "text",
        "value",
        "n/a",
        "na",
        "none",
        "null",
        "nil",
        "undefined",
        "unknown",
        "todo",
        "tbd",
        "tba",
        "fixme",
        "xxx",
        "placeholder",
        "example",
        "sample",
        "lorem ipsum",
        "your answer here",
        "answer here",
        "insert answer here",
    }
)

_EDGE_PUNCTUATION = " \t\r\n\"'`*_.,;:!?()[]{}<>"


def normalise(value: str) -> str:
    """Casefold, NFKC-normalise and strip quotes, brackets and punctuation at the edges."""
    return unicodedata.normalize("NFKC", value).strip(_EDGE_PUNCTUATION).casefold()


def schema_vocabulary(schema: Mapping[str, Any]) -> frozenset[str]:
    """Every field name and string enum member in ``schema``, normalised."""
    return frozenset(normalise(word) for word in _words(schema))


def _words(schema: Mapping[str, Any]) -> Iterator[str]:
    for member in schema.get("enum", ()):
        if isinstance(member, str):
            yield member
    props = schema.get("properties", {})
    if isinstance(props, Mapping):
        for name, sub in props.items():
            yield name
            if isinstance(sub, Mapping):
                yield from _words(sub)
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield from _words(items)


def degeneracy(value: str, *, min_length: int, vocabulary: frozenset[str]) -> str | None:
    """Why ``value`` is degenerate (a short phrase naming no content), or None if it is not."""
    trimmed = value.strip()
    key = normalise(trimmed)
    if not key or not any(ch.isalnum() for ch in key):
        return "no words"
    if key in PLACEHOLDERS:
        return "a placeholder"
    if key in vocabulary:
        return "a word from the schema itself"
    if len(trimmed) < min_length:
        return f"shorter than {min_length} characters"
    return None


def check_field(
    task: str, field: str, value: str, schema: Mapping[str, Any], *, path: str | None = None
) -> None:
    """Raise ``InvalidModelOutput(degenerate_content)`` if the field's value is degenerate."""
    min_length = MIN_LENGTHS.get((task, field), 1)
    why = degeneracy(value, min_length=min_length, vocabulary=schema_vocabulary(schema))
    if why is not None:
        raise InvalidModelOutput(DEGENERATE_CONTENT, f"{path or '$.' + field} is {why}")
