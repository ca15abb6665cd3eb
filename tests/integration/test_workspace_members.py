"""Workspaces and members on SQLite and PostgreSQL, through the API as signed-in people:
creating a workspace makes its creator owner, owners invite editors and viewers who accept, a
viewer cannot write, a non-member sees 404 exactly as for a missing workspace, a member who
is not owner gets 403, the last owner can be neither demoted nor removed, removing a member
stops their token at once, and every change leaves one audit event naming the actor.
Invitations themselves: ``test_invitations``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from relata.auth.members import NOT_A_MEMBER, SLUG_TAKEN
from relata.bootstrap import Container, build
from relata.config.settings import Settings
from relata.domain.vocabulary import ActorKind, AuditAction, Role
from relata.storage.sql import migrate
from tests.support.api import anonymous_client, make_token, make_user
from tests.support.passwords import TEST_HASHER
from tests.support.people import Person, error_of, join

pytestmark = pytest.mark.both_dialects


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    container = build(settings.replace(embedding_provider="none"), password_hasher=TEST_HASHER)
    migrate.upgrade(container.db)
    container.workspaces.ensure(settings.default_workspace)
    try:
        yield container
    finally:
        container.close()


@pytest.fixture
def people(c: Container) -> Iterator[dict[str, Person]]:
    found = {name: Person(c, name) for name in ("olive", "eddie", "vera", "nina")}
    try:
        yield found
    finally:
        for p in found.values():
            p.client.close()


def _shared(olive: Person, eddie: Person, vera: Person) -> None:
    r = olive.post("/api/v1/workspaces", json={"slug": "shared", "name": "Shared notes"})
    assert r.status_code == 201, r.text
    assert r.json()["role"] == "owner" and r.json()["name"] == "Shared notes"
    join(olive, eddie, "shared", "editor")
    join(olive, vera, "shared", "viewer")


def test_the_creator_owns_a_new_workspace_and_lists_it_with_the_role(
    c: Container, people: dict[str, Person]
) -> None:
    olive, eddie, vera = people["olive"], people["eddie"], people["vera"]
    _shared(olive, eddie, vera)
    mine = {w["slug"]: w["role"] for w in olive.get("/api/v1/workspaces").json()}
    assert mine == {"olive": "owner", "shared": "owner"}
    theirs = {w["slug"]: w["role"] for w in vera.get("/api/v1/workspaces").json()}
    assert theirs == {"vera": "owner", "shared": "viewer"}
    members = olive.get("/api/v1/workspaces/shared/members").json()
    assert [(m["username"], m["role"]) for m in members] == [
        ("eddie", "editor"),
        ("olive", "owner"),
        ("vera", "viewer"),
    ]
    assert all("password" not in str(m) and "hash" not in str(m) for m in members)


def test_a_taken_or_invalid_slug_is_refused(c: Container, people: dict[str, Person]) -> None:
    olive = people["olive"]
    assert olive.post("/api/v1/workspaces", json={"slug": "team"}).status_code == 201
    r = olive.post("/api/v1/workspaces", json={"slug": "team"})
    assert r.status_code == 409, r.text
    theirs = people["nina"].post("/api/v1/workspaces", json={"slug": "team"})
    assert theirs.status_code == 409
    # One answer whoever holds the slug (the caller or someone else), naming no one.
    assert error_of(r) == error_of(theirs) == (409, "duplicate_key", SLUG_TAKEN)
    for bad in ("Team", "-team", "a b", "x" * 64, ""):
        r = olive.post("/api/v1/workspaces", json={"slug": bad})
        assert r.status_code == 400, (bad, r.text)
        assert r.json()["error"]["field"] == "slug"
    assert [w.slug for w in c.repos.workspaces.list()].count("team") == 1


def test_an_api_token_cannot_create_a_workspace(c: Container) -> None:
    user = make_user(c, username="tok")
    with anonymous_client(c) as client:
        client.headers["Authorization"] = f"Bearer {make_token(c, user)}"
        r = client.post("/api/v1/workspaces", json={"slug": "by-token"})
        assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
        assert [w["slug"] for w in client.get("/api/v1/workspaces").json()] == ["default"]
    assert "by-token" not in [w.slug for w in c.repos.workspaces.list()]


def test_an_editor_writes_a_viewer_reads_and_neither_manages_members(
    c: Container, people: dict[str, Person]
) -> None:
    olive, eddie, vera = people["olive"], people["eddie"], people["vera"]
    _shared(olive, eddie, vera)
    here = {"X-Relata-Workspace": "shared"}
    note = {"text": "Herons nest in colonies.", "title": "Herons"}
    r = eddie.post("/api/v1/items", json=note, headers=here)
    assert r.status_code == 201, r.text
    r = vera.post("/api/v1/items", json={"text": "Other.", "title": "x"}, headers=here)
    assert error_of(r)[:2] == (403, "forbidden")
    assert len(vera.get("/api/v1/items", headers=here).json()["items"]) == 1
    shared = c.workspaces.resolve("shared")
    assert len(c.repos.items.list(shared.id, limit=10)) == 1
    for who in (eddie, vera):
        assert error_of(who.get("/api/v1/workspaces/shared/members"))[:2] == (403, "forbidden")
        r = who.post("/api/v1/workspaces/shared/invitations", json={"role": "owner"})
        assert error_of(r)[:2] == (403, "forbidden")
        r = who.patch(
            f"/api/v1/workspaces/shared/members/{who.user.username}", json={"role": "owner"}
        )
        assert error_of(r)[:2] == (403, "forbidden")
        assert error_of(who.delete("/api/v1/workspaces/shared/members/olive"))[:2] == (
            403,
            "forbidden",
        )
    assert {m.username: m.role for m in c.members.members(shared.id)} == {
        "olive": Role.OWNER,
        "eddie": Role.EDITOR,
        "vera": Role.VIEWER,
    }


def test_a_non_member_gets_exactly_the_answer_for_a_missing_workspace(
    c: Container, people: dict[str, Person]
) -> None:
    olive, eddie, vera, nina = (people[n] for n in ("olive", "eddie", "vera", "nina"))
    _shared(olive, eddie, vera)
    probes: list[tuple[str, str, dict[str, Any] | None]] = [
        ("GET", "/api/v1/workspaces/{}/members", None),
        ("POST", "/api/v1/workspaces/{}/invitations", {"role": "owner"}),
        ("GET", "/api/v1/workspaces/{}/invitations", None),
        ("PATCH", "/api/v1/workspaces/{}/members/olive", {"role": "viewer"}),
        ("DELETE", "/api/v1/workspaces/{}/members/olive", None),
    ]
    for method, path, body in probes:
        real = nina.request(method, path.format("shared"), json=body)
        missing = nina.request(method, path.format("nowhere"), json=body)
        status, code, message = error_of(real)
        assert (status, code) == (404, "not_found"), real.text
        assert (status, code, message.replace("shared", "?")) == (
            missing.status_code,
            missing.json()["error"]["code"],
            missing.json()["error"]["message"].replace("nowhere", "?"),
        )
    assert "shared" not in [w["slug"] for w in nina.get("/api/v1/workspaces").json()]
    shared = c.workspaces.resolve("shared")
    assert len(c.members.members(shared.id)) == 3


def test_a_username_that_is_no_member_answers_alike_whether_or_not_it_exists(
    c: Container, people: dict[str, Person]
) -> None:
    """Changing or removing a member names them; nina (a user, not a member of olive's
    workspace) and a name nobody has get the same 404, word for word."""
    olive = people["olive"]
    base = "/api/v1/workspaces/olive/members"
    for method, body in (("PATCH", {"role": "editor"}), ("DELETE", None)):
        real = olive.request(method, f"{base}/nina", json=body)
        nobody = olive.request(method, f"{base}/nobody-at-all", json=body)
        assert error_of(real) == error_of(nobody) == (404, "not_found", NOT_A_MEMBER)
        assert real.headers.get("content-length") == nobody.headers.get("content-length")
    r = olive.patch(f"{base}/nina", json={"role": "boss"})
    assert r.status_code == 400
    assert c.accounts.role_in(people["nina"].user.id, c.workspaces.resolve("olive").id) is None


def test_nobody_is_added_by_username_any_more(c: Container, people: dict[str, Person]) -> None:
    """The route that added an existing user by name is gone: the same answer for a real
    user and a name nobody has, and nobody becomes a member."""
    olive = people["olive"]
    answers = [
        olive.post("/api/v1/workspaces/olive/members", json={"username": name, "role": "owner"})
        for name in ("nina", "nobody-at-all")
    ]
    assert {r.status_code for r in answers} == {405}
    assert answers[0].json()["error"]["code"] == answers[1].json()["error"]["code"]
    assert [m.username for m in c.members.members(c.workspaces.resolve("olive").id)] == ["olive"]


def test_the_last_owner_can_be_neither_demoted_nor_removed(
    c: Container, people: dict[str, Person]
) -> None:
    olive, eddie, vera = people["olive"], people["eddie"], people["vera"]
    _shared(olive, eddie, vera)
    base = "/api/v1/workspaces/shared/members"
    for r in (
        olive.patch(f"{base}/olive", json={"role": "editor"}),
        olive.delete(f"{base}/olive"),
    ):
        assert error_of(r)[:2] == (409, "last_owner"), r.text
    shared = c.workspaces.resolve("shared")
    assert c.members.member(shared.id, "olive").role is Role.OWNER
    # With a second owner, the first may step down; then the second is the last one.
    assert olive.patch(f"{base}/eddie", json={"role": "owner"}).status_code == 200
    assert olive.patch(f"{base}/olive", json={"role": "viewer"}).json()["role"] == "viewer"
    assert error_of(olive.get(base))[:2] == (403, "forbidden")
    assert error_of(eddie.delete(f"{base}/eddie"))[:2] == (409, "last_owner")
    assert eddie.delete(f"{base}/olive").status_code == 204
    assert {m.username for m in c.members.members(shared.id)} == {"eddie", "vera"}


def test_a_removed_or_demoted_member_loses_the_access_at_once(
    c: Container, people: dict[str, Person]
) -> None:
    olive, eddie, vera = people["olive"], people["eddie"], people["vera"]
    _shared(olive, eddie, vera)
    shared = c.workspaces.resolve("shared")
    secret = make_token(c, eddie.user, workspace=shared, role=Role.EDITOR)
    with anonymous_client(c) as script:
        script.headers["Authorization"] = f"Bearer {secret}"
        note = {"text": "Cormorants dry their wings.", "title": "Cormorants"}
        assert script.post("/api/v1/items", json=note).status_code == 201
        olive.patch("/api/v1/workspaces/shared/members/eddie", json={"role": "viewer"})
        r = script.post("/api/v1/items", json={"text": "More.", "title": "More"})
        assert r.status_code == 403
        assert olive.delete("/api/v1/workspaces/shared/members/eddie").status_code == 204
        assert script.get("/api/v1/items").status_code == 401
    here = {"X-Relata-Workspace": "shared"}
    assert error_of(eddie.get("/api/v1/items", headers=here))[:2] == (404, "not_found")


def test_every_change_is_audited_with_the_acting_person(
    c: Container, people: dict[str, Person]
) -> None:
    olive, eddie, vera = people["olive"], people["eddie"], people["vera"]
    _shared(olive, eddie, vera)
    base = "/api/v1/workspaces/shared/members"
    olive.patch(f"{base}/eddie", json={"role": "owner"})
    olive.patch(f"{base}/eddie", json={"role": "owner"})  # no change, no event
    olive.delete(f"{base}/vera")
    shared = c.workspaces.resolve("shared")
    events = list(reversed(c.audit.list(shared.id)))
    got = [(e.action, e.target_id, e.actor_user_id) for e in events]
    by_olive = [
        (e.action, e.target_id, e.details) for e in events if e.actor_user_id == olive.user.id
    ]
    invited = [e.target_id for e in events if e.action == AuditAction.INVITATION_CREATED.value]
    assert len(invited) == 2
    assert got == [
        (AuditAction.WORKSPACE_CREATED.value, shared.id, olive.user.id),
        (AuditAction.MEMBER_ADDED.value, olive.user.id, olive.user.id),
        (AuditAction.INVITATION_CREATED.value, invited[0], olive.user.id),
        # The invited person accepts: they are the actor of their joining.
        (AuditAction.INVITATION_ACCEPTED.value, invited[0], eddie.user.id),
        (AuditAction.MEMBER_ADDED.value, eddie.user.id, eddie.user.id),
        (AuditAction.INVITATION_CREATED.value, invited[1], olive.user.id),
        (AuditAction.INVITATION_ACCEPTED.value, invited[1], vera.user.id),
        (AuditAction.MEMBER_ADDED.value, vera.user.id, vera.user.id),
        (AuditAction.MEMBER_CHANGED.value, eddie.user.id, olive.user.id),
        (AuditAction.MEMBER_REMOVED.value, vera.user.id, olive.user.id),
    ]
    assert by_olive[-2:] == [
        (
            AuditAction.MEMBER_CHANGED.value,
            eddie.user.id,
            {"role": "owner", "previous_role": "editor"},
        ),
        (AuditAction.MEMBER_REMOVED.value, vera.user.id, {"previous_role": "viewer"}),
    ]
    assert all(e.actor_kind == ActorKind.USER.value for e in events)
    assert all(e.request_id for e in events)
    # Owners read the same through the API.
    actions = [
        e["action"]
        for e in olive.get("/api/v1/audit", headers={"X-Relata-Workspace": "shared"}).json()[
            "events"
        ]
    ]
    assert actions.count("member.added") == 3


def test_refused_changes_record_nothing(c: Container, people: dict[str, Person]) -> None:
    olive, eddie, vera = people["olive"], people["eddie"], people["vera"]
    _shared(olive, eddie, vera)
    shared = c.workspaces.resolve("shared")
    before = len(c.audit.list(shared.id))
    olive.delete("/api/v1/workspaces/shared/members/olive")  # last owner
    vera.delete("/api/v1/workspaces/shared/members/eddie")  # a viewer
    people["nina"].delete("/api/v1/workspaces/shared/members/eddie")  # not a member
    assert len(c.audit.list(shared.id)) == before


def test_no_session_no_access(c: Container) -> None:
    with anonymous_client(c) as client:
        for method, path in (
            ("GET", "/api/v1/workspaces"),
            ("POST", "/api/v1/workspaces"),
            ("GET", "/api/v1/workspaces/default/members"),
        ):
            assert client.request(method, path, json={"slug": "x"}).status_code == 401
