"""Every entry point that takes an instant from a client refuses one with no UTC
representation as a 400 (or a one-line CLI error) naming the field, never a 500 or a
traceback: API tokens' ``expires_at`` (the probe's ``9999-12-31T23:59:59-14:00`` was a 500),
``relata tokens create --expires`` (a 63-line traceback), the audit log's bounds in the API
and the CLI, and the web's token expiry and library filters. The item and search filters and
``created_at`` are covered in ``test_api_probes.py``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from relata.bootstrap import Container
from relata.cli.main import main
from relata.config.settings import Settings
from relata.domain.models import CLI_ACTOR
from relata.domain.vocabulary import Role
from tests.support.api import api_client, make_user
from tests.support.cli import point_cli_at
from tests.support.ingest import built
from tests.support.web import csrf, web_client

# Instants are stored and compared in SQL (token expiries, audit bounds): both dialects.
pytestmark = pytest.mark.both_dialects

PROBE = "9999-12-31T23:59:59-14:00"
OUT_OF_RANGE = [PROBE, "0001-01-01T00:00:00+14:00"]


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings) as cont:
        yield cont


@pytest.fixture
def client(c: Container) -> Iterator[TestClient]:
    with api_client(c, raise_server_exceptions=False) as tc:
        yield tc


@pytest.fixture
def cli(c: Container, monkeypatch: pytest.MonkeyPatch) -> Container:
    return point_cli_at(c, monkeypatch)


def _field_error(resp: Any, field: str) -> str:
    assert resp.status_code == 400, resp.text
    err = resp.json()["error"]
    assert err["code"] == "invalid_request" and err["field"] == field, err
    return str(err["message"])


# ---------------------------------------------------------------- API tokens
@pytest.mark.parametrize("value", OUT_OF_RANGE)
def test_a_token_expiry_outside_utc_range_is_400_naming_expires_at(
    client: TestClient, c: Container, value: str
) -> None:
    before = len(c.tokens.list(c.workspaces.resolve().id, None))
    resp = client.post("/api/v1/tokens", json={"name": "far", "expires_at": value})
    message = _field_error(resp, "expires_at")
    assert "out of range" in message or "in the future" in message
    assert len(c.tokens.list(c.workspaces.resolve().id, None)) == before  # nothing made


def test_the_probe_value_is_out_of_range_not_in_the_past(client: TestClient) -> None:
    resp = client.post("/api/v1/tokens", json={"name": "far", "expires_at": PROBE})
    assert "out of range" in _field_error(resp, "expires_at")


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        ("2999-01-01T12:00:00", "2999-01-01T12:00:00Z"),  # naive: UTC
        ("2999-01-01T12:00:00+02:00", "2999-01-01T10:00:00Z"),
        ("2999-12-31", "3000-01-01T00:00:00Z"),  # a bare date: through that day
        ("9999-12-31T23:59:59+14:00", "9999-12-31T09:59:59Z"),
    ],
)
def test_a_token_expiry_is_stored_in_utc(client: TestClient, value: str, stored: str) -> None:
    resp = client.post("/api/v1/tokens", json={"name": "later", "expires_at": value})
    assert resp.status_code == 201, resp.text
    assert resp.json()["expires_at"].replace("+00:00", "Z") == stored


@pytest.mark.parametrize("value", ["soon", "2999-01-01 12:00", "9999-12-31", 4102444800])
def test_a_token_expiry_that_is_no_documented_instant_is_400(
    client: TestClient, value: object
) -> None:
    resp = client.post("/api/v1/tokens", json={"name": "odd", "expires_at": value})
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"]["field"] in {"expires_at", "body.expires_at"}


# ---------------------------------------------------------------- API audit log
@pytest.mark.parametrize("name", ["since", "until"])
@pytest.mark.parametrize("value", OUT_OF_RANGE)
def test_an_audit_bound_outside_utc_range_is_400_naming_it(
    client: TestClient, name: str, value: str
) -> None:
    message = _field_error(client.get("/api/v1/audit", params={name: value}), name)
    assert "out of range" in message


# ---------------------------------------------------------------- CLI
def _one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("value", OUT_OF_RANGE)
def test_cli_tokens_create_with_an_expiry_outside_utc_range_is_one_line(
    cli: Container, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    make_user(cli, username="ada")
    err = _one_line_error(
        capsys, ["tokens", "create", "--user", "ada", "--name", "far", "--expires", value]
    )
    assert err.startswith("relata: --expires") or "in the future" in err
    assert cli.tokens.list(cli.workspaces.resolve().id, None) == []


def test_cli_tokens_create_names_expires_for_the_probe_value(
    cli: Container, capsys: pytest.CaptureFixture[str]
) -> None:
    make_user(cli, username="ada")
    err = _one_line_error(capsys, ["tokens", "create", "--user", "ada", "--expires", PROBE])
    expected = "--expires is out of range: it must fall between 0001-01-01 and 9999-12-31 in UTC"
    assert err == f"relata: {expected}\n"


def test_cli_tokens_create_takes_a_naive_expiry_as_utc_and_a_date_through_that_day(
    cli: Container, capsys: pytest.CaptureFixture[str]
) -> None:
    make_user(cli, username="ada")
    ws = cli.workspaces.resolve().id
    assert main(["tokens", "create", "--user", "ada", "--expires", "2999-01-01T12:00:00"]) == 0
    assert main(["tokens", "create", "--user", "ada", "--expires", "2999-12-31"]) == 0
    expiries = sorted(t.expires_at.isoformat() for t in cli.tokens.list(ws, None) if t.expires_at)
    assert expiries == ["2999-01-01T12:00:00+00:00", "3000-01-01T00:00:00+00:00"]


@pytest.mark.parametrize("option", ["--since", "--until"])
def test_cli_audit_with_a_bound_outside_utc_range_is_one_line(
    cli: Container, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    err = _one_line_error(capsys, ["audit", option, PROBE])
    assert err.startswith(f"relata: {option} is out of range")


# ---------------------------------------------------------------- web
def test_the_web_token_form_refuses_an_expiry_outside_utc_range(c: Container) -> None:
    ws = c.workspaces.resolve()
    client = web_client(c, role=Role.OWNER)
    page = f"/w/{ws.slug}/settings"
    for value in ["9999-12-31", PROBE]:
        data = {"csrf_token": csrf(client, page), "name": "far", "expires": value}
        r = client.post(f"{page}/tokens", data=data)
        assert r.status_code == 400, r.text
        assert "out of range" in r.text
    assert c.tokens.list(ws.id, None) == []


@pytest.mark.parametrize("name", ["from", "to"])
def test_the_web_library_filter_refuses_an_instant_outside_utc_range(
    c: Container, name: str
) -> None:
    client = web_client(c, role=Role.VIEWER)
    r = client.get(f"/w/{c.workspaces.resolve().slug}/library", params={name: PROBE})
    assert r.status_code == 400, r.text
    assert "out of range" in r.text


def test_the_token_service_normalises_an_aware_expiry_it_is_handed(c: Container) -> None:
    from datetime import datetime, timedelta, timezone

    from relata.domain.errors import ValidationError

    user = make_user(c)
    far = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(-timedelta(hours=14)))
    with pytest.raises(ValidationError) as caught:
        c.tokens.create(
            user_id=user.id,
            workspace_id=c.workspaces.resolve().id,
            name="far",
            role=Role.VIEWER,
            creator_role=Role.OWNER,
            expires_at=far,
            actor=CLI_ACTOR,
        )
    assert caught.value.field == "expires_at"
