"""``relata backup`` / ``relata restore`` of the embedded default: a backup taken while items
are being ingested, processed and deleted restores to a consistent deployment, which then
finishes the work it was in the middle of; an item deleted between the database copy and
its original's copy is not restored without its original; damaged backups and data dirs
that hold a deployment are refused."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import sqlalchemy as sa

from relata.bootstrap import Container
from relata.cli.main import main
from relata.config.settings import Settings
from relata.domain.cancel import Cancel
from relata.domain.errors import Conflict, ValidationError
from relata.domain.models import CLI_ACTOR, ItemStatus
from relata.ids import content_hash
from relata.ingest.service import IngestRequest
from relata.storage.sql import tables as t
from relata.transfer.backup import DB_FILE, MANIFEST, ORIGINALS_LIST, backup, restore
from tests.support.fake_embedder import FakeEmbedder
from tests.support.ingest import built, drain

WIDTH = 384
FREE_EMBEDS = 3


class GatedEmbedder(FakeEmbedder):
    """Embeds the first ``free`` calls at once; later calls wait for ``gate``, so while it is
    closed some items are stuck in the middle of the pipeline, whatever the machine's speed."""

    def __init__(self, free: int) -> None:
        super().__init__(WIDTH)
        self.gate = threading.Event()
        self.blocked = threading.Event()
        self._free = free
        self._count = 0
        self._count_lock = threading.Lock()

    def embed(self, texts: Sequence[str], cancel: Cancel) -> list[list[float]]:
        with self._count_lock:
            self._count += 1
            wait = self._count > self._free
        if wait:
            self.blocked.set()
            if not self.gate.wait(120):
                raise TimeoutError("the test never opened the gate")
        return super().embed(texts, cancel)


def document(n: int) -> IngestRequest:
    paragraphs = [
        f"Report {n}, part {p}. The survey of station {n} counted {n * 7 + p} seals and noted "
        f"that the tide gauge at pier {p} read {n + p}.{p} metres at dawn. " * 6
        for p in range(4)
    ]
    return IngestRequest(data="\n\n".join(paragraphs).encode(), filename=f"report-{n}.txt")


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for key in [k for k in os.environ if k.startswith("RELATA_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("RELATA_EMBEDDING_PROVIDER", "none")
    monkeypatch.setenv("RELATA_LOG_FORMAT", "text")
    yield tmp_path


def use_data_dir(monkeypatch: pytest.MonkeyPatch, data: Path) -> None:
    monkeypatch.setenv("RELATA_DATA_DIR", str(data))


def settings_at(data: Path) -> Settings:
    return Settings(data_dir=str(data), vector_store="sqlite-vec", job_lease_seconds=1.0)


# ---------------------------------------------------------------- consistency
def assert_consistent(c: Container) -> dict[str, int]:
    """The invariants a restored deployment must hold at once, over its live items (an
    item being deleted at the instant of the copy is hidden, its vectors possibly gone
    already: deletion removes the vectors, then the original, then the row); returns a few
    counts."""
    with c.db.read() as conn:
        assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
        assert conn.exec_driver_sql("PRAGMA foreign_key_check").all() == []
        items = conn.execute(sa.select(t.items)).all()
        chunks = conn.execute(
            sa.select(t.chunks.c.id, t.chunks.c.item_id, t.chunks.c.embedding_model)
        ).all()
    live = {i.id: i for i in items if i.deleted_at is None}
    for item in live.values():  # every live item has its original, the very bytes it came from
        data = c.items.original(item.workspace_id, item.id).path.read_bytes()
        assert content_hash(data) == item.content_hash
    chunks = [ch for ch in chunks if ch.item_id in live]
    per_item: dict[str, int] = {}
    for chunk in chunks:
        per_item[chunk.item_id] = per_item.get(chunk.item_id, 0) + 1
    for item in live.values():
        if item.status == ItemStatus.READY.value:
            assert item.chunk_count == per_item.get(item.id, 0) > 0
    ws = c.workspaces.resolve().id
    vectors = {r.chunk_id for r in c.vectors.export(ws, limit=1000) if r.item_id in live}
    chunk_ids = {ch.id for ch in chunks}
    embedded = {ch.id for ch in chunks if ch.embedding_model}
    # A live item's vectors are its chunks'; every chunk marked embedded has its vector (the
    # vector is written before the chunk is marked).
    assert vectors <= chunk_ids
    assert embedded <= vectors
    return {
        "items": len(live),
        "ready": sum(i.status == ItemStatus.READY.value for i in live.values()),
        "chunks": len(chunks),
        "embedded": len(embedded),
        "vectors": len(vectors),
    }


def test_a_backup_taken_while_ingesting_restores_to_a_consistent_deployment(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source, dest, restored = env / "source", env / "backup", env / "restored"
    gated = GatedEmbedder(FREE_EMBEDS)
    with built(settings_at(source), embedder=gated) as c:
        ws = c.workspaces.resolve().id
        first = [c.ingest.ingest(ws, document(n), actor=CLI_ACTOR).id for n in range(8)]
        pool = c.worker_pool(workers=3, name="ingest")
        pool.start()
        try:
            assert gated.blocked.wait(120), "the pipeline never reached the gated embedder"
            churned: list[str] = []

            def churn() -> None:  # more uploads and some deletions while the backup runs
                for n in range(8, 20):
                    churned.append(c.ingest.ingest(ws, document(n), actor=CLI_ACTOR).id)
                    if n % 4 == 0:
                        c.items.delete(ws, first[n // 4 - 2], actor=CLI_ACTOR)

            thread = threading.Thread(target=churn)
            thread.start()
            use_data_dir(monkeypatch, source)
            assert main(["backup", str(dest)]) == 0
            thread.join(120)
            assert not thread.is_alive()
        finally:
            gated.gate.set()
            pool.stop(30)
    assert "backed up" in capsys.readouterr().out

    use_data_dir(monkeypatch, restored)
    assert main(["restore", str(dest)]) == 0
    with built(settings_at(restored), embedder=FakeEmbedder(WIDTH)) as c:
        at_backup = assert_consistent(c)
        # Taken in the middle: the gate held back every item past the first embeddings.
        assert at_backup["ready"] < at_backup["items"]
        # The restored deployment finishes the work in flight (jobs leased by the backed-up
        # workers are reclaimed once their one-second leases lapse).
        deadline = time.monotonic() + 120
        while True:
            c.worker_pool(workers=1, name="restored").reap()
            drain(c)
            with c.db.read() as conn:
                unsettled = conn.execute(
                    sa.select(sa.func.count()).where(t.jobs.c.status.in_(["pending", "running"]))
                ).scalar()
            if not unsettled:
                break
            assert time.monotonic() < deadline, "the restored deployment never settled"
            time.sleep(0.2)
        done = assert_consistent(c)
        assert done["ready"] == done["items"] == at_backup["items"]
        assert done["vectors"] == done["embedded"] == done["chunks"]


def test_an_item_deleted_between_the_database_copy_and_its_original_is_not_restored(
    env: Path,
) -> None:
    source = env / "source"
    with built(settings_at(source), embedder=FakeEmbedder(WIDTH)) as c:
        ws = c.workspaces.resolve().id
        kept = c.ingest.ingest(ws, document(1)).id
        doomed = c.ingest.ingest(ws, document(2)).id
        drain(c)
        deletions = [doomed]

        def delete_once() -> None:
            if deletions:
                c.items.delete(ws, deletions.pop())

        report = backup(
            c.settings.data_path / DB_FILE,
            c.settings.data_path,
            env / "backup",
            vector_width=WIDTH,
            after_snapshot=delete_once,
        )
    assert report.attempts == 2  # the first copy still had the deleted item
    restore(env / "backup", env / "restored")
    with built(settings_at(env / "restored"), embedder=FakeEmbedder(WIDTH)) as c:
        assert_consistent(c)
        assert [i.id for i in c.repos.items.list(c.workspaces.resolve().id, limit=10)] == [kept]


# ---------------------------------------------------------------- refusals
@pytest.fixture
def a_backup(env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    with built(settings_at(env / "source"), embedder=FakeEmbedder(WIDTH)) as c:
        c.ingest.ingest(c.workspaces.resolve().id, document(1))
        drain(c)
    use_data_dir(monkeypatch, env / "source")
    assert main(["backup", str(env / "backup")]) == 0
    return env / "backup"


def test_restore_refuses_a_data_dir_that_holds_a_deployment_unless_forced(
    a_backup: Path, env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_data_dir(monkeypatch, env / "source")
    before = (env / "source" / DB_FILE).read_bytes()
    assert main(["restore", str(a_backup)]) == 1
    assert "already holds a deployment (relata.db, originals)" in capsys.readouterr().err
    assert (env / "source" / DB_FILE).read_bytes() == before
    # A folder that is merely not empty (a volume's lost+found) is not a deployment.
    (env / "fresh" / "lost+found").mkdir(parents=True)
    use_data_dir(monkeypatch, env / "fresh")
    assert main(["restore", str(a_backup)]) == 0
    assert main(["restore", str(a_backup), "--force"]) == 0


def test_a_damaged_backup_is_refused_before_anything_is_written(a_backup: Path, env: Path) -> None:
    [line] = (a_backup / ORIGINALS_LIST).read_text().splitlines()
    original = a_backup / line.split("  ", 1)[1]
    original.write_bytes(original.read_bytes() + b"tampered")
    with pytest.raises(ValidationError, match="missing from the backup or damaged"):
        restore(a_backup, env / "restored")
    assert not (env / "restored").exists()
    (a_backup / DB_FILE).write_bytes(b"not a database")
    with pytest.raises(ValidationError, match="does not match the manifest"):
        restore(a_backup, env / "restored")
    (a_backup / MANIFEST).unlink()
    with pytest.raises(ValidationError, match="is not a Relata backup"):
        restore(a_backup, env / "restored")


def test_backup_refuses_an_existing_destination(
    a_backup: Path, env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["backup", str(a_backup)]) == 1
    assert "is not an empty folder" in capsys.readouterr().err
    with pytest.raises(Conflict):
        backup(env / "source" / DB_FILE, env / "source", a_backup, vector_width=WIDTH)


@pytest.mark.postgres
def test_backup_of_a_postgresql_deployment_points_to_pg_dump(
    env: Path,
    postgres_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    use_data_dir(monkeypatch, env / "data")
    monkeypatch.setenv("RELATA_DATABASE_URL", postgres_url)
    monkeypatch.setenv("RELATA_VECTOR_STORE", "sqlite-vec")  # this server has no pgvector
    assert main(["migrate"]) == 0
    assert main(["backup", str(env / "elsewhere")]) == 1
    assert "pg_dump" in capsys.readouterr().err
    assert not (env / "elsewhere").exists()


def test_the_originals_list_is_what_sha256sum_checks(a_backup: Path) -> None:
    for line in (a_backup / ORIGINALS_LIST).read_text().splitlines():
        sha, path = line.split("  ", 1)
        assert hashlib.sha256((a_backup / path).read_bytes()).hexdigest() == sha
