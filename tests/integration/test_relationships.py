"""Relationships through the real pipeline on SQLite over the demo corpus: the
press release and the council minutes are related as ``contradicts`` with the date
contradiction as evidence from both sides; the score is the sum of its parts; confirmed,
rejected and edited relationships keep their decisions through reprocessing of every item;
a scoring version change shows on every relationship it produced; deleting an item removes its
relationships and re-scores the pairs that shared its entities; search expands to related
items, says why, and never along a rejected relationship nor into another workspace."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from decimal import Decimal

import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.models import Relationship, ReviewStatus
from relata.domain.vocabulary import RelationshipType, SearchLeg
from relata.ingest.service import IngestRequest
from relata.relationships.evidence import EvidenceKind
from relata.relationships.scoring import DEFAULT_MODEL
from relata.relationships.stage import RelationshipStage
from relata.search.service import SearchQuery
from relata.seed import demo_documents
from tests.support.ingest import built, drain, workspace_id

PRESS = "sabrewing-array-press-release.txt"
MINUTES = "harbour-council-minutes.md"


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none") as container:
        yield container


def _seed(c: Container, ws: str) -> dict[str, str]:
    """The demo corpus, processed; file name -> item id."""
    ids = {}
    for doc in demo_documents():
        item = c.ingest.ingest(
            ws, IngestRequest(data=doc.data, filename=doc.filename, created_at=doc.created_at)
        )
        ids[doc.filename] = item.id
    drain(c)
    return ids


def _all(c: Container, ws: str, ids: dict[str, str]) -> dict[str, Relationship]:
    rels = c.repos.relationships.list_for_items(ws, list(ids.values()), include_rejected=True)
    return {r.dedupe_key: r for r in rels}


def _pair(c: Container, ws: str, a: str, b: str) -> Relationship:
    [rel] = [
        r
        for r in c.repos.relationships.list_for_items(ws, [a], include_rejected=True)
        if {r.source_id, r.target_id} == {a, b}
    ]
    return rel


def _reprocess_all(c: Container, ws: str) -> None:
    for item in c.items.list(ws):
        c.items.reprocess(ws, item.id)
    drain(c)


def test_the_press_release_and_the_minutes_contradict_with_the_date_as_evidence(
    c: Container,
) -> None:
    ws = workspace_id(c)
    ids = _seed(c, ws)
    rel = _pair(c, ws, ids[PRESS], ids[MINUTES])
    assert rel.relationship_type is RelationshipType.CONTRADICTS
    assert rel.score >= DEFAULT_MODEL.strong_threshold
    assert rel.source_id == min(ids[PRESS], ids[MINUTES])
    [planted] = [x for x in c.claims.contradictions(ws) if x.facet == "date"]
    kinds = [e["kind"] for e in rel.evidence]
    assert kinds[0] == EvidenceKind.CONTRADICTING_CLAIMS.value
    contradiction = rel.evidence[0]
    assert contradiction["contradiction_id"] == planted.id
    # Evidence from both sides: every quotation slices its item's text at its offsets.
    texts = {i: c.repos.items.get(ws, i).text or "" for i in (rel.source_id, rel.target_id)}
    spans = [s for e in rel.evidence for s in (e.get("first"), e.get("second"), e.get("span")) if s]
    assert {s["item"] for s in spans} == set(texts)
    for s in spans:
        assert texts[s["item"]][s["start"] : s["end"]] == s["quotation"]
    quoted = " ".join(s["quotation"] for s in (contradiction["first"], contradiction["second"]))
    assert "March 2019" in quoted and "June 2021" in quoted
    assert EvidenceKind.SHARED_ENTITY.value in kinds
    # Transparent: the contributions add up to the stored score, exactly.
    parts = rel.features["contributions"].values()
    assert sum(Decimal(repr(p["contribution"])) for p in parts) == Decimal(repr(rel.score))
    assert rel.features["score_version"] == rel.score_version == DEFAULT_MODEL.version
    # The item detail's "why" names the disagreement.
    [related] = [r for r in c.relationships.related(ws, ids[PRESS]) if r.other_id == ids[MINUTES]]
    assert "disagree" in related.why and "contradicts" in related.why


def test_decisions_survive_reprocessing_and_a_rejection_is_not_proposed_again(
    c: Container,
) -> None:
    ws = workspace_id(c)
    ids = _seed(c, ws)
    rels = sorted(_all(c, ws, ids).values(), key=lambda r: -r.score)
    assert len(rels) >= 3, "the demo corpus should relate at least three pairs"
    confirmed, rejected, edited = rels[0], rels[1], rels[2]
    c.relationships.review(ws, confirmed.id, "confirm", by="tester", note="checked")
    c.relationships.review(ws, rejected.id, "reject", by="tester")
    c.relationships.review(
        ws, edited.id, "edit", by="tester", relationship_type=RelationshipType.UPDATES
    )
    before = _all(c, ws, ids)
    _reprocess_all(c, ws)
    after = _all(c, ws, ids)
    for rel, status in (
        (confirmed, ReviewStatus.CONFIRMED),
        (rejected, ReviewStatus.REJECTED),
        (edited, ReviewStatus.EDITED),
    ):
        now = after[rel.dedupe_key]
        was = before[rel.dedupe_key]
        assert now.id == rel.id and now.review_status is status
        assert now.relationship_type is was.relationship_type
        assert (now.score, now.score_version, now.features) == (
            was.score,
            was.score_version,
            was.features,
        )
        assert now.reviewed_by == "tester"
    assert after[edited.dedupe_key].relationship_type is RelationshipType.UPDATES
    assert after[confirmed.dedupe_key].review_note == "checked"
    queue = {r.id for r in c.relationships.queue(ws, limit=200)}
    assert not queue & {confirmed.id, rejected.id, edited.id}
    # Not re-proposed: still one relationship for the pair, still rejected, its decision kept.
    pair = {rejected.source_id, rejected.target_id}
    assert [r.id for r in after.values() if {r.source_id, r.target_id} == pair] == [rejected.id]
    assert after[rejected.dedupe_key].decision is not None


def test_a_new_scoring_version_shows_on_every_relationship_it_produced(c: Container) -> None:
    ws = workspace_id(c)
    ids = _seed(c, ws)
    rels = sorted(_all(c, ws, ids).values(), key=lambda r: -r.score)
    kept = rels[0]
    c.relationships.review(ws, kept.id, "confirm", by="tester")
    [stage] = [s for s in c.pipeline.stages if isinstance(s, RelationshipStage)]
    stage._model = dataclasses.replace(DEFAULT_MODEL, version="score-test")
    for item in c.items.list(ws):
        c.items.reprocess(ws, item.id, from_stage="relationships")
    drain(c)
    after = _all(c, ws, ids)
    for rel in after.values():
        if rel.id == kept.id:
            assert rel.score_version == DEFAULT_MODEL.version  # the reviewed one keeps its own
        else:
            assert rel.score_version == "score-test"
            assert rel.features["score_version"] == "score-test"


def test_deleting_an_item_removes_its_relationships_and_rescores_the_rest(c: Container) -> None:
    ws = workspace_id(c)
    ids = _seed(c, ws)
    before = _all(c, ws, ids)
    gone = ids[MINUTES]
    c.items.delete(ws, gone)
    rest = {k: v for k, v in ids.items() if k != MINUTES}
    after = _all(c, ws, rest)
    assert all(gone not in (r.source_id, r.target_id) for r in after.values())
    assert c.repos.relationships.list_for_items(ws, [gone], include_rejected=True) == []
    # Every surviving unreviewed relationship was re-scored for a workspace one item smaller.
    survivors = [r for k, r in before.items() if gone not in (r.source_id, r.target_id)]
    assert survivors, "the demo corpus should relate pairs that do not involve the minutes"
    for rel in survivors:
        now = after.get(rel.dedupe_key)
        if now is None:
            continue  # no longer storable: dropped
        shared_with_gone = (
            rel.features["inputs"]["shared_entities"] != now.features["inputs"]["shared_entities"]
        )
        if shared_with_gone:
            assert now.features["inputs"]["workspace_items"] == len(ids) - 1
            assert now.score >= rel.score  # an entity named by one item fewer is rarer


def test_search_expands_along_relationships_and_says_why(c: Container) -> None:
    ws = workspace_id(c)
    ids = _seed(c, ws)
    rel = _pair(c, ws, ids[PRESS], ids[MINUTES])
    c.relationships.review(ws, rel.id, "confirm", by="tester")
    response = c.search.search(
        ws, SearchQuery(text="commercial operation press release", legs=None)
    )
    assert response.legs[SearchLeg.RELATIONSHIP] == "ran"
    found = {
        r.item.id: leg
        for r in response.results
        for leg in r.explanation.legs
        if leg.leg == SearchLeg.RELATIONSHIP
    }
    assert ids[MINUTES] in found or ids[PRESS] in found
    reason = " ".join(found.get(ids[MINUTES], found.get(ids[PRESS])).reasons)
    assert "related to result" in reason and "confirmed by a reviewer" in reason
    # "result N" is the seed's rank on the page the caller sees, after the expansion moved
    # results: the result at that rank is the one the reason names by title.
    rank_of = {r.item.title: r.rank for r in response.results}
    for leg in found.values():
        for why in leg.reasons:
            numbered = re.match(r"related to result (\d+) \((.+?)\): ", why)
            assert numbered, why
            assert rank_of[numbered.group(2)] == int(numbered.group(1)), why

    # Rejected: never expanded along (neither direction of the pair says it any more).
    c.relationships.review(ws, rel.id, "reject", by="tester")
    titles = {i: c.repos.items.get(ws, i).title for i in (ids[PRESS], ids[MINUTES])}
    again = c.search.search(ws, SearchQuery(text="commercial operation press release"))
    for r in again.results:
        if r.item.id not in titles:
            continue
        other_title = titles[ids[MINUTES] if r.item.id == ids[PRESS] else ids[PRESS]]
        for leg in r.explanation.legs:
            if leg.leg == SearchLeg.RELATIONSHIP:
                assert not any(f"({other_title})" in x for x in leg.reasons), leg.reasons


def test_expansion_never_reaches_another_workspace(c: Container) -> None:
    ws = workspace_id(c)
    mine = _seed(c, ws)
    other = c.workspaces.ensure("other-team")[0].id
    theirs = _seed(c, other)
    assert _all(c, other, theirs)
    response = c.search.search(ws, SearchQuery(text="Sabrewing Array commercial operation"))
    assert {r.item.id for r in response.results} <= set(mine.values())
    for r in response.results:
        for leg in r.explanation.legs:
            assert not any(t in " ".join(leg.reasons) for t in theirs.values())
    # And the repository itself never returns the other workspace's relationships.
    assert c.repos.relationships.list_for_items(ws, list(theirs.values())) == []


def test_an_item_named_by_an_earlier_one_is_found_by_its_title(c: Container) -> None:
    """Backward references: when an item arrives, the items already there that name its
    title (a phrase query, then checked in their text) are related to it, the reference span
    pointing at the words in the naming item."""
    ws = workspace_id(c)
    naming = c.ingest.ingest(
        ws,
        IngestRequest(
            text="Minutes. As the Harbour Dredging Plan for Spring says, work starts in May.\n",
            title="Council minutes",
        ),
    )
    other = c.ingest.ingest(
        ws, IngestRequest(text="A plan for spring dredging of the harbour.\n", title="Notes")
    )
    drain(c)
    named = c.ingest.ingest(
        ws,
        IngestRequest(
            text="Dredging starts in May and ends in June.\n",
            title="Harbour Dredging Plan for Spring",
        ),
    )
    drain(c)
    rel = _pair(c, ws, naming.id, named.id)
    refs = [e for e in rel.evidence if e["kind"] == EvidenceKind.REFERENCE.value]
    assert refs, rel.evidence
    span = refs[0]["span"]
    body = c.repos.items.get(ws, naming.id).text or ""
    assert span["item"] == naming.id
    assert body[span["start"] : span["end"]] == "Harbour Dredging Plan for Spring"
    # The words in another order are no reference.
    assert not any(
        e["kind"] == EvidenceKind.REFERENCE.value
        for r in c.repos.relationships.list_for_items(ws, [other.id], include_rejected=True)
        for e in r.evidence
    )


def test_a_run_stores_only_its_best_new_pairs_and_a_reprocess_adds_none(
    c: Container,
) -> None:
    # At most one new pair per run: each item's run adds its best storable pair (or none),
    # keeps the pairs earlier runs stored with it, and a reprocess finds nothing to add.
    [stage] = [s for s in c.pipeline.stages if isinstance(s, RelationshipStage)]
    stage._max_new = 1
    ws = workspace_id(c)
    ids = _seed(c, ws)
    first = _all(c, ws, ids)
    assert 0 < len(first) <= len(ids)
    runs = [
        r
        for item_id in ids.values()
        for r in c.repos.runs.list_for_item(ws, item_id)
        if r.stage == "relationships"
    ]
    assert any(r.details["left_out"] > 0 for r in runs), "the corpus should relate more pairs"
    # The press release and the minutes' contradiction is the best pair of whichever came later.
    assert _pair(c, ws, ids[PRESS], ids[MINUTES]).relationship_type is RelationshipType.CONTRADICTS
    for item in c.items.list(ws):
        c.items.reprocess(ws, item.id, from_stage="relationships")
    drain(c)
    again = _all(c, ws, ids)
    assert set(again) == set(first)  # nothing added, nothing dropped: the data did not change
    # Without the bound, the same data yields more pairs: the bound is what held them back.
    stage._max_new = 1000
    for item in c.items.list(ws):
        c.items.reprocess(ws, item.id, from_stage="relationships")
    drain(c)
    assert set(_all(c, ws, ids)) > set(first)
