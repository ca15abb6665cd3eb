"""Fuzz target: strict decoding of a model's reply, ``decode_strict`` and the task judges.

Byte 0 picks a task (answer, entities, claims, contradiction judgement, relationship); the
rest, decoded as UTF-8 (undecodable bytes as lone surrogates, which a provider's JSON
can carry as ``\\udcXX`` escapes), is the model's raw content. The declared error is
``InvalidModelOutput`` with a reason from ``INVALID_OUTPUT_REASONS``, nothing else. Invariants:
an accepted reply is a JSON object the schema validates again; whatever a judge keeps
(entities, claims) is located in the source text at exact offsets.
"""

from __future__ import annotations

from collections.abc import Callable

from relata.analysis.answer import ANSWER_TASK, judge_answer
from relata.analysis.claim_task import CLAIM_TASK, JUDGE_TASK, judge_claims, judge_judgement
from relata.analysis.decode import decode_strict
from relata.analysis.entity_task import ENTITY_TASK, judge_entities
from relata.analysis.errors import INVALID_OUTPUT_REASONS, InvalidModelOutput
from relata.analysis.relationship_task import RELATIONSHIP_TASK, judge_relationship
from relata.analysis.schema import validate
from relata.analysis.task import TaskSpec

#: The source the entity and claim replies are checked against (shippable demo prose).
SOURCE = (
    "The Meridian Tidal Institute measured a 3.5 m tide at Harbour Point on 4 March 2021. "
    "Dr. Ada Vaughan said the Kestrel turbine was commissioned in 2019, not 2018."
)
SUBJECTS = ("Meridian Tidal Institute", "Ada Vaughan", "Kestrel turbine")
REFS = ("S1", "S2", "S3")


def _entities(raw: str) -> None:
    for e in judge_entities(raw, SOURCE).entities:
        assert SOURCE[e.start : e.end] == e.name


def _claims(raw: str) -> None:
    for c in judge_claims(raw, SOURCE, SUBJECTS).claims:
        assert SOURCE[c.start : c.end] == c.quotation


def _answer(raw: str) -> None:
    result = judge_answer(raw, REFS)
    assert set(result.citations) <= set(REFS)


_JUDGES: tuple[tuple[TaskSpec, Callable[[str], object]], ...] = (
    (ANSWER_TASK, _answer),
    (ENTITY_TASK, _entities),
    (CLAIM_TASK, _claims),
    (JUDGE_TASK, judge_judgement),
    (RELATIONSHIP_TASK, judge_relationship),
)


def one_input(data: bytes) -> None:
    if not data:
        return
    task, judge = _JUDGES[data[0] % len(_JUDGES)]
    raw = data[1:].decode("utf-8", "surrogateescape")
    try:
        value = decode_strict(raw, task.schema, max_bytes=task.max_output_bytes)
    except InvalidModelOutput as exc:
        assert exc.reason in INVALID_OUTPUT_REASONS
        return
    assert isinstance(value, dict)
    validate(value, task.schema)
    try:
        judge(raw)
    except InvalidModelOutput as exc:
        assert exc.reason in INVALID_OUTPUT_REASONS
