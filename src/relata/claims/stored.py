"""Stored claims as the facet rules compare them (docs/decisions/0017, "Stored facets"):
``draft_of`` turns a stored claim back into a draft with the facets it was compared with,
remembered by claim id (a stored claim never changes: a new write gives new ids), and
``held_drafts`` keeps whole drafts of the similar items' claims (docs/decisions/0052), so a
claim read again by every item like it is read as its id. ``facets_summary`` is what is
stored of a claim's facets for showing them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Final

from relata.claims.extract import ClaimDraft, Subject
from relata.claims.facets import Facets, extract_facets, facets_from_record
from relata.domain.models import Claim


def facets_summary(draft: ClaimDraft) -> dict[str, Any]:
    """What is stored of a claim's facets: enough to show them, and where its subject sits
    in the quotation so the facets can be read again exactly."""
    f = draft.facets
    return {
        "dates": [d.text for d in f.dates],
        "quantities": [q.label() for q in f.quantities],
        "polarity": str(f.polarity),
        "direction": f.direction.name.lower() if f.direction is not None else None,
        "predicate": f.predicate.key if f.predicate is not None else None,
        "attached": draft.attached,
        "subject_at": [draft.subject.start - draft.start, draft.subject.end - draft.start],
    }


#: Stored claims' facets remembered, by claim id, at most (the most recently used).
FACETS_CACHE: Final = 8192
_facets_cache: OrderedDict[str, Facets] = OrderedDict()
_facets_lock = threading.Lock()


def _stored_facets(claim: Claim, quotation: str, subject_end: int | None) -> Facets:
    """A stored claim's facets: the same claims are read again as candidates by every new
    item about their subject, so they are remembered by claim id (a stored claim never
    changes: a new write gives new ids); else decoded from ``comparable``, or read again
    from the quotation for a claim stored without them."""
    with _facets_lock:
        hit = _facets_cache.get(claim.id)
        if hit is not None:
            _facets_cache.move_to_end(claim.id)
            return hit
    facets = facets_from_record(claim.comparable) or extract_facets(
        quotation, subject_end=subject_end
    )
    with _facets_lock:
        _facets_cache[claim.id] = facets
        while len(_facets_cache) > FACETS_CACHE:
            _facets_cache.popitem(last=False)
    return facets


#: Stored claims as compared, remembered by claim id (the similar items' claims are read
#: again by every item like them: only their ids are read when held here).
_drafts_cache: OrderedDict[str, ClaimDraft] = OrderedDict()
_drafts_lock = threading.Lock()


def held_ids() -> set[str]:
    """The ids of the claims whose drafts are held (``held_drafts``)."""
    with _drafts_lock:
        return set(_drafts_cache)


def held_drafts(ids: Sequence[str], fresh: Sequence[Claim]) -> list[ClaimDraft]:
    """The drafts of claims ``ids``, in that order: those read now (``fresh``) remembered,
    the others from the cache (one evicted meanwhile is left out)."""
    new = {c.id: draft_of(c) for c in fresh}
    out = []
    with _drafts_lock:
        for claim_id, draft in new.items():
            _drafts_cache[claim_id] = draft
        for claim_id in ids:
            got = new.get(claim_id) or _drafts_cache.get(claim_id)
            if got is not None:
                _drafts_cache.move_to_end(claim_id)
                out.append(got)
        while len(_drafts_cache) > FACETS_CACHE:
            _drafts_cache.popitem(last=False)
    return out


def draft_of(claim: Claim) -> ClaimDraft:
    """A stored claim as the detector compares it: its stored facets (``comparable``), or,
    for a claim written without them, its facets read again from its quotation."""
    quotation = claim.quotation or claim.statement
    at = claim.facets.get("subject_at") or [0, 0]
    subject_end = int(at[1]) if len(at) == 2 else None
    facets = _stored_facets(claim, quotation, subject_end or None)
    return ClaimDraft(
        item_id=claim.item_id,
        subject=Subject(
            claim.subject_name, claim.subject, claim.start + int(at[0]), claim.start + int(at[1])
        ),
        statement=claim.statement,
        nature=claim.nature,
        quotation=quotation,
        start=claim.start,
        end=claim.end,
        confidence=claim.confidence,
        extractor=claim.extractor,
        extractor_version=claim.extractor_version,
        facets=facets,
        chunk_id=claim.chunk_id,
        attached=bool(claim.facets.get("attached", False)),
    )
