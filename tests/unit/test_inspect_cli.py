"""``relata inspect``: a dry run that needs no database and stores nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relata.cli.main import main
from tests.fuzz.docgen import make_docx, make_pdf

GUIDE = (
    "# Guide\n\nIntro paragraph.\n\n## Install\n\n"
    + "Run the installer and follow the prompts. " * 40
    + "\n\n| key | value |\n|---|---|\n| a | 1 |\n"
)


@pytest.fixture(autouse=True)
def _isolated_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Point the data dir somewhere empty: inspect must not create or open a database there.
    monkeypatch.setenv("RELATA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RELATA_DATABASE_URL", "postgresql+psycopg://nobody@127.0.0.1:1/none")


def test_inspect_prints_type_structure_and_chunks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    md_path = tmp_path / "guide.md"
    md_path.write_text(GUIDE, encoding="utf-8")
    assert main(["inspect", str(md_path)]) == 0
    out = capsys.readouterr().out
    assert "type:      markdown" in out
    assert "title:     Guide" in out
    assert "heading h2  Guide › Install" in out
    assert "chunks:    " in out and "(target 1000 chars, overlap 200)" in out
    assert "nothing stored" in out
    assert not (tmp_path / "data").exists()


def test_inspect_json_reports_blocks_and_chunks_with_offsets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RELATA_CHUNK_TARGET_CHARS", "400")
    monkeypatch.setenv("RELATA_CHUNK_OVERLAP_CHARS", "0")
    path = tmp_path / "guide.md"
    path.write_text(GUIDE, encoding="utf-8")
    assert main(["inspect", "--json", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["source_type"] == "markdown"
    assert report["chunking"] == {"target_chars": 400, "overlap_chars": 0}
    assert len(report["chunks"]) > 3
    assert all(len(c["text"]) <= 400 for c in report["chunks"])
    assert report["blocks"][2]["text"] == "Install"
    assert report["blocks"][2]["heading_path"] == ["Guide", "Install"]


@pytest.mark.parametrize(
    ("name", "data", "kind"),
    [
        ("report.pdf", make_pdf([["Page one text."], ["Page two text."]]), "pdf"),
        ("letter.docx", make_docx([("h1", "Dear reader"), ("p", "Hello.")]), "docx"),
        ("data.json", b'{"authors": [{"name": "Ada"}]}', "json"),
    ],
)
def test_inspect_handles_each_binary_and_structured_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, data: bytes, kind: str
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    assert main(["inspect", "--json", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["source_type"] == kind
    assert report["chunks"]


def test_inspect_rejects_unsupported_content_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "photo.txt"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(200))
    assert main(["inspect", str(path)]) == 1
    assert "PNG image" in capsys.readouterr().err


def test_inspect_refuses_a_file_over_the_upload_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RELATA_MAX_UPLOAD_BYTES", "2048")
    path = tmp_path / "big.txt"
    path.write_text("word " * 1000, encoding="utf-8")
    assert main(["inspect", str(path)]) == 1
    err = capsys.readouterr().err
    assert "5000 bytes" in err and "RELATA_MAX_UPLOAD_BYTES" in err


def test_inspect_of_a_missing_file_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", str(tmp_path / "nope.md")]) == 1
    assert "cannot read" in capsys.readouterr().err
