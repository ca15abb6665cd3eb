"""Export and import (``relata.exchange``) on the processed demo corpus, with decisions made:
GraphML read back by networkx with the store's counts; CSV a zip of one file per kind; JSON
Lines exported, imported into a new workspace, exported again and equal modulo ids, the
decisions kept; a bad file refused with its line, before anything is written; the audit."""

from __future__ import annotations

import base64
import csv
import io
import json
import uuid
import zipfile
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
import sqlalchemy as sa

from relata.bootstrap import Container
from relata.cli.main import main
from relata.config.settings import Settings
from relata.domain.errors import Conflict
from relata.domain.models import CLI_ACTOR, AliasStatus, ReviewStatus, Workspace
from relata.domain.vocabulary import AuditAction, Resolution
from relata.exchange import formats
from relata.exchange.importing import _ID_NAMESPACE
from relata.exchange.reading import WorkspaceReader
from relata.exchange.records import ENTITY, ITEM, KINDS, RecordError
from relata.storage.sql import tables as t
from tests.support.ingest import built, drain
from tests.support.web import seed_demo


def _export(c: Container, ws: Workspace, fmt: str, **kw: Any) -> bytes:
    return b"".join(c.exchange.export(ws, fmt, actor=CLI_ACTOR, **kw))


def _decide(c: Container, ws: Workspace) -> dict[str, str]:
    """One decision of each kind, so that the export has some to carry."""
    alias = c.entities.aliases(ws.id)[0].alias
    c.entities.decide(ws.id, alias.id, AliasStatus.REJECTED, by="ann", note="two ships")
    rel = c.relationships.queue(ws.id)[0]
    c.relationships.review(ws.id, rel.id, ReviewStatus.CONFIRMED, by="ann", note="same array")
    dis = c.claims.disagreements(ws.id)[0]
    c.claims.resolve_disagreement(
        ws.id, dis.id, Resolution.POSITION_CORRECT, by="ann", position=1, note="the log"
    )
    return {"alias": alias.id, "relationship": rel.id, "disagreement": dis.id}


def _records(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.decode().splitlines()]


def _new_id(ws_id: str, old: str) -> str:
    return str(uuid.uuid5(_ID_NAMESPACE, f"{ws_id}/{old}"))


def _remapped(value: Any, ids: set[str], ws_id: str, keys: dict[str, str] | None = None) -> Any:
    """``value`` with every id of ``ids`` mapped as the import maps it, and the keys of
    ``keys`` replaced."""
    keys = keys or {}
    if isinstance(value, str):
        return _new_id(ws_id, value) if value in ids else keys.get(value, value)
    if isinstance(value, list):
        return [_remapped(v, ids, ws_id, keys) for v in value]
    if isinstance(value, dict):
        return {
            _remapped(k, ids, ws_id, keys): _remapped(v, ids, ws_id, keys) for k, v in value.items()
        }
    return value


#: The keys the pipeline derives from item ids, which the import derives again.
_KEYED = {
    "claim": ("dedupe_key",),
    "relationship": ("dedupe_key",),
    "contradiction": ("identity", "content"),
}


def _new_keys(
    before: list[dict[str, Any]], after: list[dict[str, Any]], ws_id: str
) -> dict[str, str]:
    by_id = {r["id"]: r for r in after}
    keys = {}
    for r in before:
        for name in _KEYED.get(r["record"], ()):
            keys[r[name]] = by_id[_new_id(ws_id, r["id"])][name]
    return keys


def _order(record: dict[str, Any]) -> tuple[int, str]:
    """Kinds in export order, then by id (new ids sort differently)."""
    return [k.name for k in KINDS].index(record["record"]), record["id"]


@pytest.fixture
def ws(demo_container: Container) -> Workspace:
    return demo_container.workspaces.resolve()


def test_graphml_reads_back_in_networkx_with_the_stores_counts(
    demo_container: Container, ws: Workspace, tmp_path: Path
) -> None:
    c = demo_container
    _decide(c, ws)
    path = tmp_path / "w.graphml"
    path.write_bytes(_export(c, ws, "graphml"))
    graph = nx.read_graphml(path)
    with c.db.read() as conn:

        def count(table: sa.Table, *where: Any) -> int:
            q = sa.select(sa.func.count()).select_from(table).where(table.c.workspace_id == ws.id)
            return int(conn.execute(q.where(*where)).scalar_one())

        items = count(t.items, t.items.c.deleted_at.is_(None))
        entities = count(t.entities)
        obs = t.entity_observations
        pairs = conn.execute(
            sa.select(sa.func.count()).select_from(
                sa.select(obs.c.item_id, obs.c.entity_id)
                .where(obs.c.workspace_id == ws.id)
                .distinct()
                .subquery()
            )
        ).scalar_one()
        edges = count(t.relationships) + pairs + count(t.entity_aliases) + count(t.contradictions)
    assert items == 5 and entities > 10 and pairs > 10
    assert graph.number_of_nodes() == items + entities
    assert graph.number_of_edges() == edges
    kinds = {d["kind"] for _, _, d in graph.edges(data=True)}
    assert kinds == {"relationship", "mentions", "alias", "contradicts"}
    confirmed = [d for _, _, d in graph.edges(data=True) if d.get("review_status") == "confirmed"]
    assert len(confirmed) == 1 and confirmed[0]["note"] == "same array"
    assert isinstance(confirmed[0]["score"], float)
    titles = {d["label"] for _, d in graph.nodes(data=True) if d["kind"] == "item"}
    assert len(titles) == 5


def test_csv_is_a_zip_of_one_file_per_kind_with_the_jsonl_columns(
    demo_container: Container, ws: Workspace
) -> None:
    c = demo_container
    _decide(c, ws)
    archive = zipfile.ZipFile(io.BytesIO(_export(c, ws, "csv")))
    names = archive.namelist()
    assert names == [
        "items.csv", "entities.csv", "mentions.csv", "aliases.csv", "claims.csv",
        "contradictions.csv", "disagreements.csv", "relationships.csv",
    ]  # fmt: skip
    reader = WorkspaceReader(c.db, ws.id)
    for kind, name in zip(KINDS, names, strict=True):
        rows = list(csv.reader(io.TextIOWrapper(archive.open(name), encoding="utf-8")))
        assert tuple(rows[0]) == kind.columns
        assert len(rows) - 1 == reader.count(kind), name
    aliases = list(csv.DictReader(io.TextIOWrapper(archive.open("aliases.csv"), "utf-8")))
    assert [a["note"] for a in aliases if a["status"] == "rejected"] == ["two ships"]


def test_jsonl_round_trips_into_a_new_workspace_with_its_decisions(
    demo_container: Container, ws: Workspace, tmp_path: Path
) -> None:
    c = demo_container
    decided = _decide(c, ws)
    first = _export(c, ws, "jsonl")
    path = tmp_path / "w.jsonl"
    path.write_bytes(first)

    report = c.exchange.import_jsonl(path, "copy", actor=CLI_ACTOR)
    copy = c.workspaces.resolve("copy")
    assert report.counts["item"] == 5 and report.originals == 0
    second = _records(_export(c, copy, "jsonl"))
    before = _records(first)
    assert second[0]["workspace"]["slug"] == "copy" and before[0]["workspace"]["slug"] == "default"
    ids = {r["id"] for r in before[1:]}
    assert not ids & {r["id"] for r in second[1:]}  # every id is a new one
    keys = _new_keys(before[1:], second[1:], copy.id)
    assert len(keys) > 30 and not set(keys) & set(keys.values())  # and every key
    expected = [_remapped(r, ids, copy.id, keys) for r in before[1:]]
    assert sorted(second[1:], key=_order) == sorted(expected, key=_order)

    # The decisions, as the services see them in the new workspace.
    new = {k: _new_id(copy.id, v) for k, v in decided.items()}
    rejected = c.entities.aliases(copy.id, status=AliasStatus.REJECTED)
    assert [(a.alias.id, a.alias.note) for a in rejected] == [(new["alias"], "two ships")]
    rel = c.relationships.get(copy.id, new["relationship"])
    assert rel.review_status == ReviewStatus.CONFIRMED and rel.reviewed_by == "ann"
    dis = c.claims.disagreement(copy.id, new["disagreement"])
    assert dis.resolution == Resolution.POSITION_CORRECT and dis.position == 0
    # The original workspace is untouched, and a second import into the copy is refused.
    assert _records(_export(c, ws, "jsonl"))[1:] == before[1:]
    with pytest.raises(Conflict, match="already holds"):
        c.exchange.import_jsonl(path, "copy", actor=CLI_ACTOR)

    events = c.audit.list(copy.id, action=AuditAction.WORKSPACE_IMPORTED)
    assert len(events) == 1 and events[0].details["items"] == 5
    assert events[0].details["entities"] > 10 and events[0].details["aliases"] >= 1
    exported = c.audit.list(ws.id, action=AuditAction.WORKSPACE_EXPORTED)
    assert [e.details["format"] for e in exported] == ["jsonl", "jsonl"]


def test_originals_travel_with_the_jsonl_when_asked(
    demo_container: Container, ws: Workspace, tmp_path: Path
) -> None:
    c = demo_container
    data = _export(c, ws, "jsonl", with_originals=True)
    items = [r for r in _records(data) if r["record"] == "item"]
    assert all(r["text"] and base64.b64decode(r["original"]) for r in items)
    assert all("original" not in r for r in _records(_export(c, ws, "jsonl")))
    path = tmp_path / "w.jsonl"
    path.write_bytes(data)
    report = c.exchange.import_jsonl(path, "with-originals", actor=CLI_ACTOR)
    assert report.originals == 5
    copy = c.workspaces.resolve("with-originals")
    for r in items:
        stored = c.items.original(copy.id, _new_id(copy.id, r["id"]))
        assert stored.path.read_bytes() == base64.b64decode(r["original"])
    with pytest.raises(Exception, match="jsonl format only"):
        _export(c, ws, "csv", with_originals=True)
    # An original that is not the one its item describes is refused.
    records = _records(data)
    records[1]["original"] = base64.b64encode(b"something else").decode()
    with pytest.raises(RecordError, match="line 2: item: original does not match"):
        c.exchange.import_jsonl(_write(tmp_path / "x.jsonl", records), "x", actor=CLI_ACTOR)
    records[1]["original"] = "not base64!"
    with pytest.raises(RecordError, match="line 2: item: original is not base64"):
        c.exchange.import_jsonl(_write(tmp_path / "x.jsonl", records), "x", actor=CLI_ACTOR)


def test_reprocessing_an_import_keeps_its_records_and_decisions(
    demo_container: Container, ws: Workspace, tmp_path: Path
) -> None:
    """The keys derived from item ids are derived again from the new ids, so the pipeline
    run over the imported originals finds the imported records: no second copy of any, and
    the decisions stand."""
    c = demo_container
    decided = _decide(c, ws)
    path = tmp_path / "w.jsonl"
    path.write_bytes(_export(c, ws, "jsonl", with_originals=True))
    c.exchange.import_jsonl(path, "again", actor=CLI_ACTOR)
    copy = c.workspaces.resolve("again")
    imported = _records(_export(c, copy, "jsonl"))[1:]
    for item in c.items.list(copy.id, limit=50):
        c.items.reprocess(copy.id, item.id, from_stage="parse")
    drain(c)
    after = _records(_export(c, copy, "jsonl"))[1:]
    assert [i.chunk_count > 0 for i in c.items.list(copy.id, limit=50)] == [True] * 5

    def keys(records: list[dict[str, Any]], kind: str, key: str) -> list[str]:
        return sorted(r[key] for r in records if r["record"] == kind)

    for kind, key in [
        ("claim", "dedupe_key"),
        ("contradiction", "identity"),
        ("disagreement", "key"),
        ("alias", "pair_key"),
    ]:
        assert keys(after, kind, key) == keys(imported, kind, key), kind
    # Reprocessing may add a relationship (it does in the source workspace too: the
    # entities' rarity changes as items are processed again), never a second one of a pair.
    related = keys(after, "relationship", "dedupe_key")
    assert set(keys(imported, "relationship", "dedupe_key")) <= set(related)
    pairs = [
        frozenset((r["source_id"], r["target_id"])) for r in after if r["record"] == "relationship"
    ]
    assert len(pairs) == len(set(pairs)) == len(related)
    new = {k: _new_id(copy.id, v) for k, v in decided.items()}
    assert c.relationships.get(copy.id, new["relationship"]).review_status == ReviewStatus.CONFIRMED
    assert c.claims.disagreement(copy.id, new["disagreement"]).resolution is not None
    rejected = c.entities.aliases(copy.id, status=AliasStatus.REJECTED)
    assert [a.alias.id for a in rejected] == [new["alias"]]


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: {**r, "record": "secret"}, "line 3: unknown record kind 'secret'"),
        (lambda r: {**r, "title": 7}, "line 3: item: title must be a string"),
        (lambda r: {**r, "title": "x" * 501}, "line 3: item: title is longer than 500"),
        (lambda r: {**r, "source_type": "exe"}, "line 3: item: source_type must be one of"),
        (lambda r: {**r, "size_bytes": True}, "line 3: item: size_bytes must be an integer"),
        (lambda r: {**r, "sneaky": 1}, "line 3: item has unknown fields: sneaky"),
        (lambda r: {**r, "id": "../../etc"}, "line 3: item: id must be a lowercase UUID"),
        (lambda r: {**r, "ingested_at": "2020-01-01T00:00"}, "must carry its UTC offset"),
        (lambda r: [r], "line 3: a record must be a JSON object"),
        (lambda r: {**r, "title": "a\x00b"}, "line 3: item: title holds a NUL"),
        (lambda r: {**r, "title": "\ud800"}, "line 3: item: title holds a NUL or a character"),
        (lambda r: {**r, "size_bytes": 2**63}, "size_bytes must be an integer of at most"),
        (lambda r: {**r, "metadata": {"k": "\x00"}}, "line 3: item: metadata must be JSON"),
    ],
)
def test_a_bad_record_is_refused_with_its_line_before_anything_is_written(
    demo_container: Container, ws: Workspace, tmp_path: Path, change: Any, message: str
) -> None:
    c = demo_container
    records = _records(_export(c, ws, "jsonl"))
    records[2] = change(records[2])  # the second item
    path = _write(tmp_path / "bad.jsonl", records)
    with pytest.raises(RecordError) as caught:
        c.exchange.import_jsonl(path, "bad", actor=CLI_ACTOR)
    assert message in caught.value.message
    with pytest.raises(Exception, match="does not exist"):
        c.workspaces.resolve("bad")


def test_references_header_length_and_repeats_are_checked(
    demo_container: Container, ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = demo_container
    records = _records(_export(c, ws, "jsonl"))
    first_mention = next(i for i, r in enumerate(records) if r["record"] == "mention")
    cases = [
        (records[1:], "line 1: not a Relata export"),
        ([{**records[0], "version": 99}, *records[1:]], "format version 99"),
        (
            [*records[:first_mention], {**records[first_mention], "item_id": str(uuid.uuid4())}],
            f"line {first_mention + 1}: mention: item_id names no item on an earlier line",
        ),
        ([*records[:3], records[2]], "line 4: item "),
    ]
    for lines, message in cases:
        with pytest.raises(RecordError, match=message):
            c.exchange.import_jsonl(_write(tmp_path / "x.jsonl", lines), "x", actor=CLI_ACTOR)
    path = tmp_path / "long.jsonl"
    path.write_bytes(json.dumps(records[0]).encode() + b"\n" + b"[" * 10_000 + b"\n")
    with pytest.raises(RecordError, match="line 2: not a JSON object"):
        c.exchange.import_jsonl(path, "x", actor=CLI_ACTOR)
    bound = len(json.dumps(records[0])) + 1
    monkeypatch.setattr("relata.exchange.importing.RECORD_BYTES", bound)
    monkeypatch.setattr(c.exchange, "_max_upload", 0)
    with pytest.raises(RecordError, match=f"line 2: the line is longer than {bound} bytes"):
        c.exchange.import_jsonl(_write(tmp_path / "y.jsonl", records[:3]), "x", actor=CLI_ACTOR)


def test_the_commands_export_and_import(
    demo_container: Container, ws: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = demo_container
    with pytest.MonkeyPatch.context() as m:
        m.setenv("RELATA_DATA_DIR", str(c.settings.data_path))
        m.setenv("RELATA_DATABASE_URL", c.settings.database_url)
        m.setenv("RELATA_EMBEDDING_PROVIDER", "none")
        out = tmp_path / "w.jsonl"
        assert main(["export", "--format", "jsonl", "--out", str(out)]) == 0
        assert "exported workspace 'default' as jsonl" in capsys.readouterr().out
        assert main(["export", "--format", "jsonl", "--out", str(out)]) == 1
        assert "exists" in capsys.readouterr().err
        assert main(["import", str(out), "--workspace", "from-cli"]) == 0
        assert "into workspace 'from-cli': 5 items" in capsys.readouterr().out
        assert main(["import", str(out), "--workspace", "from-cli"]) == 1
        assert "already holds items" in capsys.readouterr().err
        graph = tmp_path / "w.graphml"
        args = ["--workspace", "from-cli", "--format", "graphml", "--out", str(graph)]
        assert main(["export", *args]) == 0
    copy = c.workspaces.resolve("from-cli")
    entities = WorkspaceReader(c.db, copy.id).count(ENTITY)
    assert entities > 10
    assert nx.read_graphml(graph).number_of_nodes() == 5 + entities


def test_small_batches_give_the_same_export_one_batch_at_a_time(
    demo_container: Container, ws: Workspace, tmp_path: Path
) -> None:
    """Keyset paging neither repeats nor drops a row, and each batch is written out before
    the next is read: with 3 rows a batch, JSON Lines comes one chunk per batch."""
    c = demo_container
    whole = WorkspaceReader(c.db, ws.id)
    small = WorkspaceReader(c.db, ws.id, batch_rows=3)
    header = {"workspace": {"slug": ws.slug}}
    chunks = list(formats.jsonl(small, header))
    expected_chunks = 1 + sum(-(-whole.count(k) // 3) for k in KINDS)
    assert len(chunks) == expected_chunks
    assert all(len(chunk.splitlines()) <= 3 for chunk in chunks[1:])
    assert b"".join(chunks) == b"".join(formats.jsonl(whole, header))
    for name, reader in (("small", small), ("whole", whole)):
        (tmp_path / f"{name}.graphml").write_bytes(b"".join(formats.graphml(reader, "g")))
    one, other = (nx.read_graphml(tmp_path / f"{n}.graphml") for n in ("small", "whole"))
    assert sorted(one.edges()) == sorted(other.edges()) and one.number_of_edges() > 30
    assert zipfile.ZipFile(io.BytesIO(b"".join(formats.csv_zip(small)))).testzip() is None


@pytest.mark.both_dialects
def test_round_trip_and_graph_on_both_dialects(settings: Settings, tmp_path: Path) -> None:
    """The demo corpus processed on each database, exported, imported, exported again."""
    with built(settings, embedding_provider="none") as c:
        seed_demo(c)
        ws = c.workspaces.resolve()
        _decide(c, ws)
        first = _export(c, ws, "jsonl")
        path = tmp_path / "w.jsonl"
        path.write_bytes(first)
        c.exchange.import_jsonl(path, "copy", actor=CLI_ACTOR)
        copy = c.workspaces.resolve("copy")
        before = _records(first)[1:]
        ids = {r["id"] for r in before}
        again = _records(_export(c, copy, "jsonl"))[1:]
        keys = _new_keys(before, again, copy.id)
        expected = sorted((_remapped(r, ids, copy.id, keys) for r in before), key=_order)
        assert sorted(again, key=_order) == expected
        assert {r["record"] for r in before} == {k.name for k in KINDS}
        graph = tmp_path / "copy.graphml"
        graph.write_bytes(_export(c, copy, "graphml"))
        reader = WorkspaceReader(c.db, copy.id)
        nodes = reader.count(ITEM) + reader.count(ENTITY)
        assert nx.read_graphml(graph).number_of_nodes() == nodes
