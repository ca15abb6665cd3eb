"""The SQL storage of relationships (docs/decisions/0019), on SQLite and PostgreSQL: the
stage's ``replace_relationships`` in its unit of work, a person's ``review``, the queue, the
reads by item and by shared entity, re-scoring after a deletion, the cascade from items, and
``ItemRepository.find_named`` (also on the in-memory fake, which must agree).

The databases are migrated once per module and emptied before each test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from relata.domain.clock import ManualClock
from relata.domain.errors import MissingWorkspace, NotFound, RelataError, ValidationError
from relata.domain.models import (
    Item,
    ItemStatus,
    ProposedRelationship,
    Relationship,
    ReviewStatus,
    SourceType,
    Workspace,
)
from relata.domain.ports import ItemRepository
from relata.domain.vocabulary import RelationshipType
from relata.ids import content_hash, new_id
from relata.relationships.evidence import relationship_key
from relata.relationships.explain import followed
from relata.storage.sql.accounts import SqlWorkspaceRepository
from relata.storage.sql.engine import Database
from relata.storage.sql.items import SqlItemRepository
from relata.storage.sql.knowledge import SqlRelationshipRepository
from relata.storage.sql.tables import metadata, relationship_entities, relationships
from relata.storage.sql.unit_of_work import SqlUnitOfWork
from tests.support.databases import Templates
from tests.support.memory import MemoryRepositories

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
SNAPSHOT = {"kinds": ["shared_entity"], "identities": [["entity", "k"]], "score": 0.2}


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def sqlite_db(templates: Templates, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    with templates.migrated("sqlite", tmp_path_factory.mktemp("relationships")) as db:
        yield db


@pytest.fixture(scope="module")
def postgresql_db(
    templates: Templates, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Database]:
    """One migrated PostgreSQL database for the module (a copy of the session's template)."""
    with templates.migrated("postgresql", tmp_path_factory.mktemp("relationships-pg")) as db:
        yield db


@dataclass(frozen=True, slots=True)
class Store:
    db: Database
    clock: ManualClock
    items: SqlItemRepository
    rels: SqlRelationshipRepository
    uow: SqlUnitOfWork
    ws: str
    other: str

    def item(self, title: str = "An item", *, workspace: str | None = None, **kw: Any) -> str:
        ws = workspace or self.ws
        body = new_id()
        return self.items.create(
            Item(
                id=new_id(),
                workspace_id=ws,
                title=title,
                source_type=SourceType.TEXT,
                content_hash=content_hash(body),
                size_bytes=len(body),
                ingested_at=kw.pop("ingested_at", NOW),
                text=body,
                **kw,
            )
        ).id

    def replace(
        self,
        item_id: str,
        proposed: list[ProposedRelationship],
        drop: tuple[str, ...] = (),
        *,
        workspace: str | None = None,
    ) -> int:
        with self.uow.begin(workspace or self.ws) as tx:
            return tx.replace_relationships(item_id, proposed, drop)

    def only(self, a: str, b: str, *, workspace: str | None = None) -> Relationship:
        """The one stored relationship of the pair (and there is exactly one)."""
        found = [
            r
            for r in self.rels.list_for_items(workspace or self.ws, [a], include_rejected=True)
            if {r.source_id, r.target_id} == {a, b}
        ]
        assert len(found) == 1, found
        return found[0]

    def rows(self, table: sa.Table) -> int:
        with self.db.read() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())


def _empty(db: Database) -> None:
    with db.write() as conn:
        for table in reversed(metadata.sorted_tables):
            if table.name != "audit_events":  # append-only: the database refuses DELETE
                conn.execute(table.delete())


def _store(db: Database) -> Store:
    _empty(db)
    clock = ManualClock(NOW)
    workspaces = SqlWorkspaceRepository(db)
    ws, other = (
        workspaces.create(Workspace(id=new_id(), slug=slug, name=slug, created_at=NOW)).id
        for slug in ("mine", "theirs")
    )
    return Store(
        db,
        clock,
        SqlItemRepository(db, clock),
        SqlRelationshipRepository(db, clock),
        SqlUnitOfWork(db, clock),
        ws,
        other,
    )


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest) -> Store:
    return _store(request.getfixturevalue(f"{request.param}_db"))


def proposal(
    ws: str,
    a: str,
    b: str,
    *,
    score: float = 0.2,
    rtype: RelationshipType = RelationshipType.SHARES_SUBJECT,
    version: str = "score-1",
    note: str = "first",
    entity_keys: tuple[str, ...] = (),
    reopen: bool = False,
) -> ProposedRelationship:
    """A proposal whose features and evidence carry ``note``, to tell generations apart."""
    lo, hi = sorted((a, b))
    return ProposedRelationship(
        Relationship(
            id=new_id(),
            workspace_id=ws,
            source_id=lo,
            target_id=hi,
            relationship_type=rtype,
            score=score,
            score_version=version,
            dedupe_key=relationship_key(a, b),
            created_at=NOW,
            evidence=({"kind": "shared_entity", "key": note},),
            features={"score_version": version, "inputs": {"note": note}},
        ),
        entity_keys=entity_keys,
        reopen=reopen,
    )


def _values(rel: Relationship) -> tuple[Any, ...]:
    """What reprocessing may change only while a relationship is unreviewed."""
    return (rel.relationship_type, rel.score, rel.score_version, rel.features)


# ------------------------------------------------------------------ replace_relationships
def test_new_relationships_are_inserted_unreviewed_and_counted(store: Store) -> None:
    s = store
    a, b, c = s.item(), s.item(), s.item()
    ab, ac = proposal(s.ws, a, b, score=0.3), proposal(s.ws, a, c, score=0.2)
    assert s.replace(a, [ab, ac]) == 2
    got = s.only(a, b)
    assert got == replace(ab.relationship, updated_at=NOW)
    assert got.review_status is ReviewStatus.UNREVIEWED
    assert (got.reviewed_by, got.reviewed_at, got.review_note, got.decision) == (None,) * 4
    assert s.only(a, c).id == ac.relationship.id


def test_an_unreviewed_relationship_takes_the_new_proposal_under_the_same_id(
    store: Store,
) -> None:
    s = store
    a, b = s.item(), s.item()
    first = proposal(s.ws, a, b, score=0.2)
    assert s.replace(a, [first]) == 1
    s.clock.advance(60)
    second = proposal(
        s.ws, b, a, score=0.5, rtype=RelationshipType.CONTRADICTS, version="score-2", note="new"
    )
    assert s.replace(b, [second]) == 0  # neither new nor reopened
    got = s.only(a, b)
    assert got.id == first.relationship.id and got.created_at == NOW
    assert _values(got) == _values(second.relationship)
    assert got.evidence == second.relationship.evidence
    assert got.updated_at == NOW + timedelta(seconds=60)
    assert s.rows(relationships) == 1


@pytest.mark.parametrize("status", [ReviewStatus.CONFIRMED, ReviewStatus.EDITED])
def test_a_confirmed_or_edited_relationship_refreshes_only_its_evidence(
    store: Store, status: ReviewStatus
) -> None:
    s = store
    a, b = s.item(), s.item()
    s.replace(a, [proposal(s.ws, a, b, score=0.2)])
    rel = s.only(a, b)
    rtype = RelationshipType.SUPPORTS if status is ReviewStatus.EDITED else None
    decided = s.rels.review(
        s.ws, rel.id, status, by="alice", relationship_type=rtype, note="ok", decision=SNAPSHOT
    )
    again = proposal(
        s.ws, a, b, score=0.9, rtype=RelationshipType.CONTRADICTS, version="v9", note="new"
    )
    for reopen in (False, True):  # reopening is for rejected ones only
        assert s.replace(a, [replace(again, reopen=reopen)]) == 0
        got = s.only(a, b)
        assert got.review_status is status
        assert _values(got) == _values(decided)
        assert (got.reviewed_by, got.review_note, got.decision) == ("alice", "ok", SNAPSHOT)
        assert got.evidence == again.relationship.evidence


def test_a_rejected_relationship_comes_back_only_when_reopened(store: Store) -> None:
    s = store
    a, b = s.item(), s.item()
    s.replace(a, [proposal(s.ws, a, b, score=0.2)])
    rel = s.only(a, b)
    rejected = s.rels.review(
        s.ws, rel.id, ReviewStatus.REJECTED, by="bob", note="no", decision=SNAPSHOT
    )
    seen_again = proposal(s.ws, a, b, score=0.3, note="again")
    assert s.replace(a, [seen_again]) == 0
    got = s.only(a, b)
    assert got.review_status is ReviewStatus.REJECTED
    assert _values(got) == _values(rejected)
    assert got.evidence == seen_again.relationship.evidence

    changed = proposal(
        s.ws, a, b, score=0.6, rtype=RelationshipType.CONTRADICTS, note="material", reopen=True
    )
    assert s.replace(a, [changed]) == 1
    got = s.only(a, b)
    assert got.id == rel.id and got.review_status is ReviewStatus.UNREVIEWED
    assert _values(got) == _values(changed.relationship)
    assert got.evidence == changed.relationship.evidence
    assert got.decision == SNAPSHOT  # what the next rejection is compared with
    assert [r.id for r in s.rels.queue(s.ws)] == [rel.id]


def test_drop_deletes_only_the_items_unreviewed_relationships(store: Store) -> None:
    s = store
    a, b, c, d = s.item(), s.item(), s.item(), s.item()
    s.replace(a, [proposal(s.ws, a, b), proposal(s.ws, a, c), proposal(s.ws, a, d)])
    s.replace(b, [proposal(s.ws, b, c)])
    s.rels.review(s.ws, s.only(a, c).id, ReviewStatus.CONFIRMED, by="x")
    s.rels.review(s.ws, s.only(a, d).id, ReviewStatus.REJECTED, by="x")
    keys = tuple(relationship_key(*pair) for pair in ((a, b), (a, c), (a, d), (b, c)))
    assert s.replace(a, [], keys) == 0
    left = {
        frozenset((r.source_id, r.target_id))
        for r in s.rels.list_for_items(s.ws, [a, b], include_rejected=True)
    }
    # b-c is not a's to drop; the reviewed ones stay.
    assert left == {frozenset((a, c)), frozenset((a, d)), frozenset((b, c))}


def test_the_contribution_index_follows_the_latest_entity_keys(store: Store) -> None:
    s = store
    a, b, c = s.item(), s.item(), s.item()
    long_key = "k" * 250
    s.replace(
        a,
        [
            proposal(s.ws, a, b, score=0.4, entity_keys=("x", "y", "y")),
            proposal(s.ws, a, c, score=0.3, entity_keys=("y", long_key)),
        ],
    )
    ab, ac = s.only(a, b).id, s.only(a, c).id

    def sharing(*keys: str) -> list[str]:
        return [r.id for r in s.rels.sharing_entities(s.ws, keys)]

    assert sharing("y") == [ab, ac]  # best score first
    assert sharing("x") == [ab]
    assert sharing(long_key) == [ac]  # cut to the column's width, as the evidence is
    s.rels.review(s.ws, ab, ReviewStatus.CONFIRMED, by="x")
    # Re-proposed with other keys: a reviewed relationship's index follows too.
    s.replace(a, [proposal(s.ws, a, b, entity_keys=("y", "z"))])
    assert sharing("x") == []
    assert sharing("z") == [ab]
    assert sharing("y", "z") == [ab, ac]
    assert sharing("nothing") == [] and sharing() == []
    s.replace(a, [proposal(s.ws, a, b)])
    assert sharing("y", "z") == [ac]


@pytest.mark.parametrize("gone", ["marked", "deleted"])
def test_replace_meets_a_deleted_item_as_not_found_and_writes_nothing(
    store: Store, gone: str
) -> None:
    s = store
    a, b, c = s.item(), s.item(), s.item()
    s.replace(a, [proposal(s.ws, a, b, entity_keys=("x",))])
    before = s.only(a, b)
    s.items.mark_deleted(s.ws, a)
    if gone == "deleted":
        s.items.delete(s.ws, a)
    with pytest.raises(NotFound):
        s.replace(
            a,
            [proposal(s.ws, a, b, score=0.9, note="new"), proposal(s.ws, a, c)],
            (relationship_key(a, b),),
        )
    if gone == "marked":
        assert s.only(a, b) == before
        assert s.rows(relationships) == 1 and s.rows(relationship_entities) == 1
    else:
        assert s.rows(relationships) == 0 and s.rows(relationship_entities) == 0


def test_a_pair_whose_other_item_is_gone_is_skipped(store: Store) -> None:
    s = store
    a, b, c = s.item(), s.item(), s.item()
    s.items.mark_deleted(s.ws, c)
    assert s.replace(a, [proposal(s.ws, a, b), proposal(s.ws, a, c)]) == 1
    assert [(r.source_id, r.target_id) for r in s.rels.list_for_items(s.ws, [a])] == [
        tuple(sorted((a, b)))
    ]


def test_replace_refuses_what_is_not_the_items_and_writes_nothing(store: Store) -> None:
    s = store
    a, b, c = s.item(), s.item(), s.item()
    with pytest.raises(ValueError):
        s.replace(a, [proposal(s.ws, a, b), proposal(s.ws, b, c)])
    with pytest.raises(MissingWorkspace):
        s.replace(a, [proposal(s.other, a, b)])
    assert s.rows(relationships) == 0


# ------------------------------------------------------------------ review
@pytest.mark.parametrize(
    ("status", "rtype"),
    [
        (ReviewStatus.CONFIRMED, None),
        (ReviewStatus.REJECTED, None),
        (ReviewStatus.EDITED, RelationshipType.UPDATES),
    ],
)
def test_a_review_records_the_decision_who_when_note_and_snapshot(
    store: Store, status: ReviewStatus, rtype: RelationshipType | None
) -> None:
    s = store
    a, b = s.item(), s.item()
    s.replace(a, [proposal(s.ws, a, b, rtype=RelationshipType.SIMILAR)])
    rel = s.only(a, b)
    s.clock.advance(3600)
    got = s.rels.review(
        s.ws, rel.id, status, by="alice", relationship_type=rtype, note="why", decision=SNAPSHOT
    )
    assert got == s.rels.get(s.ws, rel.id)
    assert got.review_status is status
    assert got.relationship_type == (rtype or RelationshipType.SIMILAR)
    assert (got.reviewed_by, got.review_note, got.decision) == ("alice", "why", SNAPSHOT)
    assert got.reviewed_at == NOW + timedelta(hours=1)
    assert (got.score, got.score_version, got.features) == (
        rel.score,
        rel.score_version,
        rel.features,
    )
    # A later decision replaces the earlier one's details.
    again = s.rels.review(s.ws, rel.id, ReviewStatus.CONFIRMED, by="bob")
    assert (again.reviewed_by, again.review_note, again.decision) == ("bob", None, None)


def test_a_review_is_validated_and_scoped(store: Store) -> None:
    s = store
    a, b = s.item(), s.item()
    s.replace(a, [proposal(s.ws, a, b)])
    rel = s.only(a, b)
    with pytest.raises(ValidationError) as info:
        s.rels.review(s.ws, rel.id, ReviewStatus.EDITED, by="x")
    assert info.value.field == "relationship_type"
    with pytest.raises(ValidationError) as info:
        s.rels.review(
            s.ws, rel.id, ReviewStatus.CONFIRMED, by="x", relationship_type=RelationshipType.SIMILAR
        )
    assert info.value.field == "relationship_type"
    with pytest.raises(ValidationError) as info:
        s.rels.review(s.ws, rel.id, ReviewStatus.UNREVIEWED, by="x")
    assert info.value.field == "status"
    with pytest.raises(ValidationError) as info:
        s.rels.review(s.ws, rel.id, ReviewStatus.CONFIRMED, by="x", note="n" * 1001)
    assert info.value.field == "note"
    with pytest.raises(NotFound) as cross:
        s.rels.review(s.other, rel.id, ReviewStatus.REJECTED, by="x")
    with pytest.raises(NotFound) as missing:
        s.rels.review(s.ws, new_id(), ReviewStatus.REJECTED, by="x")
    assert cross.value.message == missing.value.message
    assert s.only(a, b) == rel  # nothing was written


def test_a_long_reviewer_name_is_kept_to_the_columns_width(store: Store) -> None:
    s = store
    a, b = s.item(), s.item()
    s.replace(a, [proposal(s.ws, a, b)])
    rel = s.only(a, b)
    assert s.rels.review(s.ws, rel.id, ReviewStatus.CONFIRMED, by="r" * 150).reviewed_by == (
        "r" * 100
    )


# ------------------------------------------------------------------ reads
def _scored(s: Store, a: str, scores: Mapping[str, float]) -> dict[str, str]:
    """Relationships from ``a`` to a new item per name, with the given scores: name -> id."""
    others = {name: s.item(name) for name in scores}
    s.replace(a, [proposal(s.ws, a, o, score=scores[n]) for n, o in others.items()])
    return {n: s.only(a, o).id for n, o in others.items()}


def test_the_queue_is_unreviewed_best_first_then_by_id_paged(store: Store) -> None:
    s = store
    a = s.item()
    ids = _scored(s, a, {"p": 0.3, "q": 0.5, "r": 0.3, "t": 0.9, "u": 0.8, "v": 0.2})
    s.rels.review(s.ws, ids["t"], ReviewStatus.CONFIRMED, by="x")
    s.rels.review(s.ws, ids["u"], ReviewStatus.REJECTED, by="x")
    tied = sorted([ids["p"], ids["r"]])
    expected = [ids["q"], *tied, ids["v"]]
    assert [r.id for r in s.rels.queue(s.ws)] == expected
    assert [r.id for r in s.rels.queue(s.ws, limit=2)] == expected[:2]
    assert [r.id for r in s.rels.queue(s.ws, limit=2, offset=2)] == expected[2:]
    assert s.rels.queue(s.ws, offset=4) == []


def test_list_for_items_takes_either_endpoint_best_first_without_rejected(
    store: Store,
) -> None:
    s = store
    a, b = s.item(), s.item()
    ids = _scored(s, a, {"p": 0.3, "q": 0.5, "r": 0.3, "t": 0.9})
    s.replace(b, [proposal(s.ws, b, a, score=0.4)])
    ba = s.only(a, b).id
    s.rels.review(s.ws, ids["t"], ReviewStatus.REJECTED, by="x")
    s.rels.review(s.ws, ids["q"], ReviewStatus.CONFIRMED, by="x")
    tied = sorted([ids["p"], ids["r"]])
    assert [r.id for r in s.rels.list_for_items(s.ws, [a])] == [ids["q"], ba, *tied]
    assert [r.id for r in s.rels.list_for_items(s.ws, [a], include_rejected=True)] == [
        ids["t"],
        ids["q"],
        ba,
        *tied,
    ]
    assert [r.id for r in s.rels.list_for_items(s.ws, [a], limit=2)] == [ids["q"], ba]
    assert [r.id for r in s.rels.list_for_items(s.ws, [b])] == [ba]  # as the target too
    assert s.rels.list_for_items(s.ws, []) == []


def test_list_for_items_followed_from_keeps_what_search_expands_along(store: Store) -> None:
    """Confirmed and edited ones whatever their score, unreviewed ones from the threshold on,
    never a rejected one: in the query, the same as reading all and keeping ``followed``."""
    s = store
    a, b = s.item(), s.item()
    ids = _scored(s, a, {"weak": 0.1, "edge": 0.3, "strong": 0.8, "no": 0.9, "ok": 0.05})
    s.replace(b, [proposal(s.ws, b, a, score=0.2)])
    ba = s.only(a, b).id
    s.rels.review(s.ws, ids["no"], ReviewStatus.REJECTED, by="x")
    s.rels.review(s.ws, ids["ok"], ReviewStatus.CONFIRMED, by="x")
    s.rels.review(s.ws, ba, ReviewStatus.EDITED, by="x", relationship_type=RelationshipType.UPDATES)
    got = [r.id for r in s.rels.list_for_items(s.ws, [a], followed_from=0.3)]
    assert got == [ids["strong"], ids["edge"], ba, ids["ok"]]
    assert [r.id for r in s.rels.list_for_items(s.ws, [a]) if followed(r)] == [
        ids["strong"],
        ids["edge"],
        ba,
        ids["ok"],
    ]  # with the search's own threshold (0.30): the same rows
    assert [r.id for r in s.rels.list_for_items(s.ws, [b], followed_from=0.9)] == [ba]
    assert [r.id for r in s.rels.list_for_items(s.ws, [a], followed_from=0.3, limit=1)] == [
        ids["strong"]
    ]


def test_delete_for_item_removes_its_relationships_and_their_index(store: Store) -> None:
    s = store
    a, b, c = s.item(), s.item(), s.item()
    s.replace(a, [proposal(s.ws, a, b, entity_keys=("x",))])
    s.replace(c, [proposal(s.ws, c, b, entity_keys=("x",)), proposal(s.ws, c, a)])
    s.rels.review(s.ws, s.only(a, b).id, ReviewStatus.CONFIRMED, by="x")
    assert s.rels.delete_for_item(s.ws, a) == 2  # reviewed or not, as source or target
    assert s.rels.list_for_items(s.ws, [a], include_rejected=True) == []
    assert [r.id for r in s.rels.sharing_entities(s.ws, ["x"])] == [s.only(b, c).id]
    assert s.rows(relationship_entities) == 1
    assert s.rels.delete_for_item(s.ws, a) == 0


def test_deleting_an_item_removes_every_relationship_pointing_at_it(store: Store) -> None:
    s = store
    a, b, c = s.item(), s.item(), s.item()
    s.replace(a, [proposal(s.ws, a, b, entity_keys=("x",)), proposal(s.ws, a, c)])
    s.replace(b, [proposal(s.ws, b, c, entity_keys=("y",))])
    s.rels.review(s.ws, s.only(a, b).id, ReviewStatus.CONFIRMED, by="x")
    s.items.mark_deleted(s.ws, a)
    s.items.delete(s.ws, a)
    assert [
        (r.source_id, r.target_id)
        for r in s.rels.list_for_items(s.ws, [a, b, c], include_rejected=True)
    ] == [tuple(sorted((b, c)))]
    assert s.rows(relationships) == 1 and s.rows(relationship_entities) == 1


def test_rescore_changes_only_unreviewed_relationships(store: Store) -> None:
    s = store
    a = s.item()
    ids = _scored(s, a, {"p": 0.3, "q": 0.5, "r": 0.4, "t": 0.6})
    s.rels.review(s.ws, ids["q"], ReviewStatus.CONFIRMED, by="x")
    s.rels.review(s.ws, ids["t"], ReviewStatus.REJECTED, by="x")
    before = {n: s.rels.get(s.ws, i) for n, i in ids.items()}
    s.clock.advance(5)

    def rescored(name: str) -> Relationship:
        return replace(
            before[name],
            relationship_type=RelationshipType.SIMILAR,
            score=0.13,
            score_version="score-2",
            features={"score_version": "score-2"},
        )

    s.rels.rescore(s.ws, [rescored("p"), rescored("q")], [ids["r"], ids["t"]])
    p = s.rels.get(s.ws, ids["p"])
    assert _values(p) == _values(rescored("p"))
    assert p.evidence == before["p"].evidence and p.updated_at == NOW + timedelta(seconds=5)
    assert s.rels.get(s.ws, ids["q"]) == before["q"]  # reviewed: kept
    assert s.rels.get(s.ws, ids["t"]) == before["t"]  # reviewed: not dropped
    with pytest.raises(NotFound):
        s.rels.get(s.ws, ids["r"])
    s.rels.rescore(s.ws, [], [])  # nothing to do


# ------------------------------------------------------------------ workspaces
def test_another_workspaces_relationships_are_never_read_or_changed(store: Store) -> None:
    s = store
    x, y = s.item(workspace=s.other), s.item(workspace=s.other)
    s.replace(x, [proposal(s.other, x, y, entity_keys=("k",))], workspace=s.other)
    theirs = s.only(x, y, workspace=s.other)
    mine_a, mine_b = s.item(), s.item()
    s.replace(mine_a, [proposal(s.ws, mine_a, mine_b, entity_keys=("k",))])
    mine = s.only(mine_a, mine_b)

    with pytest.raises(NotFound):
        s.rels.get(s.ws, theirs.id)
    with pytest.raises(NotFound):
        s.rels.review(s.ws, theirs.id, ReviewStatus.CONFIRMED, by="x")
    assert s.rels.list_for_items(s.ws, [x, y], include_rejected=True) == []
    assert [r.id for r in s.rels.queue(s.ws)] == [mine.id]
    assert [r.id for r in s.rels.sharing_entities(s.ws, ["k"])] == [mine.id]
    assert s.rels.delete_for_item(s.ws, x) == 0
    s.rels.rescore(s.ws, [], [theirs.id])
    with pytest.raises(MissingWorkspace):
        s.rels.rescore(s.ws, [replace(theirs, score=0.9)], [])
    # Their item in my unit of work is not found, their drop keys are not mine to drop.
    with pytest.raises(NotFound):
        s.replace(x, [])
    assert s.replace(mine_a, [], (theirs.dedupe_key,)) == 0
    assert s.only(x, y, workspace=s.other) == theirs
    assert [r.id for r in s.rels.sharing_entities(s.other, ["k"])] == [theirs.id]


def test_every_call_without_a_workspace_is_refused(store: Store) -> None:
    s = store
    a, b = s.item(), s.item()
    s.replace(a, [proposal(s.ws, a, b)])
    rel = s.only(a, b)
    for blank in ("", "  "):
        calls: dict[str, Callable[[], object]] = {
            "upsert_by_dedupe_key": lambda: s.rels.upsert_by_dedupe_key(
                replace(rel, workspace_id=blank)  # noqa: B023
            ),
            "get": lambda: s.rels.get(blank, rel.id),  # noqa: B023
            "list_for_items": lambda: s.rels.list_for_items(blank, [a]),  # noqa: B023
            "list_for_items([])": lambda: s.rels.list_for_items(blank, []),  # noqa: B023
            "queue": lambda: s.rels.queue(blank),  # noqa: B023
            "review": lambda: s.rels.review(
                blank,  # noqa: B023
                rel.id,
                ReviewStatus.CONFIRMED,
                by="x",
            ),
            "delete_for_item": lambda: s.rels.delete_for_item(blank, a),  # noqa: B023
            "sharing_entities": lambda: s.rels.sharing_entities(blank, ["k"]),  # noqa: B023
            "sharing_entities([])": lambda: s.rels.sharing_entities(blank, []),  # noqa: B023
            "rescore": lambda: s.rels.rescore(blank, [], [rel.id]),  # noqa: B023
            "find_named": lambda: s.items.find_named(blank, titles=["x"]),  # noqa: B023
            "find_named()": lambda: s.items.find_named(blank),  # noqa: B023
        }
        raised: dict[str, type[RelataError] | None] = {}
        for name, call in calls.items():
            try:
                call()
                raised[name] = None
            except RelataError as exc:
                raised[name] = type(exc)
        assert raised == dict.fromkeys(calls, MissingWorkspace), repr(blank)
    assert s.only(a, b) == rel


# ------------------------------------------------------------------ find_named
@dataclass(frozen=True, slots=True)
class Named:
    items: ItemRepository
    create: Callable[..., str]
    ws: str
    other: str


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def named(request: pytest.FixtureRequest) -> Named:
    if request.param == "memory":
        repo: ItemRepository = MemoryRepositories.build(ManualClock(NOW)).items
        ws, other = new_id(), new_id()
    else:
        s = _store(request.getfixturevalue(f"{request.param}_db"))
        repo, ws, other = s.items, s.ws, s.other

    def create(title: str, *, workspace: str | None = None, **kw: Any) -> str:
        body = new_id()
        item = Item(
            id=new_id(),
            workspace_id=workspace or ws,
            title=title,
            source_type=SourceType.TEXT,
            content_hash=content_hash(body),
            size_bytes=len(body),
            ingested_at=kw.pop("ingested_at", NOW),
            text=body,
            **kw,
        )
        return repo.create(item).id

    return Named(repo, create, ws, other)


def _ids(found: list[Item]) -> list[str]:
    return [i.id for i in found]


def test_find_named_matches_titles_by_key_and_file_names_exactly(named: Named) -> None:
    n = named
    later = NOW + timedelta(days=1)
    report = n.create("The  Annual\tREPORT", ingested_at=later)
    report2 = n.create("the annual report")
    minutes = n.create(
        "Minutes", original_filename="minutes-2026.pdf", ingested_at=NOW + timedelta(seconds=1)
    )
    n.create("Annual report 2025", original_filename="Minutes-2026.pdf")
    found = n.items.find_named(n.ws, titles=["  the ANNUAL report "])
    assert _ids(found) == [report2, report]  # oldest first
    assert all(i.text is None for i in found)
    assert _ids(n.items.find_named(n.ws, filenames=["minutes-2026.pdf"])) == [minutes]
    assert _ids(n.items.find_named(n.ws, titles=["minutes"], filenames=["minutes-2026.pdf"])) == [
        minutes
    ]
    assert _ids(
        n.items.find_named(n.ws, titles=["the annual report"], filenames=["minutes-2026.pdf"])
    ) == [report2, minutes, report]
    assert n.items.find_named(n.ws, titles=["annual"], filenames=["MINUTES-2026.PDF"]) == []
    assert n.items.find_named(n.ws, titles=["", "  "], filenames=[""]) == []
    assert n.items.find_named(n.ws) == []


def test_find_named_excludes_an_item_the_dead_and_other_workspaces_and_is_limited(
    named: Named,
) -> None:
    n = named
    ids = [n.create("Board minutes", ingested_at=NOW + timedelta(seconds=i)) for i in range(4)]
    gone = n.create("Board minutes", original_filename="b.txt", ingested_at=NOW)
    n.items.mark_deleted(n.ws, gone)
    n.create("Board minutes", workspace=n.other, original_filename="b.txt")
    assert _ids(n.items.find_named(n.ws, titles=["board minutes"], filenames=["b.txt"])) == ids
    assert _ids(n.items.find_named(n.ws, titles=["board minutes"], exclude_item=ids[0])) == ids[1:]
    assert _ids(n.items.find_named(n.ws, titles=["board minutes"], limit=2)) == ids[:2]
    assert n.items.find_named(n.ws, filenames=["b.txt"]) == []


def test_every_title_write_keeps_the_title_key(store: Store) -> None:
    s = store

    def item(title: str) -> Item:
        body = new_id()
        return Item(
            id=new_id(),
            workspace_id=s.ws,
            title=title,
            source_type=SourceType.TEXT,
            content_hash=content_hash(body),
            size_bytes=len(body),
            ingested_at=NOW,
        )

    one, two = item("Field  Notes"), item("FIELD notes")
    s.items.create_many([one, two])
    draft = s.items.create(item("draft.txt"))
    with s.uow.begin(s.ws) as tx:
        tx.store_parsed(draft.id, text="x", structure={}, title="Field Notes")
        tx.set_item_status(draft.id, ItemStatus.READY)
    assert set(_ids(s.items.find_named(s.ws, titles=["field notes"]))) == {
        one.id,
        two.id,
        draft.id,
    }
    assert s.items.find_named(s.ws, titles=["draft.txt"]) == []
    with s.uow.begin(s.ws) as tx:  # parsing without a title keeps the one there is
        tx.store_parsed(draft.id, text="y", structure={}, title=None)
    assert draft.id in _ids(s.items.find_named(s.ws, titles=["field notes"]))


def test_find_named_reads_the_indexes_on_sqlite(sqlite_db: Database) -> None:
    """Each lookup searches its index; none walks the workspace's items (in any index)."""
    repo = SqlItemRepository(sqlite_db)
    captured: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, *args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            captured.append((statement, parameters))

    sa.event.listen(sqlite_db.engine, "before_cursor_execute", capture)
    try:
        repo.find_named(new_id(), titles=["a", "b"], filenames=["c.pdf"], exclude_item="x")
    finally:
        sa.event.remove(sqlite_db.engine, "before_cursor_execute", capture)
    assert captured
    details: list[str] = []
    with sqlite_db.read() as conn:
        for sql, parameters in captured:
            details += [r[3] for r in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", parameters)]
    searches = [d for d in details if d.startswith(("SEARCH items", "SCAN items"))]
    assert sorted(searches) == [
        "SEARCH items USING INDEX ix_items_workspace_id_original_filename"
        " (workspace_id=? AND original_filename=?)",
        "SEARCH items USING INDEX ix_items_workspace_id_title_key (workspace_id=? AND title_key=?)",
    ], details
