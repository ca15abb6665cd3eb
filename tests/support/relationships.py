"""Relationships as the relationships stage stores them, for the API and CLI tests: items with
known text, and a scored relationship between two of them whose evidence quotes both (built
with the pure ``relata.relationships`` core, stored through the repository)."""

from __future__ import annotations

from dataclasses import dataclass

from relata.bootstrap import Container
from relata.domain.models import Item, Relationship
from relata.ids import new_id
from relata.ingest.service import IngestRequest
from relata.relationships.evidence import (
    ClaimPairEvidence,
    Evidence,
    SharedEntityEvidence,
    Span,
    bound_evidence,
    evidence_as_json,
    relationship_key,
)
from relata.relationships.scoring import (
    Chronology,
    PairFeatures,
    SharedEntity,
    Side,
    rarity,
    score_pair,
)

PRESS = (
    "Press release. The Sabrewing Array began operating on 14 March 2019, "
    "Kestrel Marine Systems said."
)
MINUTES = (
    "Harbour council minutes. The clerk noted that the Sabrewing Array entered service in "
    "June 2021. Kestrel Marine Systems attended."
)
SURVEY = "Seal survey. Seals feed in the lanes beside the Sabrewing Array at dusk."


@dataclass(frozen=True, slots=True)
class Texts:
    """An item and the text it was ingested with (the spans are offsets into it)."""

    item: Item
    text: str


def add_item(c: Container, ws: str, title: str, text: str) -> Texts:
    """A text item (not processed: nothing but the test writes its relationships)."""
    return Texts(c.ingest.ingest(ws, IngestRequest(text=text, title=title)), text)


def span(of: Texts, quotation: str) -> Span:
    start = of.text.index(quotation)
    return Span.of(of.item.id, None, start, quotation)


def relate(
    c: Container,
    ws: str,
    a: Texts,
    b: Texts,
    *,
    entities: tuple[str, ...] = (),
    contradiction: tuple[str, str] | None = None,
    similarity: float | None = None,
    workspace_items: int = 3,
) -> Relationship:
    """Store the relationship of ``a`` and ``b``: one shared-entity record per name in
    ``entities`` (each named by two items of ``workspace_items``), with ``contradiction``
    (a quotation of each) a date contradiction between them, and the cosine of their
    vectors."""
    first, second = sorted((a, b), key=lambda t: t.item.id)
    records: list[Evidence] = [
        SharedEntityEvidence(
            entity_key=name.lower(),
            entity_name=name,
            rarity=rarity(2, workspace_items),
            first=span(first, name),
            second=span(second, name),
        )
        for name in entities
    ]
    contradicting: tuple[float, ...] = ()
    if contradiction is not None:
        quotes = dict(zip((a.item.id, b.item.id), contradiction, strict=True))
        records.append(
            ClaimPairEvidence(
                agrees=False,
                subject_key="sabrewing array",
                subject_name="Sabrewing Array",
                first_claim=f"claim-{first.item.id[:8]}",
                second_claim=f"claim-{second.item.id[:8]}",
                first=span(first, quotes[first.item.id]),
                second=span(second, quotes[second.item.id]),
                confidence=0.9,
                facet="date",
                reason="14 March 2019 vs June 2021",
            )
        )
        contradicting = (0.9,)
    scored = score_pair(
        PairFeatures(
            workspace_items=workspace_items,
            shared_entities=tuple(SharedEntity(n.lower(), 2) for n in entities),
            contradicting=contradicting,
            similarity=similarity,
            chronology=Chronology(Side.SECOND, 830.0) if contradiction else None,
        )
    )
    assert scored.storable, "a test relationship must be one the stage would store"
    evidence = bound_evidence(first.item.id, second.item.id, records)
    return c.repos.relationships.upsert_by_dedupe_key(
        Relationship(
            id=new_id(),
            workspace_id=ws,
            source_id=first.item.id,
            target_id=second.item.id,
            relationship_type=scored.relationship_type,
            score=scored.score,
            score_version=scored.score_version,
            dedupe_key=relationship_key(first.item.id, second.item.id),
            created_at=c.clock.now(),
            evidence=evidence_as_json(evidence),
            features=scored.as_json(),
        )
    )


@dataclass(frozen=True, slots=True)
class Corpus:
    """Three items of one workspace and their relationships: the press release and the
    minutes contradict each other (strong), the survey is similar to each (weaker, the press
    release more)."""

    press: Texts
    minutes: Texts
    survey: Texts
    contradiction: Relationship
    press_survey: Relationship
    minutes_survey: Relationship


def corpus(c: Container, ws: str) -> Corpus:
    press = add_item(c, ws, "Sabrewing press release", PRESS)
    minutes = add_item(c, ws, "Harbour council minutes", MINUTES)
    survey = add_item(c, ws, "Seal survey", SURVEY)
    contradiction = relate(
        c,
        ws,
        press,
        minutes,
        entities=("Sabrewing Array", "Kestrel Marine Systems"),
        contradiction=("began operating on 14 March 2019", "entered service in June 2021"),
    )
    press_survey = relate(c, ws, press, survey, entities=("Sabrewing Array",), similarity=0.7)
    minutes_survey = relate(c, ws, minutes, survey, entities=("Sabrewing Array",), similarity=0.65)
    return Corpus(press, minutes, survey, contradiction, press_survey, minutes_survey)
