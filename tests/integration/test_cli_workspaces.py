"""``relata workspaces create|list`` and ``relata members list|add|role|remove`` on SQLite: the
administrator's command line follows the API's rules (a taken slug is refused, the last owner
stays, unknown users are named) and every change is audited as cli."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from collections.abc import Iterator

import pytest

from relata.bootstrap import Container
from relata.cli.main import main
from relata.config.settings import Settings
from relata.domain.models import Actor
from relata.domain.vocabulary import ActorKind, AuditAction, Role
from tests.support.api import PASSWORD, make_user
from tests.support.ingest import built


@pytest.fixture
def c(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Container]:
    with built(settings, embedding_provider="none") as container:
        for key in [k for k in os.environ if k.startswith("RELATA_")]:
            monkeypatch.delenv(key)
        monkeypatch.setenv("RELATA_DATA_DIR", container.settings.data_dir)
        monkeypatch.setenv("RELATA_DATABASE_URL", container.settings.resolved_database_url)
        monkeypatch.setenv("RELATA_EMBEDDING_PROVIDER", "none")
        yield container


def test_workspaces_and_members_from_the_command_line(
    c: Container, capsys: pytest.CaptureFixture[str]
) -> None:
    olive = make_user(c, username="olive")
    eddie = make_user(c, username="eddie")
    assert main(["workspaces", "create", "team", "--name", "The team", "--owner", "olive"]) == 0
    assert "created workspace team, owned by olive" in capsys.readouterr().out
    assert main(["workspaces", "create", "team"]) != 0
    assert "exists already" in capsys.readouterr().err
    assert main(["workspaces", "create", "Bad Slug"]) != 0
    capsys.readouterr()

    assert main(["members", "add", "eddie", "--role", "viewer", "--workspace", "team"]) == 0
    assert main(["members", "role", "eddie", "editor", "--workspace", "team"]) == 0
    capsys.readouterr()
    assert main(["members", "list", "--workspace", "team", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(m["username"], m["role"]) for m in listed] == [("eddie", "editor"), ("olive", "owner")]
    assert main(["members", "add", "nobody", "--workspace", "team"]) != 0
    assert main(["members", "role", "olive", "viewer", "--workspace", "team"]) != 0
    assert main(["members", "remove", "olive", "--workspace", "team"]) != 0
    assert "owner" in capsys.readouterr().err
    assert main(["members", "remove", "eddie", "--workspace", "team"]) == 0
    capsys.readouterr()
    assert main(["workspaces", "list", "--json"]) == 0
    rows = {r["slug"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["team"]["members"] == 1 and rows["team"]["owners"] == ["olive"]
    assert rows["team"]["name"] == "The team" and "default" in rows

    team = c.workspaces.resolve("team")
    assert c.accounts.role_in(olive.id, team.id) is Role.OWNER
    assert c.accounts.role_in(eddie.id, team.id) is None
    events = list(reversed(c.audit.list(team.id)))
    assert [e.action for e in events] == [
        AuditAction.WORKSPACE_CREATED.value,
        AuditAction.MEMBER_ADDED.value,
        AuditAction.MEMBER_ADDED.value,
        AuditAction.MEMBER_CHANGED.value,
        AuditAction.MEMBER_REMOVED.value,
    ]
    assert all(e.actor_kind == ActorKind.CLI.value for e in events)


def test_a_workspace_without_an_owner_gets_one_later(
    c: Container, capsys: pytest.CaptureFixture[str]
) -> None:
    make_user(c, username="olive")
    assert main(["workspaces", "create", "later"]) == 0
    assert "relata members add" in capsys.readouterr().out
    assert main(["members", "list", "--workspace", "later"]) == 0
    assert "no members" in capsys.readouterr().out
    assert main(["members", "add", "olive", "--role", "owner", "--workspace", "later"]) == 0
    assert "olive is now owner" in capsys.readouterr().out


def test_a_new_users_private_workspace_has_a_random_slug_not_their_name(
    c: Container, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORD + "\n"))
    assert main(["users", "create", "--username", "bob", "--password-stdin"]) == 0
    out = capsys.readouterr().out
    found = re.search(r"owner of workspace (ws-[0-9a-f]{10})\)", out)
    assert found, out
    bob = c.accounts.get_by_username("bob")
    [home] = c.accounts.memberships(bob.id)
    assert (home.workspace.slug, home.role) == (found.group(1), Role.OWNER)
    assert "bob" not in [w.slug for w in c.repos.workspaces.list()]
    # A taken username is refused before anything is made.
    count = len(c.repos.workspaces.list())
    monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORD + "\n"))
    assert main(["users", "create", "--username", "bob", "--password-stdin"]) != 0
    assert "exists already" in capsys.readouterr().err
    assert len(c.repos.workspaces.list()) == count


def test_invitations_from_the_command_line(
    c: Container, capsys: pytest.CaptureFixture[str]
) -> None:
    make_user(c, username="olive")
    nina = make_user(c, username="nina")
    assert main(["workspaces", "create", "team", "--owner", "olive"]) == 0
    capsys.readouterr()
    assert main(["workspaces", "invite", "team", "--role", "editor", "--days", "3"]) == 0
    printed = capsys.readouterr()
    link = printed.out.strip()
    found = re.fullmatch(
        r"http://127\.0\.0\.1:8080/invitations\?code=(ri_[0-9a-f]{8}_\S{43})", link
    )
    assert found, printed
    code = found.group(1)
    assert "shown once" in printed.err and "as editor" in printed.err
    team = c.workspaces.resolve("team")
    assert c.accounts.role_in(nina.id, team.id) is None  # nobody joins by being invited

    assert main(["workspaces", "invitations", "team", "--json"]) == 0
    listed = capsys.readouterr().out
    [row] = json.loads(listed)
    assert (row["prefix"], row["role"], row["created_by"]) == (code[3:11], "editor", None)
    assert code not in listed

    joined = c.invitations.accept(code, nina.id, actor=Actor(ActorKind.USER, user_id=nina.id))
    assert (joined.workspace.slug, joined.role) == ("team", Role.EDITOR)

    assert main(["workspaces", "invite", "team"]) == 0
    capsys.readouterr()
    [pending] = c.invitations.live(team.id)
    assert pending.role is Role.VIEWER
    assert main(["workspaces", "revoke-invitation", "team", pending.id]) == 0
    assert f"revoked invitation {pending.id}" in capsys.readouterr().out
    assert main(["workspaces", "invitations", "team"]) == 0
    assert "no pending invitations" in capsys.readouterr().out
    for bad in (["--days", "0"], ["--days", "31"], ["--role", "boss"]):
        with contextlib.suppress(SystemExit):  # argparse refuses an unknown role itself
            assert main(["workspaces", "invite", "team", *bad]) != 0
    err = capsys.readouterr().err
    assert "1 to 30 days" in err and "Traceback" not in err
    assert main(["workspaces", "revoke-invitation", "team", pending.id]) != 0
    assert "no pending invitation" in capsys.readouterr().err
    events = [e.action for e in c.audit.list(team.id) if e.actor_kind == ActorKind.CLI.value]
    assert events.count(AuditAction.INVITATION_CREATED.value) == 2
    assert AuditAction.INVITATION_REVOKED.value in events
    assert {m.username for m in c.members.members(team.id)} == {"olive", "nina"}


def test_users_create_and_reset_password_go_through_the_administration_service(
    c: Container, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same rules and audit events as the web's /admin page (one service)."""
    monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORD + "\n"))
    assert (
        main(
            [
                "users",
                "create",
                "--username",
                "hal",
                "--join",
                "default",
                "--role",
                "viewer",
                "--password-stdin",
            ]
        )
        == 0
    )
    assert "created user hal (viewer of workspace default)" in capsys.readouterr().out
    hal = c.accounts.get_by_username("hal")
    ws = c.workspaces.resolve()
    created = c.audit.list(ws.id, action=AuditAction.USER_CREATED)
    assert [(e.target_id, e.actor_kind) for e in created] == [(hal.id, "cli")]
    # A short password is refused, as on the web page.
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert main(["users", "create", "--username", "ivy", "--password-stdin"]) != 0
    assert "at least 12 characters" in capsys.readouterr().err

    token, _ = c.accounts.sessions.start(hal.id, ws.id)
    assert c.accounts.sessions.resolve(token) is not None
    monkeypatch.setattr("sys.stdin", io.StringIO("another long password\n"))
    assert main(["users", "reset-password", "hal", "--password-stdin"]) == 0
    assert "1 session(s) ended" in capsys.readouterr().out
    assert c.accounts.sessions.resolve(token) is None
    reset = c.audit.list(ws.id, action=AuditAction.USER_PASSWORD_RESET)
    assert [(e.target_id, e.actor_kind) for e in reset] == [(hal.id, "cli")]
    monkeypatch.setattr("sys.stdin", io.StringIO("another long password\n"))
    assert main(["users", "reset-password", "nobody", "--password-stdin"]) != 0
    assert "no user has that username" in capsys.readouterr().err
