"""Validation of a model's claims (the ``extract_claims`` task) against the source text.

AI_PROVIDER_INTERFACE ``extract_claims``: the nature must be one of ``ClaimNature``; the
quotation must be locatable in the source, white-space reflow tolerated (a model rewraps
lines, collapses double spaces, turns a line break into a space), or the claim is
discarded; a statement under 10 characters, a placeholder or a word of the schema itself is
degenerate (``analysis.degenerate``). Each rejection has one reason from
``RejectReason``, counted, never retried: the stage records the counts on
``relata_model_invalid_output_total{task, reason}`` and keeps the claims that passed.

``locate_quotation`` (``relata.analysis.quotation``, shared with the ``extract_claims`` task)
matches the quotation's words in order with any run of white space between them, so the
offsets it returns always slice the source to its exact text (which may differ from the
model's string only in white space).
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from relata.analysis.degenerate import MIN_LENGTHS, degeneracy, schema_vocabulary
from relata.analysis.quotation import locate_quotation
from relata.claims.extract import ClaimDraft, Subject
from relata.claims.facets import extract_facets
from relata.domain.vocabulary import ClaimNature

TASK: Final = "extract_claims"
MODEL_EXTRACTOR: Final = "model"
MAX_CLAIMS: Final = 500
#: A model's claim is recorded at this confidence: below an attached deterministic claim
#: with a comparable facet (0.9), so an observed disagreement outranks a model's reading.
MODEL_CONFIDENCE: Final = 0.5


class RejectReason(enum.StrEnum):
    """Why a model's claim was discarded (a bounded set: metric label values)."""

    NOT_AN_OBJECT = "not_an_object"
    UNKNOWN_NATURE = "unknown_nature"
    DEGENERATE_STATEMENT = "degenerate_statement"
    UNLOCATABLE_QUOTATION = "unlocatable_quotation"
    UNKNOWN_SUBJECT = "unknown_subject"
    TOO_MANY = "too_many"


def parse_nature(value: object) -> ClaimNature | None:
    """The nature a model named, or None when it is not one of ``ClaimNature``."""
    if not isinstance(value, str):
        return None
    try:
        return ClaimNature(value.strip().lower())
    except ValueError:
        return None


def statement_degeneracy(statement: str, schema: Mapping[str, Any] | None = None) -> str | None:
    """Why a statement is degenerate (too short, a placeholder, a schema word), or None."""
    return degeneracy(
        statement,
        min_length=MIN_LENGTHS[(TASK, "statement")],
        vocabulary=schema_vocabulary(schema) if schema else frozenset(),
    )


@dataclass(frozen=True, slots=True)
class LocatedClaim:
    """A model's claim that passed validation, its quotation found in the source: ``quotation``
    is the source's own text, ``source[start:end]``."""

    subject: Subject
    statement: str
    nature: ClaimNature
    quotation: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Validation:
    accepted: tuple[LocatedClaim, ...]
    rejected: Counter[RejectReason] = field(default_factory=Counter)


SubjectResolver = Callable[[str], Subject | None]


def validate_model_claims(
    source: str,
    claims: Iterable[object],
    resolve_subject: SubjectResolver,
    *,
    schema: Mapping[str, Any] | None = None,
) -> Validation:
    """Check each of a model's claims (``{"subject", "statement", "nature", "quotation"}``
    objects) against ``source``; ``resolve_subject`` maps the model's subject name to one
    of the item's entities, or None. Counts every rejection by reason."""
    accepted: list[LocatedClaim] = []
    rejected: Counter[RejectReason] = Counter()
    for index, raw in enumerate(claims):
        if index >= MAX_CLAIMS:
            rejected[RejectReason.TOO_MANY] += 1
            continue
        outcome = _validate(source, raw, resolve_subject, schema)
        if isinstance(outcome, RejectReason):
            rejected[outcome] += 1
        else:
            accepted.append(outcome)
    return Validation(tuple(accepted), rejected)


def _validate(
    source: str,
    raw: object,
    resolve_subject: SubjectResolver,
    schema: Mapping[str, Any] | None,
) -> LocatedClaim | RejectReason:
    if not isinstance(raw, Mapping):
        return RejectReason.NOT_AN_OBJECT
    statement, quotation, name = raw.get("statement"), raw.get("quotation"), raw.get("subject")
    if not (isinstance(statement, str) and isinstance(quotation, str) and isinstance(name, str)):
        return RejectReason.NOT_AN_OBJECT
    nature = parse_nature(raw.get("nature"))
    if nature is None:
        return RejectReason.UNKNOWN_NATURE
    if statement_degeneracy(statement, schema) is not None:
        return RejectReason.DEGENERATE_STATEMENT
    span = locate_quotation(source, quotation)
    if span is None:
        return RejectReason.UNLOCATABLE_QUOTATION
    subject = resolve_subject(name)
    if subject is None:
        return RejectReason.UNKNOWN_SUBJECT
    start, end = span
    return LocatedClaim(
        subject=subject,
        statement=" ".join(statement.split()),
        nature=nature,
        quotation=source[start:end],
        start=start,
        end=end,
    )


def draft_of(
    item_id: str,
    claim: LocatedClaim,
    *,
    model: str,
    confidence: float = MODEL_CONFIDENCE,
    chunk_id: str | None = None,
) -> ClaimDraft:
    """The claim to store for a validated model claim: its facets read from the located
    quotation like a deterministic claim's (the head verb after the subject when the
    subject is named inside it), extractor ``model`` and the model's name as the version.
    The model named the subject of its statement, so the claim counts as attached: its
    dates and quantities are compared."""
    subject_end = claim.subject.end - claim.start
    inside = claim.start <= claim.subject.start and subject_end <= len(claim.quotation)
    facets = extract_facets(claim.quotation, subject_end=subject_end if inside else None)
    return ClaimDraft(
        item_id=item_id,
        subject=claim.subject,
        statement=claim.statement,
        nature=claim.nature,
        quotation=claim.quotation,
        start=claim.start,
        end=claim.end,
        confidence=confidence,
        extractor=MODEL_EXTRACTOR,
        extractor_version=model,
        facets=facets,
        chunk_id=chunk_id,
        attached=True,
    )
