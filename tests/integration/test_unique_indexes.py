"""The unique and partial unique indexes of the data model are enforced, on both dialects."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from relata.domain.errors import DuplicateItem, DuplicateKey
from relata.domain.models import (
    Item,
    ItemStatus,
    Relationship,
    ReviewStatus,
    SourceType,
    User,
    Workspace,
)
from relata.ids import content_hash, dedupe_key, new_id
from relata.storage.sql.accounts import SqlUserRepository, SqlWorkspaceRepository
from relata.storage.sql.engine import Database
from relata.storage.sql.entities import upsert_entity
from relata.storage.sql.errors import translate
from relata.storage.sql.items import SqlItemRepository
from relata.storage.sql.knowledge import SqlRelationshipRepository
from relata.storage.sql.records import SqlModelVersionRepository
from relata.storage.sql.tables import entities, jobs, sessions, users

pytestmark = pytest.mark.both_dialects

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def _workspace(db: Database, slug: str = "w1") -> str:
    ws = Workspace(id=new_id(), slug=slug, name=slug, created_at=NOW)
    SqlWorkspaceRepository(db).create(ws)
    return ws.id


def _item(ws: str, data: str, **kw: object) -> Item:
    return Item(
        id=new_id(),
        workspace_id=ws,
        title="t",
        source_type=SourceType.TEXT,
        content_hash=content_hash(data),
        size_bytes=len(data),
        ingested_at=NOW,
        status=ItemStatus.PENDING,
        **kw,  # type: ignore[arg-type]
    )


def test_concurrent_inserts_of_the_same_entity_key_give_one_row(db: Database) -> None:
    ws = _workspace(db)
    barrier = threading.Barrier(8)
    results: list[str] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            barrier.wait()
            with db.write() as conn:
                results.append(
                    upsert_entity(
                        conn, db.dialect, ws, "organisation", "acme corp", "Acme Corp", NOW
                    )
                )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(set(results)) == 1
    with db.read() as conn:
        rows = conn.execute(sa.select(entities).where(entities.c.workspace_id == ws)).all()
    assert len(rows) == 1
    # The same name with another type is another entity.
    with db.write() as conn:
        other = upsert_entity(conn, db.dialect, ws, "location", "acme corp", "Acme Corp", NOW)
    assert other != results[0]


def _job(key: str, status: str) -> dict[str, object]:
    return {
        "id": new_id(),
        "kind": "parse_item",
        "payload": {},
        "status": status,
        "run_after": NOW,
        "max_attempts": 3,
        "idempotency_key": key,
        "created_at": NOW,
    }


def test_second_pending_job_with_same_key_is_refused_but_completed_ones_are_history(
    db: Database,
) -> None:
    with db.write() as conn:
        conn.execute(jobs.insert().values(**_job("k1", "succeeded")))
        conn.execute(jobs.insert().values(**_job("k1", "failed")))
        conn.execute(jobs.insert().values(**_job("k1", "pending")))
    with pytest.raises(sa.exc.IntegrityError) as info, db.write() as conn:
        conn.execute(jobs.insert().values(**_job("k1", "pending")))
    err = translate(info.value)
    assert isinstance(err, DuplicateKey)
    assert err.constraint == "uq_jobs_pending_idempotency_key"
    # A later completed job with the same key is still allowed.
    with db.write() as conn:
        conn.execute(jobs.insert().values(**_job("k1", "succeeded")))


def test_second_live_item_with_same_content_hash_is_refused(db: Database) -> None:
    ws = _workspace(db)
    repo = SqlItemRepository(db)
    first = repo.create(_item(ws, "same bytes"))
    with pytest.raises(DuplicateItem) as info:
        repo.create(_item(ws, "same bytes"))
    assert info.value.existing_id == first.id
    # A deliberate copy is allowed, and another workspace is independent.
    repo.create(_item(ws, "same bytes", deliberate_duplicate=True))
    other = _workspace(db, "w2")
    repo.create(_item(other, "same bytes"))
    # Once the first is deleted, the bytes may be uploaded again.
    repo.delete(ws, first.id)
    repo.create(_item(ws, "same bytes"))


def test_concurrent_uploads_of_the_same_bytes_create_one_item(db: Database) -> None:
    ws = _workspace(db)
    repo = SqlItemRepository(db)
    barrier = threading.Barrier(6)
    outcomes: list[str] = []

    def worker() -> None:
        barrier.wait()
        try:
            repo.create(_item(ws, "racing bytes"))
            outcomes.append("created")
        except DuplicateItem:
            outcomes.append("duplicate")

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["created"] + ["duplicate"] * 5
    assert repo.count(ws) == 1


def test_oauth_identity_is_unique(db: Database) -> None:
    repo = SqlUserRepository(db)

    def user(name: str, provider: str | None, subject: str | None) -> User:
        return User(
            id=new_id(),
            username=name,
            password_hash=None,
            display_name=name,
            is_admin=False,
            created_at=NOW,
            oauth_provider=provider,
            oauth_subject=subject,
        )

    repo.create(user("a", "github", "42"))
    repo.create(user("b", None, None))
    repo.create(user("c", None, None))  # local users have no identity: not constrained
    with pytest.raises(DuplicateKey) as info:
        repo.create(user("d", "github", "42"))
    assert info.value.constraint == "uq_users_oauth_identity"
    with db.read() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(users)).scalar_one() == 3


def test_session_token_hash_is_unique(db: Database) -> None:
    ws = _workspace(db)
    uid = new_id()
    SqlUserRepository(db).create(
        User(
            id=uid,
            username="u",
            password_hash=None,
            display_name="u",
            is_admin=False,
            created_at=NOW,
        )
    )
    row = {
        "user_id": uid,
        "workspace_id": ws,
        "token_hash": "h" * 64,
        "created_at": NOW,
        "last_seen_at": NOW,
        "idle_expiry": NOW,
        "absolute_expiry": NOW,
    }
    with db.write() as conn:
        conn.execute(sessions.insert().values(id=new_id(), **row))
    with pytest.raises(sa.exc.IntegrityError) as info, db.write() as conn:
        conn.execute(sessions.insert().values(id=new_id(), **row))
    assert isinstance(translate(info.value), DuplicateKey)


def test_model_versions_are_one_row_per_workspace_kind_name(db: Database) -> None:
    ws = _workspace(db)
    repo = SqlModelVersionRepository(db)
    repo.record_seen(ws, "embedding", "minilm", 384, NOW)
    later = datetime(2026, 6, 1, tzinfo=UTC)
    mv = repo.record_seen(ws, "embedding", "minilm", 384, later)
    assert mv.first_seen_at == NOW and mv.last_seen_at == later
    assert len(repo.list(ws)) == 1


def test_relationship_upsert_never_overwrites_a_human_decision(db: Database) -> None:
    ws = _workspace(db)
    repo = SqlRelationshipRepository(db)
    a, b = (SqlItemRepository(db).create(_item(ws, data)).id for data in ("a", "b"))
    key = dedupe_key("relationship", a, b)

    def rel(score: float, rtype: str, evidence: str) -> Relationship:
        return Relationship(
            id=new_id(),
            workspace_id=ws,
            source_id=a,
            target_id=b,
            relationship_type=rtype,
            score=score,
            score_version="v1",
            dedupe_key=key,
            created_at=NOW,
            evidence=({"quote": evidence},),
        )

    first = repo.upsert_by_dedupe_key(rel(0.5, "similar", "e1"))
    again = repo.upsert_by_dedupe_key(rel(0.7, "supports", "e2"))
    assert again.id == first.id and again.score == 0.7 and again.relationship_type == "supports"
    repo.review(ws, first.id, ReviewStatus.CONFIRMED, by="alice")
    after = repo.upsert_by_dedupe_key(rel(0.1, "contradicts", "e3"))
    assert after.review_status == ReviewStatus.CONFIRMED
    assert after.score == 0.7 and after.relationship_type == "supports"
    assert after.evidence == ({"quote": "e3"},)  # only the evidence is refreshed
