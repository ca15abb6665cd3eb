"""The entities API over HTTP (TestClient against the real app): list and search by name and
type, one entity with its observations and co-mentions, an item's entities, candidate aliases
and a decision on one; another workspace's ids answer exactly like missing ones."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.ingest.service import IngestRequest
from tests.support.api import api_client
from tests.support.ingest import built, drain, workspace_id

pytestmark = pytest.mark.both_dialects

TEXT = (
    "Dr. Ines Vaughan of the Meridian Tidal Institute (MTI) met Kestrel Marine Systems in "
    "Port Halloran. Vaughan said the MTI survey would go on."
)


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none") as container:
        yield container


@pytest.fixture
def client(c: Container) -> Iterator[TestClient]:
    with api_client(c, raise_server_exceptions=False) as tc:
        yield tc


def test_entities_their_observations_and_an_alias_decision(
    c: Container, client: TestClient
) -> None:
    ws = workspace_id(c)
    item = c.ingest.ingest(ws, IngestRequest(text=TEXT, title="Meeting"))
    drain(c)
    page = client.get("/api/v1/entities", params={"type": "organisation"}).json()
    names = {e["name"] for e in page["entities"]}
    assert {"Meridian Tidal Institute", "Kestrel Marine Systems"} <= names
    assert all(e["type"] == "organisation" for e in page["entities"])
    # Searched by the normalised name: honorific and possessive do not matter.
    [ines] = client.get("/api/v1/entities", params={"q": "Dr. Ines Vaughan's"}).json()["entities"]
    assert ines["name"] == "Ines Vaughan" and ines["type"] == "person"

    detail = client.get(f"/api/v1/entities/{ines['id']}").json()
    [obs] = [o for o in detail["observations"] if o["item_id"] == item.id][:1]
    assert TEXT[obs["start"] : obs["end"]] == obs["quotation"] and obs["item_title"] == "Meeting"
    assert "Meridian Tidal Institute" in {m["entity"]["name"] for m in detail["co_mentioned"]}

    mine = client.get(f"/api/v1/items/{item.id}/entities").json()
    assert {e["name"] for e in mine} >= {"Ines Vaughan", "Port Halloran"}
    assert all(e["mentions"] >= 1 for e in mine)
    # The item's own detail lists the same entities.
    shown = client.get(f"/api/v1/items/{item.id}").json()["entities"]
    assert [(e["id"], e["mentions"]) for e in shown] == [(e["id"], e["mentions"]) for e in mine]

    aliases = client.get("/api/v1/aliases").json()["aliases"]
    [mti] = [
        a
        for a in aliases
        if {a["entity"]["name"], a["other"]["name"]} == {"MTI", "Meridian Tidal Institute"}
    ]
    assert mti["status"] == "candidate" and 0 < mti["score"] <= 1 and mti["reason"]
    decided = client.post(
        f"/api/v1/aliases/{mti['id']}/decision", json={"status": "confirmed", "note": "same"}
    )
    assert decided.status_code == 200, decided.text
    assert decided.json()["status"] == "confirmed" and decided.json()["note"] == "same"
    confirmed = client.get("/api/v1/aliases", params={"status": "confirmed"}).json()["aliases"]
    assert [a["id"] for a in confirmed] == [mti["id"]]

    bad = client.post(f"/api/v1/aliases/{mti['id']}/decision", json={"status": "candidate"})
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "status"
    assert client.get("/api/v1/entities", params={"type": "planet"}).status_code == 400


def test_another_workspaces_entities_and_aliases_are_not_found(
    c: Container, client: TestClient
) -> None:
    other = c.workspaces.ensure("other")[0].id
    c.ingest.ingest(other, IngestRequest(text=TEXT, title="Meeting"))
    drain(c)
    theirs = c.entities.list(other)[0]
    [alias] = c.entities.aliases(other, limit=1)
    nobody = "00000000-0000-0000-0000-000000000000"
    decision = {"status": "rejected"}
    for theirs_response, missing in (
        (
            client.get(f"/api/v1/entities/{theirs.id}"),
            client.get(f"/api/v1/entities/{nobody}"),
        ),
        (
            client.post(f"/api/v1/aliases/{alias.alias.id}/decision", json=decision),
            client.post(f"/api/v1/aliases/{nobody}/decision", json=decision),
        ),
    ):
        assert theirs_response.status_code == missing.status_code == 404
        assert theirs_response.json()["error"]["message"] == missing.json()["error"]["message"]
    assert c.entities.aliases(other, limit=1)[0].alias.status.value == "candidate"
    assert client.get("/api/v1/entities").json()["entities"] == []
    assert workspace_id(c) != other
