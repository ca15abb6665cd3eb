"""Why two items are related, in one line a person can read (item detail, ``relata related``,
the search leg's reasons). Pure: built from a stored relationship's evidence, features and
review state, never from the items' text beyond the quotations already in the evidence."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relata.domain.excerpts import clip_quote
from relata.domain.models import Relationship, ReviewStatus
from relata.relationships.evidence import EvidenceKind
from relata.relationships.scoring import STRONG_THRESHOLD

#: Quotations shown in one line, cut to this many characters each.
QUOTE_CHARS = 90
#: Shared entities named in one line, at most.
NAMES_SHOWN = 3

_REVIEWED = {
    ReviewStatus.CONFIRMED: "confirmed by a reviewer",
    ReviewStatus.EDITED: "type set by a reviewer",
    ReviewStatus.REJECTED: "rejected by a reviewer",
}


def _quote(span: Mapping[str, Any]) -> str:
    return f"“{clip_quote(str(span.get('quotation', '')), QUOTE_CHARS)}”"


def evidence_phrases(rel: Relationship, titles: Mapping[str, str] | None = None) -> list[str]:
    """The relationship's evidence as short phrases, strongest kind first."""
    titles = titles or {}
    by_kind: dict[str, list[Mapping[str, Any]]] = {}
    record: Mapping[str, Any]
    for record in rel.evidence:
        by_kind.setdefault(str(record.get("kind")), []).append(record)
    phrases: list[str] = []
    for record in by_kind.get(EvidenceKind.CONTRADICTING_CLAIMS.value, [])[:1]:
        phrases.append(
            f"they disagree about {record.get('subject_name') or 'a shared subject'}: "
            f"{_quote(record['first'])} vs {_quote(record['second'])}"
        )
    for record in by_kind.get(EvidenceKind.AGREEING_CLAIMS.value, [])[:1]:
        phrases.append(
            f"they agree about {record.get('subject_name') or 'a shared subject'}: "
            f"{_quote(record['first'])} and {_quote(record['second'])}"
        )
    for record in by_kind.get(EvidenceKind.REFERENCE.value, [])[:1]:
        named = str(record.get("referenced_item", ""))
        naming = str(record.get("span", {}).get("item", ""))
        what = titles.get(named, "the other item")
        by = titles.get(naming, "one item")
        phrases.append(f"{by} names {what}: {_quote(record['span'])}")
    names = [str(r.get("entity_name")) for r in by_kind.get(EvidenceKind.SHARED_ENTITY.value, [])]
    if names:
        shown = ", ".join(names[:NAMES_SHOWN])
        more = len(names) - NAMES_SHOWN
        phrases.append(f"both name {shown}" + (f" and {more} more" if more > 0 else ""))
    similarity = _similarity(rel)
    if similarity is not None and not phrases:
        phrases.append(f"similar in meaning (cosine {similarity:.2f})")
    return phrases


def _similarity(rel: Relationship) -> float | None:
    inputs = rel.features.get("inputs") if isinstance(rel.features, dict) else None
    value = inputs.get("similarity") if isinstance(inputs, dict) else None
    return float(value) if isinstance(value, int | float) else None


def followed(rel: Relationship) -> bool:
    """Whether search expands along it: a person confirmed or edited it, or it is strong and
    not yet reviewed; a rejected one never."""
    if rel.review_status in (ReviewStatus.CONFIRMED, ReviewStatus.EDITED):
        return True
    return rel.review_status is ReviewStatus.UNREVIEWED and rel.score >= STRONG_THRESHOLD


def standing(rel: Relationship) -> str:
    """Its review state, or whether its score is strong, in words."""
    reviewed = _REVIEWED.get(rel.review_status)
    if reviewed is not None:
        return reviewed
    return "strong, not yet reviewed" if rel.score >= STRONG_THRESHOLD else "not yet reviewed"


def describe(rel: Relationship, titles: Mapping[str, str] | None = None) -> str:
    """``contradicts (0.430, confirmed by a reviewer): they disagree about ...; both name ...``"""
    phrases = evidence_phrases(rel, titles) or ["no evidence recorded"]
    head = f"{rel.relationship_type.value} ({rel.score:.3f}, {standing(rel)})"
    return f"{head}: " + "; ".join(phrases)
