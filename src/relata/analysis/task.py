"""What a model-assisted task declares: its name, its output schema and its output bound.

The name is the ``task`` label on every model metric and the schema name sent to providers
that support structured output; the schema is both sent to the provider and enforced by
``decode_strict`` whether or not the provider honoured it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from relata.analysis.decode import DEFAULT_MAX_BYTES
from relata.analysis.schema import check_schema

TASK_NAMES = frozenset(
    {
        "generate_answer",
        "extract_entities",
        "extract_claims",
        "classify_relationship",
        "propose_alias",
        "judge_contradiction",
    }
)


@dataclass(frozen=True, slots=True)
class TaskSpec:
    name: str
    schema: Mapping[str, Any] = field(hash=False)
    max_output_bytes: int = DEFAULT_MAX_BYTES
    temperature: float = 0.0

    def __post_init__(self) -> None:
        if self.name not in TASK_NAMES:
            raise ValueError(f"unknown task {self.name!r}; add it to TASK_NAMES (metric label)")
        check_schema(self.schema)
        if self.schema.get("type") != "object":
            raise ValueError(f"task {self.name}: the output schema must be an object")

    @property
    def schema_name(self) -> str:
        return f"relata_{self.name}"
