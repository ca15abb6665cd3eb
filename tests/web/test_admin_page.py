"""The administration page (``/admin``): administrators list users and workspaces, create a
user, reset a password and create a workspace with its owner, each form with its CSRF token
and each change audited; anyone else signed in gets the 403 page and no link to it; stored
names are escaped; a refusal keeps what was typed but never the password."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from fastapi.testclient import TestClient

from relata.auth.administration import ADMINS_ONLY
from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.models import CLI_ACTOR
from relata.domain.vocabulary import AuditAction, Role
from tests.support.api import PASSWORD
from tests.support.ingest import built
from tests.support.web import csrf, sign_in, web_app_client, web_client
from tests.support.xss import XSS, leaked

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)

ADMIN = "/admin"
NEW_PASSWORD = "a brand new password"


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none") as container:
        container.workspaces.ensure(container.settings.default_workspace)
        yield container


def _admin(c: Container, username: str = "root") -> TestClient:
    c.admin.create_user(
        username, PASSWORD, join="default", role=Role.VIEWER, is_admin=True, actor=CLI_ACTOR
    )
    client = web_app_client(c)
    assert sign_in(client, username).status_code == 303
    return client


def _post(client: TestClient, path: str, **data: str) -> httpx.Response:
    return client.post(path, data={"csrf_token": csrf(client, ADMIN), **data})


def _actions(c: Container, workspace_slug: str, action: AuditAction) -> list[tuple[str, str]]:
    ws = c.workspaces.resolve(workspace_slug)
    return [(e.actor_user_id or "", e.target_id or "") for e in c.audit.list(ws.id, action=action)]


def test_an_administrator_sees_every_user_and_workspace_and_the_nav_link(c: Container) -> None:
    c.admin.create_workspace("tide-team", "Tide team", owner=None, actor=CLI_ACTOR)
    c.admin.create_user("bea", PASSWORD, join="tide-team", role=Role.OWNER, actor=CLI_ACTOR)
    admin = _admin(c)
    r = admin.get(ADMIN)
    assert r.status_code == 200, r.text
    assert r.headers["cache-control"] == "no-store"
    for text in ("root", "bea", "tide-team", "Tide team", "Create user", "Reset password"):
        assert text in r.text
    assert 'href="/admin"' in admin.get("/w/default/library").text


@pytest.mark.parametrize("role", [Role.OWNER, Role.EDITOR, Role.VIEWER])
def test_anyone_but_an_administrator_gets_the_403_page_and_no_link(
    c: Container, role: Role
) -> None:
    client = web_client(c, role=role)
    token = csrf(client, "/w/default/library")
    r = client.get(ADMIN)
    assert r.status_code == 403
    assert ADMINS_ONLY in r.text and "Create user" not in r.text
    assert 'href="/admin"' not in client.get("/w/default/library").text
    before = len(c.admin.users())
    for path, data in (
        ("/admin/users", {"username": "mallory", "password": PASSWORD}),
        ("/admin/password", {"username": "root", "password": NEW_PASSWORD}),
        ("/admin/workspaces", {"slug": "stolen"}),
    ):
        refused = client.post(path, data={"csrf_token": token, **data})
        assert refused.status_code == 403, path
    assert len(c.admin.users()) == before
    assert "stolen" not in [e.workspace.slug for e in c.admin.workspaces()]


def test_signed_out_goes_to_the_sign_in_page(c: Container) -> None:
    r = web_app_client(c).get(ADMIN)
    assert r.status_code == 303 and r.headers["location"].startswith("/sign-in")


def test_a_form_without_its_csrf_token_changes_nothing(c: Container) -> None:
    admin = _admin(c)
    for path, data in (
        ("/admin/users", {"username": "mallory", "password": PASSWORD}),
        ("/admin/workspaces", {"slug": "stolen"}),
        ("/admin/password", {"username": "root", "password": NEW_PASSWORD}),
    ):
        assert admin.post(path, data=data).status_code == 403, path
        assert admin.post(path, data={**data, "csrf_token": "x" * 43}).status_code == 403
    assert [e.user.username for e in c.admin.users()] == ["root"]
    assert admin.get(ADMIN).status_code == 200  # the password did not change: still signed in


def test_creating_a_user_in_a_workspace_and_a_private_one_is_audited(c: Container) -> None:
    admin = _admin(c)
    root = c.accounts.get_by_username("root")
    r = _post(
        admin,
        "/admin/users",
        username="Cleo",
        password=PASSWORD,
        workspace="default",
        role="viewer",
    )
    assert r.status_code == 303 and r.headers["location"] == "/admin?done=user_created#users"
    cleo = c.accounts.get_by_username("cleo")
    assert not cleo.is_admin
    assert c.accounts.role_in(cleo.id, c.workspaces.resolve().id) is Role.VIEWER
    assert (root.id, cleo.id) in _actions(c, "default", AuditAction.USER_CREATED)

    r = _post(admin, "/admin/users", username="dan", password=PASSWORD, is_admin="yes")
    assert r.status_code == 303
    dan = c.accounts.get_by_username("dan")
    [home] = c.accounts.memberships(dan.id)
    assert dan.is_admin and home.role is Role.OWNER
    assert re.fullmatch(r"ws-[0-9a-f]{10}", home.workspace.slug)
    assert (root.id, dan.id) in _actions(c, home.workspace.slug, AuditAction.USER_CREATED)
    # The new user signs in with the password the administrator chose.
    assert sign_in(web_app_client(c), "dan").status_code == 303


def test_a_refused_user_keeps_what_was_typed_but_not_the_password(c: Container) -> None:
    admin = _admin(c)
    count = len(c.admin.workspaces())
    r = _post(admin, "/admin/users", username="root", password="secret-typed-here")
    assert r.status_code == 409
    text = r.text
    assert "exists already" in text and "secret-typed-here" not in text
    assert len(c.admin.workspaces()) == count  # no private workspace left behind
    r = _post(admin, "/admin/users", username="eve", password="short")
    assert r.status_code == 400
    assert "at least 12 characters" in r.text and 'value="eve"' in r.text
    r = _post(admin, "/admin/users", username="eve", password=PASSWORD, workspace="nowhere")
    assert r.status_code == 404


def test_resetting_a_password_ends_the_users_sessions_and_is_audited(c: Container) -> None:
    c.admin.create_workspace("team", None, owner=None, actor=CLI_ACTOR)
    fay = web_client(c, username="fay")
    c.accounts.add_member(
        c.workspaces.resolve("team").id, c.accounts.get_by_username("fay").id, Role.EDITOR
    )
    assert fay.get("/w/default/library").status_code == 200
    admin = _admin(c)
    r = _post(admin, "/admin/password", username="fay", password=NEW_PASSWORD)
    assert r.status_code == 303, r.text
    assert fay.get("/w/default/library").status_code == 303  # signed out: to the sign-in page
    assert sign_in(web_app_client(c), "fay").status_code != 303
    assert sign_in(web_app_client(c), "fay", NEW_PASSWORD).status_code == 303
    fay_id = c.accounts.get_by_username("fay").id
    root_id = c.accounts.get_by_username("root").id
    for slug in ("default", "team"):  # in each of their workspaces
        assert (root_id, fay_id) in _actions(c, slug, AuditAction.USER_PASSWORD_RESET)
    r = _post(admin, "/admin/password", username="nobody", password=NEW_PASSWORD)
    assert r.status_code == 404


def test_creating_a_workspace_with_an_owner(c: Container) -> None:
    c.admin.create_user("gus", PASSWORD, actor=CLI_ACTOR)
    admin = _admin(c)
    r = _post(admin, "/admin/workspaces", slug="field-notes", name="Field notes", owner="gus")
    assert r.status_code == 303
    ws = c.workspaces.resolve("field-notes")
    assert ws.name == "Field notes"
    gus = c.accounts.get_by_username("gus")
    assert c.accounts.role_in(gus.id, ws.id) is Role.OWNER
    assert [t for _, t in _actions(c, "field-notes", AuditAction.WORKSPACE_CREATED)] == [ws.id]
    again = _post(admin, "/admin/workspaces", slug="field-notes")
    assert again.status_code == 409
    assert 'value="field-notes"' in again.text
    assert _post(admin, "/admin/workspaces", slug="x", owner="nobody").status_code == 404


def test_stored_names_are_escaped(c: Container) -> None:
    admin = _admin(c)
    for i, name in enumerate(XSS):
        c.admin.create_workspace(f"x{i}", name, owner=None, actor=CLI_ACTOR)
    assert leaked(admin.get(ADMIN).text) == []
