"""Invitations on SQLite and PostgreSQL, through the API as signed-in people (and the service
where a race or the clock is the point): an invitation makes nobody a member until its holder
accepts; a code works once, until it expires or is revoked, and every code that cannot be used
gets one answer; a member already is told so and the code stays usable; only owners invite,
list and revoke, and another workspace's invitation is not found; the code is never stored,
logged or audited. Enumeration probes: creating a workspace and naming a member answer alike
for existing and unknown usernames and slugs (docs/decisions/0028-workspace-invitations.md)."""

from __future__ import annotations

import logging
import re
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from relata.auth.invitations import ALREADY_MEMBER, MAX_LIVE, NOT_VALID
from relata.auth.members import SLUG_TAKEN
from relata.bootstrap import Container, build
from relata.config.settings import Settings
from relata.domain.clock import ManualClock
from relata.domain.errors import NotFound
from relata.domain.models import CLI_ACTOR, Actor
from relata.domain.vocabulary import ActorKind, AuditAction, Role
from relata.ids import new_prefixed_secret
from relata.storage.sql import migrate
from relata.workspaces import private_slug
from tests.support.api import make_token
from tests.support.people import Person, error_of, join

pytestmark = pytest.mark.both_dialects

START = datetime(2027, 3, 1, 9, 0, tzinfo=UTC)
CODE = re.compile(r"ri_([0-9a-f]{8})_[A-Za-z0-9_-]{43}")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def c(settings: Settings, clock: ManualClock) -> Iterator[Container]:
    container = build(settings.replace(embedding_provider="none"), clock=clock)
    migrate.upgrade(container.db)
    container.workspaces.ensure(settings.default_workspace)
    try:
        yield container
    finally:
        container.close()


@pytest.fixture
def people(c: Container) -> Iterator[dict[str, Person]]:
    """olive owns ``shared``; everyone has a private workspace with a random slug."""
    found = {n: Person(c, n, home=private_slug()) for n in ("olive", "eddie", "nina")}
    r = found["olive"].post("/api/v1/workspaces", json={"slug": "shared", "name": "Shared"})
    assert r.status_code == 201, r.text
    try:
        yield found
    finally:
        for p in found.values():
            p.client.close()


def _invite(owner: Person, role: str = "editor", **extra: Any) -> dict[str, Any]:
    r = owner.post("/api/v1/workspaces/shared/invitations", json={"role": role, **extra})
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


def _accept(who: Person, code: str) -> Any:
    return who.post("/api/v1/invitations/accept", json={"code": code})


def _members(c: Container, slug: str = "shared") -> dict[str, Role]:
    return {m.username: m.role for m in c.members.members(c.workspaces.resolve(slug).id)}


def _masked(r: Any) -> tuple[int, Any]:
    body = r.json()
    body["error"].pop("request_id", None)
    return r.status_code, body


# ---------------------------------------------------------------- the way in
def test_an_invitation_makes_nobody_a_member_until_accepted(
    c: Container, people: dict[str, Person]
) -> None:
    olive, nina = people["olive"], people["nina"]
    made = _invite(olive, "editor", expires_in_days=3)
    code = made["code"]
    m = CODE.fullmatch(code)
    assert m and m.group(1) == made["prefix"]
    assert made["accept_url"] == f"http://localhost/invitations?code={code}"
    assert (made["role"], made["created_by"]) == ("editor", "olive")
    assert datetime.fromisoformat(made["expires_at"]) == START + timedelta(days=3)

    # Pending: nina is no member, cannot see the workspace, and the owner's list has no code.
    assert _members(c) == {"olive": Role.OWNER}
    assert "shared" not in [w["slug"] for w in nina.get("/api/v1/workspaces").json()]
    assert nina.get("/api/v1/items", headers={"X-Relata-Workspace": "shared"}).status_code == 404
    listed = olive.get("/api/v1/workspaces/shared/invitations")
    assert listed.status_code == 200
    assert [(i["id"], i["prefix"], i["role"], i["created_by"]) for i in listed.json()] == [
        (made["id"], made["prefix"], "editor", "olive")
    ]
    assert "code" not in listed.json()[0] and code not in listed.text

    accepted = _accept(nina, code)
    assert accepted.status_code == 200, accepted.text
    assert (accepted.json()["slug"], accepted.json()["role"]) == ("shared", "editor")
    assert _members(c) == {"olive": Role.OWNER, "nina": Role.EDITOR}
    assert nina.get("/api/v1/items", headers={"X-Relata-Workspace": "shared"}).status_code == 200
    assert olive.get("/api/v1/workspaces/shared/invitations").json() == []


def test_a_code_works_once_even_when_two_people_race_for_it(
    c: Container, people: dict[str, Person]
) -> None:
    code = _invite(people["olive"], "viewer")["code"]
    takers = [people["eddie"].user, people["nina"].user]
    barrier = threading.Barrier(len(takers))
    outcomes: list[str] = []

    def take(user_id: str) -> None:
        barrier.wait()
        try:
            c.invitations.accept(code, user_id, actor=Actor(ActorKind.USER, user_id=user_id))
            outcomes.append("joined")
        except NotFound as exc:
            outcomes.append(exc.message)

    threads = [threading.Thread(target=take, args=(u.id,)) for u in takers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(outcomes) == sorted(["joined", NOT_VALID])
    assert len(_members(c)) == 2  # olive and exactly one of them
    assert error_of(_accept(people["eddie"], code)) == (404, "not_found", NOT_VALID)


def test_every_code_that_cannot_be_used_gets_one_answer(
    c: Container, people: dict[str, Person], clock: ManualClock
) -> None:
    olive, eddie, nina = people["olive"], people["eddie"], people["nina"]
    expired = _invite(olive, "owner", expires_in_days=1)["code"]
    clock.advance(timedelta(days=1).total_seconds())  # exactly at its expiry: no longer valid
    for p in people.values():
        p.sign_in()  # the sessions have ended meanwhile
    used = _invite(olive)["code"]
    assert _accept(eddie, used).status_code == 200
    declined = _invite(olive)["code"]
    assert eddie.post("/api/v1/invitations/decline", json={"code": declined}).status_code == 204
    revoked = _invite(olive)
    assert olive.delete(f"/api/v1/workspaces/shared/invitations/{revoked['id']}").status_code == 204
    unknown, _ = new_prefixed_secret("ri")
    token_shaped, _ = new_prefixed_secret("rl")
    codes = [expired, used, declined, revoked["code"], unknown, token_shaped, "hello", " "]
    events_before = len(c.audit.list(c.workspaces.resolve("shared").id))

    answers = set()
    for code in codes:
        for action in ("accept", "decline"):
            r = nina.post(f"/api/v1/invitations/{action}", json={"code": code})
            assert error_of(r) == (404, "not_found", NOT_VALID), (code, action, r.text)
            answers.add(repr(_masked(r)))
    assert len(answers) == 1
    assert _members(c) == {"olive": Role.OWNER, "eddie": Role.EDITOR}
    assert len(c.audit.list(c.workspaces.resolve("shared").id)) == events_before


def test_an_invitation_expires_to_the_second(
    c: Container, people: dict[str, Person], clock: ManualClock
) -> None:
    code = _invite(people["olive"], "viewer", expires_in_days=1)["code"]
    nina = people["nina"].user
    clock.advance(timedelta(days=1).total_seconds() - 1)
    assert c.invitations.preview(code, nina.id).workspace.slug == "shared"
    clock.advance(1)
    with pytest.raises(NotFound) as refused:
        c.invitations.accept(code, nina.id, actor=Actor(ActorKind.USER, user_id=nina.id))
    assert refused.value.message == NOT_VALID
    assert c.invitations.live(c.workspaces.resolve("shared").id) == []
    assert _members(c) == {"olive": Role.OWNER}


def test_declining_uses_the_code_up_and_joins_nobody(
    c: Container, people: dict[str, Person]
) -> None:
    olive, nina = people["olive"], people["nina"]
    made = _invite(olive)
    assert nina.post("/api/v1/invitations/decline", json={"code": made["code"]}).status_code == 204
    assert _members(c) == {"olive": Role.OWNER}
    assert error_of(_accept(nina, made["code"]))[:2] == (404, "not_found")
    [event] = c.audit.list(
        c.workspaces.resolve("shared").id, action=AuditAction.INVITATION_DECLINED
    )
    assert (event.target_id, event.actor_user_id) == (made["id"], nina.user.id)


def test_a_member_who_accepts_is_told_so_and_the_code_stays_usable(
    c: Container, people: dict[str, Person]
) -> None:
    olive, nina = people["olive"], people["nina"]
    made = _invite(olive, "viewer")
    assert error_of(_accept(olive, made["code"])) == (409, "already_member", ALREADY_MEMBER)
    assert _members(c) == {"olive": Role.OWNER}  # not demoted to viewer either
    assert [i["id"] for i in olive.get("/api/v1/workspaces/shared/invitations").json()] == [
        made["id"]
    ]
    assert _accept(nina, made["code"]).status_code == 200
    assert _members(c)["nina"] is Role.VIEWER


# ---------------------------------------------------------------- owners only
def test_an_owner_revokes_a_pending_invitation(c: Container, people: dict[str, Person]) -> None:
    olive, nina = people["olive"], people["nina"]
    made = _invite(olive)
    path = f"/api/v1/workspaces/shared/invitations/{made['id']}"
    assert olive.delete(path).status_code == 204
    assert olive.get("/api/v1/workspaces/shared/invitations").json() == []
    assert error_of(_accept(nina, made["code"])) == (404, "not_found", NOT_VALID)
    assert error_of(olive.delete(path))[:2] == (404, "not_found")  # once
    events = c.audit.list(c.workspaces.resolve("shared").id, action=AuditAction.INVITATION_REVOKED)
    assert [(e.target_id, e.actor_user_id) for e in events] == [(made["id"], olive.user.id)]


def test_a_viewer_or_editor_cannot_invite_list_or_revoke(
    c: Container, people: dict[str, Person]
) -> None:
    olive, eddie, nina = people["olive"], people["eddie"], people["nina"]
    join(olive, eddie, "shared", "editor")
    join(olive, nina, "shared", "viewer")
    pending = _invite(olive, "viewer")
    base = "/api/v1/workspaces/shared/invitations"
    for who in (eddie, nina):
        for r in (
            who.post(base, json={"role": "viewer"}),
            who.post(base, json={"role": "owner"}),
            who.get(base),
            who.delete(f"{base}/{pending['id']}"),
        ):
            assert error_of(r)[:2] == (403, "forbidden"), r.text
    assert [i.id for i in c.invitations.live(c.workspaces.resolve("shared").id)] == [pending["id"]]


def test_another_workspaces_invitation_ids_answer_not_found(
    c: Container, people: dict[str, Person]
) -> None:
    olive, nina = people["olive"], people["nina"]
    made = _invite(olive)
    own = nina.home.slug  # nina owns it; the invitation is shared's
    theirs = nina.delete(f"/api/v1/workspaces/{own}/invitations/{made['id']}")
    nothing = nina.delete(f"/api/v1/workspaces/{own}/invitations/{uuid.uuid4()}")
    assert _masked(theirs) == _masked(nothing)
    assert error_of(theirs)[:2] == (404, "not_found")
    # shared itself is not nina's: exactly like a workspace that does not exist.
    cross = nina.delete(f"/api/v1/workspaces/shared/invitations/{made['id']}")
    missing = nina.delete(f"/api/v1/workspaces/nowhere/invitations/{made['id']}")
    assert error_of(cross)[:2] == error_of(missing)[:2] == (404, "not_found")
    assert nina.get("/api/v1/workspaces/shared/invitations").status_code == 404
    assert [i.id for i in c.invitations.live(c.workspaces.resolve("shared").id)] == [made["id"]]


def test_an_api_token_cannot_answer_an_invitation(c: Container, people: dict[str, Person]) -> None:
    nina = people["nina"]
    made = _invite(people["olive"])
    secret = make_token(c, nina.user, workspace=nina.home)
    r = nina.post(
        "/api/v1/invitations/accept",
        json={"code": made["code"]},
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert error_of(r)[:2] == (403, "forbidden")
    assert _members(c) == {"olive": Role.OWNER}


def test_expiry_and_the_number_pending_are_bounded(c: Container, people: dict[str, Person]) -> None:
    olive = people["olive"]
    base = "/api/v1/workspaces/shared/invitations"
    for days in (0, 31, -1, "soon", 10**30):
        r = olive.post(base, json={"role": "viewer", "expires_in_days": days})
        assert r.status_code == 400, (days, r.text)
        assert r.json()["error"]["field"] == "expires_in_days"
    shared = c.workspaces.resolve("shared").id
    for _ in range(MAX_LIVE):
        c.invitations.create(shared, Role.VIEWER, created_by=None, actor=CLI_ACTOR)
    r = olive.post(base, json={"role": "viewer"})
    assert error_of(r)[:2] == (409, "too_many_invitations")
    assert len(c.invitations.live(shared)) == MAX_LIVE


# ---------------------------------------------------------------- secrets
def test_the_code_is_never_stored_logged_or_audited(
    c: Container, people: dict[str, Person], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    olive, eddie, nina = people["olive"], people["eddie"], people["nina"]
    made = [_invite(olive, role) for role in ("editor", "viewer", "owner")]
    assert _accept(eddie, made[0]["code"]).status_code == 200
    assert (
        nina.post("/api/v1/invitations/decline", json={"code": made[1]["code"]}).status_code == 204
    )
    assert olive.delete(f"/api/v1/workspaces/shared/invitations/{made[2]['id']}").status_code == 204
    _accept(nina, made[0]["code"])  # refused: used
    with c.db.read() as conn:
        rows = conn.execute(sa.text("SELECT * FROM invitations")).all()
        events = conn.execute(sa.text("SELECT * FROM audit_events")).all()
    stored, audited = repr(rows), repr(events)
    for m in made:
        code = m["code"]
        secret_part = code.split("_", 2)[2]
        assert code not in stored and secret_part not in stored
        assert code not in audited and secret_part not in audited
        assert code not in caplog.text and secret_part not in caplog.text
    shared = c.workspaces.resolve("shared").id
    # The clock stands still here, so the events share one instant: compare them as a set.
    got = {
        (e.action, e.target_kind, e.target_id)
        for e in c.audit.list(shared)
        if e.action.startswith("invitation.")
    }
    ids = [m["id"] for m in made]
    assert got == {
        ("invitation.created", "invitation", ids[0]),
        ("invitation.created", "invitation", ids[1]),
        ("invitation.created", "invitation", ids[2]),
        ("invitation.accepted", "invitation", ids[0]),
        ("invitation.declined", "invitation", ids[1]),
        ("invitation.revoked", "invitation", ids[2]),
    }
    [joined] = [
        e
        for e in c.audit.list(shared, action=AuditAction.MEMBER_ADDED)
        if e.actor_user_id == eddie.user.id
    ]
    assert (joined.target_id, joined.details) == (
        eddie.user.id,
        {"role": "editor", "invitation_id": ids[0]},
    )


# ---------------------------------------------------------------- enumeration probes
def test_creating_a_workspace_tells_nothing_of_usernames_or_of_whose_a_slug_is(
    c: Container, people: dict[str, Person]
) -> None:
    olive, nina = people["olive"], people["nina"]
    alice = Person(c, "alice", home=private_slug())
    try:
        # No slug is made from a username: "alice" is as free as a name nobody has.
        tag = uuid.uuid4().hex[:8]
        made = [nina.post("/api/v1/workspaces", json={"slug": s}) for s in ("alice", f"zz-{tag}")]
        assert [r.status_code for r in made] == [201, 201]
        assert set(made[0].json()) == set(made[1].json())
        # A taken slug: one answer whoever holds it (the caller, another user's private
        # workspace, a workspace the caller is not in), naming no one.
        taken = [
            olive.post("/api/v1/workspaces", json={"slug": "shared"}),  # her own
            nina.post("/api/v1/workspaces", json={"slug": "shared"}),  # olive's
            nina.post("/api/v1/workspaces", json={"slug": alice.home.slug}),  # alice's private
            alice.post("/api/v1/workspaces", json={"slug": "alice"}),  # nina's, named "alice"
        ]
        assert {repr(_masked(r)) for r in taken} == {
            repr((409, {"error": {"code": "duplicate_key", "message": SLUG_TAKEN}}))
        }
        assert len({r.headers["content-length"] for r in taken}) == 1
    finally:
        alice.client.close()


def test_naming_a_member_answers_alike_for_a_user_and_for_nobody(
    c: Container, people: dict[str, Person]
) -> None:
    olive = people["olive"]
    base = "/api/v1/workspaces/shared/members"
    for method, body in (("PATCH", {"role": "viewer"}), ("DELETE", None)):
        answers = [
            olive.request(method, f"{base}/{name}", json=body)
            for name in ("nina", f"nobody-{uuid.uuid4().hex[:8]}")
        ]
        assert {repr(_masked(r)) for r in answers} == {
            repr(
                (404, {"error": {"code": "not_found", "message": "not a member of this workspace"}})
            )
        }
