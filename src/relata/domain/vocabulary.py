"""Relata's closed vocabularies, each declared once as a ``StrEnum``.

Stored and sent as their string values, so a row written before a member was added still
reads back; a value outside the enum is refused where it enters (an API parameter, a model's
output), never deep inside. Members may grow; the first sets are recorded in
docs/decisions/0016-pipeline-and-vocabularies.md.
"""

from __future__ import annotations

import enum


class StageKind(enum.StrEnum):
    """The pipeline's stages, **in pipeline order**: the order of the members is the order
    an item goes through them (``relata.pipeline``). Each stage runs as the job kind
    ``<stage>_item``."""

    PARSE = "parse"
    CHUNK = "chunk"
    EMBED = "embed"
    ENTITIES = "entities"
    CLAIMS = "claims"
    RELATIONSHIPS = "relationships"

    @property
    def job_kind(self) -> str:
        return f"{self.value}_item"

    @classmethod
    def from_job_kind(cls, kind: str) -> StageKind | None:
        """The stage a job kind runs, or None for a job that is not a stage."""
        if not kind.endswith("_item"):
            return None
        try:
            return cls(kind.removesuffix("_item"))
        except ValueError:
            return None


class RunOutcome(enum.StrEnum):
    """How one stage's pass over one item ended (``processing_runs.outcome``)."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    #: The stage's requirement is not configured here (no embedder, analysis disabled):
    #: the item went on without it. Degraded, never failed.
    SKIPPED = "skipped"
    FAILED = "failed"


class SearchLeg(enum.StrEnum):
    """The retrieval signals search fuses (``relata.ranking``)."""

    TEXT = "text"
    CHUNK_TEXT = "chunk_text"
    VECTOR = "vector"
    ENTITY = "entity"
    RELATIONSHIP = "relationship"


class EntityType(enum.StrEnum):
    """What an entity is (docs/decisions/0015-entities.md): names of people, organisations
    and places, and ``term`` for technical terms (genes, drugs, products, identifiers)."""

    PERSON = "person"
    ORGANISATION = "organisation"
    LOCATION = "location"
    TERM = "term"


class ClaimNature(enum.StrEnum):
    """What kind of statement a claim is (AI_PROVIDER_INTERFACE ``extract_claims``)."""

    FACT = "fact"
    QUANTITY = "quantity"
    EVENT = "event"
    FINDING = "finding"
    OPINION = "opinion"


class RelationshipType(enum.StrEnum):
    """How two items are related (``relationships.relationship_type``)."""

    SUPPORTS = "supports"
    CONTRADICTS = "contradicts"
    UPDATES = "updates"
    REFERENCES = "references"
    SHARES_SUBJECT = "shares_subject"
    SIMILAR = "similar"


class ContradictionStatus(enum.StrEnum):
    OPEN = "open"
    RESOLVED = "resolved"


class Resolution(enum.StrEnum):
    """How a person resolved a contradiction (the ledger, docs/decisions/0017)."""

    FIRST_CORRECT = "first_correct"
    SECOND_CORRECT = "second_correct"
    #: Both hold: a different time or context.
    BOTH_VALID = "both_valid"
    #: Dismissed: not proposed again while both claims are unchanged.
    NOT_A_CONTRADICTION = "not_a_contradiction"
