"""Invitations in the web interface, end to end with the in-process client: an owner invites
from the settings page (the link shown once, a reload makes no second one), the invited
person signs in through the link, sees the workspace and role and accepts or declines, each
form with its CSRF token; owners revoke; a member already is told so; unusable codes are one
page; stored strings are escaped and the server logs no code."""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape

from relata.auth.invitations import ALREADY_MEMBER, NOT_VALID
from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.models import CLI_ACTOR
from relata.domain.vocabulary import AuditAction, Role
from tests.support.api import PASSWORD, make_user
from tests.support.ingest import built
from tests.support.web import csrf, web_app_client, web_client
from tests.support.xss import XSS, leaked

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)

SETTINGS = "/w/default/settings"
_LINK = re.compile(
    r'value="(http://localhost/invitations\?code=(ri_[0-9a-f]{8}_[A-Za-z0-9_-]{43}))"'
)
_ONCE = re.compile(r'name="once" value="([^"]+)"')
_HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"')


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none") as container:
        yield container


def _invite(owner: TestClient, role: str = "editor", days: str = "7") -> tuple[str, str]:
    """Post the settings page's invite form as a browser does; (link, code)."""
    page = owner.get(SETTINGS).text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    once = _ONCE.search(page.split('id="invite-heading"', 1)[1])
    assert token and once
    r = owner.post(
        f"{SETTINGS}/invitations",
        data={"csrf_token": token.group(1), "once": once.group(1), "role": role, "days": days},
    )
    assert r.status_code == 201, r.text
    found = _LINK.search(r.text)
    assert found, r.text
    return found.group(1), found.group(2)


def _invitee(c: Container, username: str = "bo") -> TestClient:
    """Someone with a workspace of their own, signed in."""
    ws, _ = c.workspaces.ensure(f"{username}-home")
    return web_client(c, workspace=ws, username=username)


def _form_fields(page: str, action: str) -> dict[str, str]:
    """The hidden fields of the page's form posting to ``action``."""
    start = page.index(f'action="{action}"')
    form = page[start : page.index("</form>", start)]
    return {html.unescape(k): html.unescape(v) for k, v in _HIDDEN.findall(form)}


def test_an_owner_invites_and_the_invited_person_accepts(
    c: Container, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    ws = c.workspaces.resolve()
    owner = web_client(c, username="ann")
    settings_page = owner.get(SETTINGS).text
    assert "Invite someone" in settings_page and "No pending invitations." in settings_page
    assert 'name="username"' not in settings_page  # nobody is added by name

    link, code = _invite(owner, "editor", "3")
    listed = owner.get(SETTINGS).text
    assert f"ri_{code[3:11]}_…" in listed and code not in listed
    assert c.accounts.role_in(c.accounts.get_by_username("ann").id, ws.id) is Role.OWNER
    assert [i.role for i in c.invitations.live(ws.id)] == [Role.EDITOR]

    bo = _invitee(c)
    assert c.accounts.role_in(c.accounts.get_by_username("bo").id, ws.id) is None
    page = bo.get(link.removeprefix("http://localhost"))
    assert page.status_code == 200
    assert "<strong>ann</strong> invites" in page.text and "as <strong>editor</strong>" in page.text
    assert page.headers["cache-control"] == "no-store"
    fields = _form_fields(page.text, "/invitations/accept")
    assert fields["code"] == code and fields["csrf_token"]

    # Without the form's token, or with another, nothing happens.
    for forged in ({"code": code}, {"code": code, "csrf_token": "forged"}):
        assert bo.post("/invitations/accept", data=forged).status_code == 403
    assert c.accounts.role_in(c.accounts.get_by_username("bo").id, ws.id) is None

    accepted = bo.post("/invitations/accept", data=fields)
    assert accepted.status_code == 303
    assert accepted.headers["location"] == "/w/default/library?done=invitation_accepted"
    assert c.accounts.role_in(c.accounts.get_by_username("bo").id, ws.id) is Role.EDITOR
    welcome = bo.get(accepted.headers["location"]).text
    assert "you are now a member of this workspace" in welcome

    again = bo.get(link.removeprefix("http://localhost"))
    assert again.status_code == 404 and str(escape(NOT_VALID)) in again.text
    actions = {e.action for e in c.audit.list(ws.id)}
    assert {AuditAction.INVITATION_CREATED, AuditAction.INVITATION_ACCEPTED} <= actions
    server_logs = "\n".join(
        r.getMessage() + repr(getattr(r, "fields", "")) + repr(r.args)
        for r in caplog.records
        if not r.name.startswith("httpx")  # the test's own client logs the URLs it asks for
    )
    assert code not in server_logs and code.split("_", 2)[2] not in server_logs


def test_the_link_survives_signing_in(c: Container) -> None:
    make_user(c, workspace=c.workspaces.ensure("cy-home")[0], username="cy")
    owner = web_client(c, username="ann")
    _, code = _invite(owner)
    visitor = web_app_client(c)
    target = f"/invitations?code={code}"
    r = visitor.get(target)
    assert r.status_code == 303
    assert r.headers["location"] == f"/sign-in?next={quote(target, safe='')}"
    sign_in_page = visitor.get(r.headers["location"]).text
    fields = _form_fields(sign_in_page, "/sign-in")
    assert fields["next"] == target
    signed = visitor.post("/sign-in", data={**fields, "username": "cy", "password": PASSWORD})
    assert signed.status_code == 303 and signed.headers["location"] == target
    assert "Accept and join" in visitor.get(target).text


def test_the_invited_person_may_decline(c: Container) -> None:
    ws = c.workspaces.resolve()
    owner = web_client(c, username="ann")
    link, code = _invite(owner, "viewer")
    bo = _invitee(c)
    page = bo.get(link.removeprefix("http://localhost")).text
    declined = bo.post("/invitations/decline", data=_form_fields(page, "/invitations/decline"))
    assert declined.status_code == 303
    assert declined.headers["location"] == "/w/bo-home/library?done=invitation_declined"
    assert "You declined the invitation." in bo.get(declined.headers["location"]).text
    assert c.accounts.role_in(c.accounts.get_by_username("bo").id, ws.id) is None
    refused = bo.post(
        "/invitations/accept", data={"code": code, "csrf_token": csrf(bo, "/invitations")}
    )
    assert refused.status_code == 404 and str(escape(NOT_VALID)) in refused.text
    assert AuditAction.INVITATION_DECLINED in {e.action for e in c.audit.list(ws.id)}


def test_a_reload_of_the_invite_answer_makes_no_second_invitation(c: Container) -> None:
    owner = web_client(c, username="ann")
    page = owner.get(SETTINGS).text
    data = {
        "csrf_token": csrf(owner, SETTINGS),
        "once": _ONCE.findall(page)[-1],
        "role": "viewer",
        "days": "7",
    }
    assert owner.post(f"{SETTINGS}/invitations", data=data).status_code == 201
    again = owner.post(f"{SETTINGS}/invitations", data=data)
    assert again.status_code == 409 and "already sent" in again.text
    assert _LINK.search(again.text) is None
    assert len(c.invitations.live(c.workspaces.resolve().id)) == 1


def test_an_owner_revokes_an_invitation_and_its_link_stops_working(c: Container) -> None:
    ws = c.workspaces.resolve()
    owner = web_client(c, username="ann")
    link, _ = _invite(owner)
    [pending] = c.invitations.live(ws.id)
    token = csrf(owner, SETTINGS)
    assert f"settings/invitations/{pending.id}/revoke" in owner.get(SETTINGS).text
    r = owner.post(f"{SETTINGS}/invitations/{pending.id}/revoke", data={"csrf_token": token})
    assert r.status_code == 303
    assert r.headers["location"] == f"{SETTINGS}?done=invitation_revoked#members"
    assert c.invitations.live(ws.id) == []
    page = _invitee(c).get(link.removeprefix("http://localhost"))
    assert page.status_code == 404 and "Accept and join" not in page.text
    twice = owner.post(f"{SETTINGS}/invitations/{pending.id}/revoke", data={"csrf_token": token})
    assert twice.status_code == 404 and "no pending invitation" in twice.text

    # Another workspace's owner cannot revoke it from theirs.
    _, code = _invite(owner)
    [live] = c.invitations.live(ws.id)
    other, _ = c.workspaces.ensure("other")
    stranger = web_client(c, workspace=other, username="zed")
    theirs = stranger.post(
        f"/w/other/settings/invitations/{live.id}/revoke",
        data={"csrf_token": csrf(stranger, "/w/other/settings")},
    )
    assert theirs.status_code == 404
    assert [i.id for i in c.invitations.live(ws.id)] == [live.id] and code


def test_a_member_already_is_told_so_and_nothing_changes(c: Container) -> None:
    owner = web_client(c, username="ann")
    link, code = _invite(owner, "viewer")
    page = owner.get(link.removeprefix("http://localhost")).text
    assert "already a member" in page and "Accept and join" not in page
    r = owner.post("/invitations/accept", data={"code": code, "csrf_token": csrf(owner, SETTINGS)})
    assert r.status_code == 409 and str(escape(ALREADY_MEMBER)) in r.text
    ws = c.workspaces.resolve()
    assert c.accounts.role_in(c.accounts.get_by_username("ann").id, ws.id) is Role.OWNER
    assert len(c.invitations.live(ws.id)) == 1


def test_unusable_codes_are_one_page_and_without_a_code_there_is_a_form(c: Container) -> None:
    bo = _invitee(c)
    form_page = bo.get("/invitations")
    assert form_page.status_code == 200 and 'name="code"' in form_page.text
    answers = set()
    for code in ("nonsense", "ri_00000000_" + "A" * 43, XSS[1]):
        r = bo.get("/invitations", params={"code": code})
        assert r.status_code == 404 and str(escape(NOT_VALID)) in r.text
        assert leaked(r.text) == []
        answers.add(re.sub(r'value="[^"]*"', "", r.text))
    assert len(answers) == 1


def test_a_workspace_name_on_the_invitation_page_is_escaped(c: Container) -> None:
    ann = make_user(c, username="ann")
    ws = c.members.create_workspace("odd", XSS[0], owner_id=ann.id, actor=CLI_ACTOR)
    code, _ = c.invitations.create(ws.id, Role.VIEWER, created_by=ann.id, actor=CLI_ACTOR)
    page = _invitee(c).get("/invitations", params={"code": code})
    assert page.status_code == 200 and str(escape(XSS[0])) in page.text
    assert leaked(page.text) == []
