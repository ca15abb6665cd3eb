"""``relata entities``, ``entity`` and ``aliases`` against a real database: the list with a
normalised name query, one entity's quotations, and a decision that the list then shows."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from relata.bootstrap import Container
from relata.cli.main import main
from relata.config.settings import Settings
from relata.ingest.service import IngestRequest
from tests.support.ingest import built, drain, workspace_id

TEXT = "Kestrel Marine Systems built the array. Later, Kestrel said the turbines were sound."


@pytest.fixture
def cli(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Container]:
    with built(settings, embedding_provider="none") as c:
        for key in [k for k in os.environ if k.startswith("RELATA_")]:
            monkeypatch.delenv(key)
        monkeypatch.setenv("RELATA_DATA_DIR", c.settings.data_dir)
        monkeypatch.setenv("RELATA_DATABASE_URL", c.settings.resolved_database_url)
        monkeypatch.setenv("RELATA_EMBEDDING_PROVIDER", "none")
        c.ingest.ingest(workspace_id(c), IngestRequest(text=TEXT, title="Array notes"))
        drain(c)
        yield c


def test_entities_entity_and_an_alias_decision(
    cli: Container, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["entities", "kestrel's", "--type", "organisation", "--json"]) == 0
    found = {e["name"]: e for e in json.loads(capsys.readouterr().out)}
    assert {"Kestrel Marine Systems", "Kestrel"} <= set(found)

    assert main(["entity", found["Kestrel Marine Systems"]["id"]]) == 0
    shown = capsys.readouterr().out
    assert "Kestrel Marine Systems  (organisation)" in shown and "[0:22]" in shown
    assert "Array notes" in shown

    assert main(["aliases", "--json"]) == 0
    [candidate] = [
        a
        for a in json.loads(capsys.readouterr().out)
        if {a["entity"]["name"], a["other"]["name"]} == {"Kestrel", "Kestrel Marine Systems"}
    ]
    assert main(["aliases", "--reject", candidate["id"], "--note", "not the same"]) == 0
    assert capsys.readouterr().out.startswith("rejected: ")
    assert main(["aliases", "--status", "rejected", "--json"]) == 0
    [rejected] = json.loads(capsys.readouterr().out)
    assert rejected["id"] == candidate["id"] and rejected["note"] == "not the same"

    assert main(["aliases", "--confirm", "no-such-alias"]) == 1
    assert "no alias 'no-such-alias'" in capsys.readouterr().err
    assert main(["entity", "nope"]) == 1
