"""The audit log page: owners only (403 page for an editor or a viewer), events newest first
with time, actor, action and target (sign-ins, uploads, tokens made on the settings page),
the action filter, paging, and names from the XSS corpus escaped."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from markupsafe import escape

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.models import CLI_ACTOR
from relata.domain.vocabulary import AuditAction, Role
from relata.web.pages.audit import PAGE_SIZE
from tests.support.api import make_user
from tests.support.demo import DemoSnapshot
from tests.support.ingest import built, workspace_id
from tests.support.web import csrf, web_client
from tests.support.xss import XSS, leaked

AUDIT = "/w/default/audit"
_ACTION = re.compile(r"<td><code>([a-z_.]+)</code></td>")


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none") as container:
        yield container


def _actions(text: str) -> list[str]:
    return _ACTION.findall(text)


def test_an_owner_sees_sign_ins_uploads_and_tokens_newest_first(
    demo_container: Container, demo_snapshot: DemoSnapshot
) -> None:
    c, ids = demo_container, demo_snapshot.ids
    ws = workspace_id(c)
    owner = web_client(c, username="ann")
    made = owner.post(
        "/w/default/settings/tokens",
        data={"csrf_token": csrf(owner, "/w/default/settings"), "name": "ci runner"},
    )
    assert made.status_code == 201
    r = owner.get(AUDIT)
    assert r.status_code == 200 and "<h1>Audit log</h1>" in r.text
    events = c.audit.list(ws, limit=PAGE_SIZE)
    assert _actions(r.text) == [e.action for e in events]  # the service's order: newest first
    shown = set(_actions(r.text))
    assert {"auth.sign_in", "item.uploaded", "token.created"} <= shown
    # Who, by name; which token, by name; an uploaded item, linked.
    assert '<td>ann<div class="sub">user</div></td>' in r.text
    assert "<td>token ci runner</td>" in r.text and "<td>user ann</td>" in r.text
    assert any(f'href="/w/default/items/{i}"' in r.text for i in ids.values())
    assert "<time datetime=" in r.text and "Time (UTC)" in r.text


def test_the_action_filter_and_paging(c: Container) -> None:
    ws = workspace_id(c)
    owner_user = make_user(c, username="olga")
    for n in range(PAGE_SIZE + 5):
        c.tokens.create(
            user_id=owner_user.id,
            workspace_id=ws,
            name=f"token {n}",
            role=Role.VIEWER,
            creator_role=Role.OWNER,
            actor=CLI_ACTOR,
        )
    client = web_client(c)
    only = client.get(AUDIT, params={"action": "token.created"})
    assert set(_actions(only.text)) == {"token.created"}
    assert len(_actions(only.text)) == PAGE_SIZE
    assert "selected>token.created" in only.text
    assert 'href="?action=token.created&amp;offset=50" rel="next"' in only.text
    second = client.get(AUDIT, params={"action": "token.created", "offset": PAGE_SIZE})
    assert len(_actions(second.text)) == 5 and 'rel="next"' not in second.text
    assert 'rel="prev"' in second.text
    every = [e.id for e in c.audit.list(ws, action=AuditAction.TOKEN_CREATED, limit=100)]
    assert len(every) == PAGE_SIZE + 5
    signins = client.get(AUDIT, params={"action": "auth.sign_in"})
    assert _actions(signins.text) == ["auth.sign_in"]
    none = client.get(AUDIT, params={"action": "member.removed"})
    assert _actions(none.text) == [] and "No events of this action." in none.text
    bad = client.get(AUDIT, params={"action": "everything"})
    assert bad.status_code == 400 and "action must be one of" in bad.text


@pytest.mark.parametrize("role", [Role.EDITOR, Role.VIEWER])
def test_anyone_but_an_owner_gets_the_403_page(c: Container, role: Role) -> None:
    client = web_client(c, role=role)
    r = client.get(AUDIT)
    assert r.status_code == 403 and "Not allowed" in r.text
    assert "cannot read the audit log" in r.text and "auth.sign_in" not in r.text
    assert 'href="/w/default/audit"' not in client.get("/w/default/settings").text


def test_another_workspaces_log_is_not_found(c: Container) -> None:
    c.workspaces.ensure("other")
    client = web_client(c)
    assert client.get("/w/other/audit").status_code == 404


def test_names_from_the_xss_corpus_are_escaped(c: Container) -> None:
    ws = workspace_id(c)
    owner_user = make_user(c, username="olga")
    for text in XSS:
        c.tokens.create(
            user_id=owner_user.id,
            workspace_id=ws,
            name=text,
            role=Role.VIEWER,
            creator_role=Role.OWNER,
            actor=CLI_ACTOR,
        )
    client = web_client(c)
    page = client.get(AUDIT).text
    assert str(escape(XSS[1])) in page  # the token's name, as text
    assert leaked(page) == []
