"""HTML, CSV, TSV, XLSX, PPTX and e-mail through the whole pipeline (real app, SQLite): uploaded
over the API and ingested from a folder with ``relata ingest``, each sniffed from its content,
processed to ready with chunks that keep the structure (a CSV header in every chunk of rows,
slides, and a message's attachments by name), its original served with the detected type."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from relata.bootstrap import Container
from relata.cli.main import main
from relata.config.settings import Settings
from relata.domain.models import ItemStatus, SourceType
from tests.fuzz.officegen import HTML_PAGE, XLSX_TYPE, make_csv, make_eml, make_pptx, make_xlsx
from tests.support.api import api_client
from tests.support.cli import point_cli_at
from tests.support.ingest import built, drain, workspace_id

XLSX = make_xlsx({"Fleet": [["turbine", "MW"], ["SB-01", 1.5], ["SB-02", 2.0]]}, title="Fleet")
FILES: dict[SourceType, tuple[str, bytes]] = {
    SourceType.HTML: ("report.html", HTML_PAGE),
    SourceType.CSV: ("turbines.csv", make_csv(300)),
    SourceType.TSV: ("turbines.tsv", make_csv(5, delimiter="\t")),
    SourceType.XLSX: ("fleet.xlsx", XLSX),
    SourceType.PPTX: (
        "results.pptx",
        make_pptx([("Results", "Revenue grew 10%.", "Mention the harbour.")]),
    ),
    SourceType.EMAIL: (
        "report.eml",
        make_eml(attachments=[("fleet.xlsx", XLSX_TYPE, XLSX)]),
    ),
}
MEDIA = {
    SourceType.HTML: "text/plain",
    SourceType.CSV: "text/csv",
    SourceType.TSV: "text/tab-separated-values",
    SourceType.XLSX: XLSX_TYPE,
    SourceType.PPTX: "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    SourceType.EMAIL: "message/rfc822",
}


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings) as cont:
        yield cont


@pytest.fixture
def client(c: Container) -> Iterator[TestClient]:
    with api_client(c, raise_server_exceptions=False) as tc:
        yield tc


def _chunks(client: TestClient, item_id: str) -> list[dict[str, Any]]:
    resp = client.get(f"/api/v1/items/{item_id}/chunks?offset=0&limit=200")
    assert resp.status_code == 200, resp.text
    chunks: list[dict[str, Any]] = resp.json()["chunks"]
    return chunks


def test_every_new_format_is_uploaded_sniffed_and_processed_into_chunks(
    client: TestClient, c: Container
) -> None:
    ids: dict[SourceType, str] = {}
    for source_type, (name, data) in FILES.items():
        # The declared type is a lie for each: the content decides.
        resp = client.post(
            "/api/v1/items", files={"file": (name, data, "application/octet-stream")}
        )
        assert resp.status_code == 201, resp.text
        assert resp.json()["source_type"] == source_type.value
        ids[source_type] = resp.json()["id"]
    drain(c)
    for source_type, item_id in ids.items():
        detail = client.get(f"/api/v1/items/{item_id}").json()
        assert detail["status"] == "ready", (source_type, detail["error"])
        assert detail["chunk_count"] >= 1
        original = client.get(f"/api/v1/items/{item_id}/original")
        assert original.content == FILES[source_type][1]
        assert original.headers["content-type"].split(";")[0] == MEDIA[source_type]
        assert original.headers["content-disposition"].startswith("attachment; ")

    csv_chunks = _chunks(client, ids[SourceType.CSV])
    assert len(csv_chunks) > 5
    assert all(ch["text"].startswith("turbine | site | megawatts\n") for ch in csv_chunks)

    email = client.get(f"/api/v1/items/{ids[SourceType.EMAIL]}").json()
    assert email["title"] == "Harbour report"
    email_chunks = _chunks(client, ids[SourceType.EMAIL])
    assert any("Attachments: fleet.xlsx" in ch["text"] for ch in email_chunks)
    assert not any("SB-02" in ch["text"] for ch in email_chunks)
    # Its attachment is the workbook uploaded above (docs/decisions/0048): not a second item.
    [attached] = c.items.attachments(workspace_id(c), ids[SourceType.EMAIL])
    assert attached.item_id is None and attached.reason and "same content" in attached.reason

    slides = _chunks(client, ids[SourceType.PPTX])
    assert ["Slide 1: Results", "Notes"] in [ch["heading_path"] for ch in slides]

    found = client.get("/api/v1/search", params={"q": "megawatts turbines", "legs": "text"})
    assert found.status_code == 200, found.text
    assert ids[SourceType.CSV] in [r["item"]["id"] for r in found.json()["results"]]


def test_relata_ingest_reads_a_folder_of_mixed_formats(
    c: Container,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    point_cli_at(c, monkeypatch)
    folder = tmp_path / "mixed"
    folder.mkdir()
    for name, data in FILES.values():
        (folder / name).write_bytes(data)
    assert main(["ingest", str(folder)]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert f"scanned {len(FILES)}, ingested {len(FILES)}" in out
    items = c.items.list(workspace_id(c))
    assert {i.source_type for i in items} == set(FILES)
    assert all(i.status is ItemStatus.READY for i in items)
