"""Re-embedding a workspace on real SQLite (the pending-job check on PostgreSQL too): bounded
batches that re-enqueue themselves until vector count = chunk count, one pending job per
request, the rebuild of lost vectors, the recovery of items a refused width failed, and ``relata
reembed --wait``."""

from __future__ import annotations

import pytest

from relata.bootstrap import Container
from relata.cli.main import main
from relata.config.settings import Settings
from relata.domain.errors import Conflict
from relata.domain.models import ItemStatus, JobStatus
from relata.embeddings.reembed import REEMBED_WORKSPACE
from relata.ingest.service import IngestRequest
from tests.support.fake_embedder import FakeEmbedder
from tests.support.ingest import built, drain, workspace_id

DOCS = [
    "# Turbines\n\nThe array has twelve turbines. Each is rated at 1.5 MW. "
    "Maintenance happens in spring.\n\n## Cables\n\nExport cables run to the harbour.",
    "# Seals\n\nThe colony on Skerry Rock grew from 131 to 143 animals. Pups are counted "
    "in autumn.\n\n## Method\n\nCounts are made from the cliff path at low tide.",
    "# Council minutes\n\nThe council approved the slipway repairs. The harbour master "
    "reported on the dredging.\n\n## Budget\n\nThe budget was agreed without changes.",
]
SMALL = {"chunk_target_chars": 120, "chunk_overlap_chars": 0}


def _ingest_all(c: Container) -> str:
    ws = workspace_id(c)
    for i, text in enumerate(DOCS):
        c.ingest.ingest(ws, IngestRequest(text=text, title=f"Document {i}"))
    drain(c)
    return ws


def test_reembedding_converges_to_one_vector_per_chunk_across_batches(
    settings: Settings,
) -> None:
    with built(settings, embedder=FakeEmbedder(384, "model-a"), **SMALL) as c:
        ws = _ingest_all(c)
        chunks = c.repos.chunks.count(ws)
        assert chunks >= 6 and c.vectors.count(ws) == chunks
    # A model of another width: its vectors go to a store of that width, empty so far.
    new_model = FakeEmbedder(16, "model-b")
    with built(settings, embedder=new_model, reembed_batch_size=2, **SMALL) as c:
        assert c.vectors.count(ws) == 0
        assert c.model_status.counts(ws).embedded_other == {"model-a": chunks}
        first = c.reembed.start(ws)
        assert first is not None and first.idempotency_key == f"reembed:{ws}:model-b"
        jobs = drain(c)
        assert {j.kind for j in jobs} == {REEMBED_WORKSPACE}
        assert all(j.status is JobStatus.SUCCEEDED for j in jobs)
        # Batches of 2, each job re-enqueuing the next: never one long lease.
        assert len(jobs) >= chunks // 2 and max(new_model.calls) <= 2
        assert [j.payload["done"] for j in jobs] == sorted(j.payload["done"] for j in jobs)
        assert c.vectors.count(ws) == chunks == c.repos.chunks.count(ws)
        counts = c.model_status.counts(ws)
        assert counts.embedded_current == chunks and counts.embedded_other == {}
        assert {m.name: m.dimensions for m in c.repos.model_versions.list(ws)} == {
            "model-a": 384,
            "model-b": 16,
        }
        # Nothing left: asking again queues nothing at all.
        assert c.reembed.start(ws) is None
        assert drain(c) == []


@pytest.mark.both_dialects
def test_asking_again_while_pending_returns_the_same_job(settings: Settings) -> None:
    with built(settings, embedder=FakeEmbedder()) as c:
        ws = _ingest_all(c)
        c.repos.chunks.clear_embedding_model(ws)
        first = c.reembed.start(ws)
        assert first is not None
        again = c.reembed.start(ws)
        assert again is not None and again.id == first.id
        rebuild = c.reembed.start(ws, all_chunks=True)
        assert rebuild is not None and rebuild.id != first.id and rebuild.payload["all"] is True
        assert c.reembed.outstanding(ws)
        drain(c)
        assert not c.reembed.outstanding(ws)


def test_a_rebuild_restores_lost_vectors(settings: Settings) -> None:
    with built(settings, embedder=FakeEmbedder(), reembed_batch_size=3, **SMALL) as c:
        ws = _ingest_all(c)
        chunks = c.repos.chunks.count(ws)
        item = c.items.list(ws)[0]
        c.vectors.delete_by_item(ws, item.id)  # lost behind the chunks' back
        assert c.vectors.count(ws) < chunks
        c.reembed.start(ws)
        drain(c)
        assert c.vectors.count(ws) < chunks  # every chunk says it is embedded: no-op
        c.reembed.start(ws, all_chunks=True)
        jobs = drain(c)
        assert len(jobs) >= 2 and all(j.status is JobStatus.SUCCEEDED for j in jobs)
        assert c.vectors.count(ws) == chunks
        # The status page counts what the rebuild did (it said 0 before the last batch's
        # follow-up carried the total).
        state = c.model_status.status(ws).reembed
        assert state is not None and state.status == "succeeded" and state.chunks_done == chunks


def test_items_a_refused_width_failed_are_ready_after_the_fix_and_a_reembed(
    settings: Settings,
) -> None:
    with built(settings, embedder=FakeEmbedder(8, "model-b"), embedding_dimensions=384) as c:
        ws = workspace_id(c)
        item = c.ingest.ingest(ws, IngestRequest(text=DOCS[0]))
        drain(c)
        assert c.repos.items.get(ws, item.id).status is ItemStatus.FAILED
    # The operator sets RELATA_EMBEDDING_DIMENSIONS=8 and re-embeds.
    with built(settings, embedder=FakeEmbedder(8, "model-b"), embedding_dimensions=8) as c:
        c.reembed.start(ws)
        drain(c)
        fixed = c.repos.items.get(ws, item.id)
        assert fixed.status is ItemStatus.READY and fixed.error is None
        assert c.vectors.count(ws) == c.repos.chunks.count(ws) >= 1


def test_reembedding_needs_an_embedding_provider(settings: Settings) -> None:
    with (
        built(settings, embedding_provider="none") as c,
        pytest.raises(Conflict, match="RELATA_EMBEDDING_PROVIDER=none"),
    ):
        c.reembed.start(workspace_id(c))


def test_relata_reembed_wait_embeds_what_was_ingested_without_a_provider(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with built(settings, embedding_provider="none") as c:
        ws = _ingest_all(c)
        chunks = c.repos.chunks.count(ws)
    monkeypatch.setenv("RELATA_DATA_DIR", settings.data_dir)
    monkeypatch.setenv("RELATA_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("RELATA_EMBEDDING_PROVIDER", "local")
    monkeypatch.setenv("RELATA_JOB_POLL_SECONDS", "0.05")
    assert main(["reembed", "--wait", "--timeout", "120"]) == 0
    out = capsys.readouterr().out
    assert "re-embedding workspace 'default' with all-MiniLM-L6-v2" in out
    assert f"{chunks}/{chunks} chunks embedded with the current model" in out
    assert f"{chunks} vectors stored" in out
    with built(settings) as c:
        assert c.vectors.count(ws) == chunks
