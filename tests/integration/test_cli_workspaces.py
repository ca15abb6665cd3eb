"""``relata workspaces create|list`` and ``relata members list|add|role|remove`` on SQLite: the
administrator's command line follows the API's rules (a taken slug is refused, the last owner
stays, unknown users are named) and every change is audited as cli."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from relata.bootstrap import Container
from relata.cli.main import main
from relata.config.settings import Settings
from relata.domain.vocabulary import ActorKind, AuditAction, Role
from tests.support.api import make_user
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
