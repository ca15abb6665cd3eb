"""The ``embed_item`` stage on real SQLite (with the embedded vector store):
one vector per chunk stamped with its model, ``ready`` only after the last stage, provider
``none`` recorded as skipped, another width refused with nothing written, idempotent runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relata.bootstrap import Container
from relata.cli.main import main
from relata.config.settings import Settings
from relata.domain.cancel import Cancel
from relata.domain.models import Chunk, ItemStatus, JobStatus
from relata.embeddings.stage import MAX_PASSAGE_CHARS, MAX_TITLE_CHARS, passage
from relata.ingest.service import IngestRequest
from tests.support.fake_embedder import FakeEmbedder
from tests.support.ingest import STAGE_JOBS, STAGES, built, drain, workspace_id

MARKDOWN = (
    b"# Tidal notes\n\n## Turbines\n\nThe array has twelve turbines. Each is rated at 1.5 MW.\n\n"
    b"## Seals\n\nThe seal colony on Skerry Rock grew from 131 to 143 animals.\n"
)
SMALL_CHUNKS = {"chunk_target_chars": 200, "chunk_overlap_chars": 0}


def _chunk(text: str, heading_path: tuple[str, ...] = ()) -> Chunk:
    return Chunk(
        id="c",
        workspace_id="w",
        item_id="i",
        sequence=0,
        text=text,
        content_hash="h",
        start_offset=0,
        end_offset=len(text),
        heading_path=heading_path,
    )


def test_the_passage_is_title_heading_path_and_text_bounded() -> None:
    chunk = _chunk("The seal colony grew.", ("Tidal notes", "Seals"))
    # The heading path's leading repeat of the title is dropped.
    assert passage("Tidal notes", chunk) == "Tidal notes\nSeals\nThe seal colony grew."
    assert passage("", _chunk("Only text.")) == "Only text."
    long = passage("T" * 1000, _chunk("x" * 20_000, ("H" * 1000,)))
    assert long.startswith("T" * MAX_TITLE_CHARS + "\n") and len(long) == MAX_PASSAGE_CHARS


def test_an_ingested_document_gets_one_vector_per_chunk_with_the_local_model(
    container: Container,
) -> None:
    c = container
    ws = workspace_id(c)
    item = c.ingest.ingest(ws, IngestRequest(data=MARKDOWN, filename="notes.md"))
    jobs = drain(c)
    assert [j.kind for j in jobs] == STAGE_JOBS
    assert all(j.status is JobStatus.SUCCEEDED for j in jobs)

    assert c.repos.items.get(ws, item.id).status is ItemStatus.READY
    chunks = c.repos.chunks.list_for_item(ws, item.id)
    assert len(chunks) >= 1 and c.vectors.count(ws) == len(chunks)
    assert {ch.embedding_model for ch in chunks} == {"all-MiniLM-L6-v2"}
    [seen] = c.repos.model_versions.list(ws)
    assert (seen.kind, seen.name, seen.dimensions) == ("embedding", "all-MiniLM-L6-v2", 384)
    [embed_run] = [r for r in c.repos.runs.list_for_item(ws, item.id) if r.stage == "embed"]
    assert embed_run.outcome == "succeeded"
    assert embed_run.versions == {"embedding_model": "all-MiniLM-L6-v2"}
    assert embed_run.details["chunks"] == len(chunks) and embed_run.details["provider"] == "local"
    # The vectors mean something: the seal question finds a passage of this item.
    assert c.embedder is not None
    [query] = c.embedder.embed(["How many seals live on Skerry Rock?"], Cancel.never())
    hits = c.vectors.search(ws, query, k=1)
    assert hits and hits[0].item_id == item.id
    assert c.metrics.registry.get_sample_value(
        "relata_embedded_chunks_total", {"provider": "local", "path": "stage"}
    ) == len(chunks)


def test_passages_carry_the_title_and_are_sent_in_one_call(settings: Settings) -> None:
    fake = FakeEmbedder()
    with built(settings, embedder=fake, **SMALL_CHUNKS) as c:
        ws = workspace_id(c)
        item = c.ingest.ingest(ws, IngestRequest(data=MARKDOWN, filename="notes.md"))
        drain(c)
        chunks = c.repos.chunks.list_for_item(ws, item.id)
        assert len(chunks) >= 2
        assert fake.calls == [len(chunks)]  # one read, one embed call, one upsert
        assert all(t.startswith("Tidal notes\n") for t in fake.texts)
        assert any(t.startswith("Tidal notes\nSeals\n") for t in fake.texts)


def test_without_a_provider_ingestion_completes_and_the_stage_is_recorded_skipped(
    settings: Settings,
) -> None:
    with built(settings, embedding_provider="none") as c:
        assert c.embedder is None
        ws = workspace_id(c)
        item = c.ingest.ingest(ws, IngestRequest(data=MARKDOWN, filename="notes.md"))
        assert [j.kind for j in drain(c)] == [k for k in STAGE_JOBS if k != "embed_item"]
        assert c.repos.items.get(ws, item.id).status is ItemStatus.READY
        runs = c.repos.runs.list_for_item(ws, item.id)
        assert [(r.stage, r.outcome) for r in runs] == [
            ("parse", "succeeded"),
            ("chunk", "succeeded"),
            ("embed", "skipped"),
            ("entities", "succeeded"),
            ("claims", "succeeded"),
            ("relationships", "succeeded"),
        ]
        assert runs[2].details["reason"] == "no embedding provider"
        assert c.vectors.count(ws) == 0
        assert {ch.embedding_model for ch in c.repos.chunks.list_for_item(ws, item.id)} == {None}
        assert c.repos.model_versions.list(ws) == []


def test_a_model_of_another_width_is_refused_and_nothing_is_written(settings: Settings) -> None:
    with built(settings, embedder=FakeEmbedder(384, "model-a")) as c:
        ws = workspace_id(c)
        kept = c.ingest.ingest(ws, IngestRequest(data=MARKDOWN, filename="notes.md"))
        drain(c)
        before = c.vectors.count(ws)
        assert before == c.repos.chunks.count(ws) >= 1
    # The model changed to one of width 8, but RELATA_EMBEDDING_DIMENSIONS still says 384.
    narrow = FakeEmbedder(8, "model-b")
    with built(settings, embedder=narrow, embedding_dimensions=384) as c:
        item = c.ingest.ingest(ws, IngestRequest(text="A new note about the seal colony."))
        jobs = drain(c)
        embed = jobs[-1]
        assert embed.kind == "embed_item" and embed.status is JobStatus.FAILED
        assert embed.attempts == 1  # permanent: not retried
        assert "RELATA_EMBEDDING_DIMENSIONS=8" in (embed.last_error or "")
        failed = c.repos.items.get(ws, item.id)
        assert failed.status is ItemStatus.FAILED
        assert failed.error and failed.error.startswith("embed failed:")
        assert "RELATA_EMBEDDING_DIMENSIONS=8" in failed.error
        assert narrow.calls == []  # refused before any text was sent
        assert c.vectors.count(ws) == before  # nothing written, nothing mixed
        assert {ch.embedding_model for ch in c.repos.chunks.list_for_item(ws, item.id)} == {None}
        assert c.repos.items.get(ws, kept.id).status is ItemStatus.READY
        assert [m.name for m in c.repos.model_versions.list(ws)] == ["model-a"]


class _LyingEmbedder(FakeEmbedder):
    """Says 384 but answers with vectors of another width: the vector store refuses."""

    @property
    def dimensions(self) -> int:
        return 384


def test_the_vector_store_refuses_vectors_of_another_width(settings: Settings) -> None:
    with built(settings, embedder=_LyingEmbedder(12, "liar")) as c:
        ws = workspace_id(c)
        item = c.ingest.ingest(ws, IngestRequest(text="Twelve turbines and a seal colony."))
        embed = drain(c)[-1]
        assert embed.status is JobStatus.FAILED and embed.attempts == 1
        assert "RELATA_EMBEDDING_DIMENSIONS=12" in (embed.last_error or "")
        assert c.vectors.count(ws) == 0
        assert c.repos.items.get(ws, item.id).status is ItemStatus.FAILED


def test_reprocessing_overwrites_the_same_vectors(settings: Settings) -> None:
    with built(settings, embedder=FakeEmbedder(), **SMALL_CHUNKS) as c:
        ws = workspace_id(c)
        item = c.ingest.ingest(ws, IngestRequest(data=MARKDOWN, filename="notes.md"))
        drain(c)
        chunks = c.repos.chunks.count(ws)
        c.items.reprocess(ws, item.id)
        assert [j.kind for j in drain(c)] == STAGE_JOBS
        assert c.vectors.count(ws) == chunks == c.repos.chunks.count(ws)
        runs = c.repos.runs.list_for_item(ws, item.id)
        assert [r.stage for r in runs] == STAGES * 2
        assert c.repos.items.get(ws, item.id).status is ItemStatus.READY


def test_an_embed_stage_for_a_deleted_item_fails_at_once(settings: Settings) -> None:
    with built(settings, embedder=FakeEmbedder()) as c:
        ws = workspace_id(c)
        item = c.ingest.ingest(ws, IngestRequest(text="Soon gone."))
        pool = c.worker_pool(workers=1, name="test")
        pool.run_one()
        pool.run_one()  # parse, chunk
        c.items.delete(ws, item.id)
        job = pool.run_one()
        assert job is not None and job.kind == "embed_item"
        assert job.status is JobStatus.FAILED and job.attempts == 1
        assert "NotFound" in (job.last_error or "")
        assert c.vectors.count(ws) == 0


def test_an_embed_job_left_from_a_provider_settles_the_item_without_one(
    settings: Settings,
) -> None:
    with built(settings, embedder=FakeEmbedder()) as c:
        ws = workspace_id(c)
        item = c.ingest.ingest(ws, IngestRequest(text="Made while a provider was configured."))
        pool = c.worker_pool(workers=1, name="test")
        pool.run_one()
        pool.run_one()  # parse, chunk: embed_item is pending
    with built(settings, embedding_provider="none") as c:
        job, *following = drain(c)
        assert job.kind == "embed_item" and job.status is JobStatus.SUCCEEDED
        assert [j.kind for j in following] == STAGE_JOBS[STAGE_JOBS.index("embed_item") + 1 :]
        assert c.repos.items.get(ws, item.id).status is ItemStatus.READY
        runs = c.repos.runs.list_for_item(ws, item.id)
        embed = [(r.stage, r.outcome) for r in runs].index(("embed", "skipped"))
        assert [r.outcome for r in runs[embed + 1 :]] == ["succeeded"] * len(following)


def test_bench_embed_times_the_stage_path_on_the_same_texts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    rows = [
        {"_id": str(i), "title": f"Title {i}", "text": "Seals and turbines. " * i} for i in range(8)
    ]
    corpus.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    monkeypatch.setenv("RELATA_DATA_DIR", str(tmp_path / "data"))
    assert main(["bench", "embed", "--jsonl", str(corpus), "--limit", "6", "--json"]) == 0
    out = capsys.readouterr().out
    report = json.loads(out.strip().splitlines()[-1])
    assert report["texts"] == 6 and report["vectors_stored"] == 6
    assert report["stage_texts_per_s"] > 0 and report["raw_onnxruntime_texts_per_s"] > 0
    # The ratio is reported to 3 decimals: allow that rounding beside the 5%.
    expected = report["raw_onnxruntime_seconds"] / report["stage_seconds"]
    assert report["stage_ratio"] == pytest.approx(expected, rel=0.05, abs=6e-4)
    assert report["command"] == f"relata bench embed --jsonl {corpus} --limit 6"
    assert "embed stage" in out and "ratio to raw" in out
    assert not (tmp_path / "data" / "relata.db").exists()  # a temporary store, not the data dir
