"""Durability against SIGKILL, with real processes on SQLite (docs/reliability.md, ADR 29).

1. ``relata serve`` takes many concurrent uploads over HTTP and is killed with SIGKILL mid-way,
   twice (the second time while its workers also process the first round's items), then
   restarted: every upload that got a 2xx is there and becomes ready, nothing is half-written
   (no item without its original, no original without its item, no temporary file, no
   chunk without its item), and ``relata doctor`` sees the crash's leftovers before the
   restart and nothing after it (the start-up recovery removed or resumed them).
2. ``relata reembed --all --wait`` is killed mid-way and ``relata reembed --wait`` resumes it:
   one vector per chunk, every chunk stamped with the model, nothing else changed.
3. ``relata reprocess --all --wait`` is killed mid-way and a worker resumes it: the chunks,
   vectors, entity observations, entities, claims and contradictions are exactly those
   before the reprocess (those stages are deterministic here), none twice; relationships
   stay one per pair of items with their contributions once each. (Their scores are not
   compared: they depend on the other items' state when each item's stage runs, so an
   uninterrupted ``reprocess --all`` of this library also moves a few of them.)

Everything waits on conditions with generous deadlines; no duration is asserted. Leases are
short (``RELATA_JOB_LEASE_SECONDS``) so that a killed process's jobs come back soon; a lease
that expires under load only runs a job again, which these tests must tolerate anyway.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from relata.storage.sql.engine import Database

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "durability-password-1"
DEADLINE = 300.0  # seconds: generous, for a loaded machine; never an assertion of speed
UPLOADS_PER_ROUND = 40
CLIENTS = 12
KILL_AFTER = 15  # 2xx answers per round before the SIGKILL
RETRIES = 50  # of an upload answered 503 (admission control: every ingestion slot taken)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _env(data: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELATA_")}
    env.update(
        RELATA_DATA_DIR=str(data),
        RELATA_LOG_LEVEL="warning",
        RELATA_JOB_LEASE_SECONDS="3",
        RELATA_JOB_POLL_SECONDS="0.2",
        RELATA_SHUTDOWN_TIMEOUT="5",
        PYTHONPATH=str(ROOT),
    )
    env.update(extra)
    return env


def _cli(env: dict[str, str], *args: str, stdin: str = "", check: bool = True) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "relata.cli.main", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _wait_for(what: str, condition: Callable[[], bool], deadline: float = DEADLINE) -> None:
    end = time.monotonic() + deadline
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


class Served:
    """``relata serve`` on a free port of 127.0.0.1."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = log
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "relata.cli.main", "serve"],
                env={**env, "RELATA_HTTP_ADDR": f"127.0.0.1:{self.port}"},
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def ready(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(self.log.read_text(errors="replace")[-4000:])
        try:
            return httpx.get(f"{self.base}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


# ---------------------------------------------------------------- the documents
PLACES = ["Skerry Rock", "Port Halloran", "the Sabrewing Array", "Gannet Head", "Marrow Bay"]
PEOPLE = ["Dr. Ines Vaughan", "Tomas Reyes", "Dr. Amara Quist", "Lena Ostrova"]
ORGS = ["the Meridian Tidal Institute", "Kestrel Marine Systems", "the Harbour Council"]


def document(n: int) -> str:
    """A distinct report naming people, organisations, places and figures (entities, claims
    and relationships for the pipeline to find), several paragraphs long."""
    place, person, org = PLACES[n % 5], PEOPLE[n % 4], ORGS[n % 3]
    paragraphs = [
        f"# Field report {n}",
        f"{person} of {org} counted {100 + 7 * n} grey seals at {place} in {2001 + n % 20}.",
        f"{org} said turbine T{n} at the Sabrewing Array produced {1 + n % 9}.{n % 10} MW "
        f"during the survey, and that {PEOPLE[(n + 1) % 4]} reviewed the logs.",
        f"The survey at {place} found {3 + n % 11} nesting sites; {person} recommended a "
        f"closure of {10 + n % 30} days for report {n}.",
        f"Water temperature near {place} was {8 + n % 7}.{n % 9} degrees on day {n}.",
    ]
    return "\n\n".join(paragraphs) + "\n"


# ---------------------------------------------------------------- looking at the data dir
def _db(data: Path) -> Database:
    return Database.from_url(f"sqlite:///{data / 'relata.db'}")


def _rows(db: Database, sql: str) -> list[tuple[Any, ...]]:
    with db.read() as conn:
        return [tuple(r) for r in conn.execute(sa.text(sql)).all()]


def _stored_files(data: Path) -> list[str]:
    root = data / "originals"
    if not root.exists():
        return []
    return sorted(str(p.relative_to(data)) for p in root.rglob("*") if p.is_file())


def _assert_nothing_half_written(data: Path) -> None:
    db = _db(data)
    try:
        referenced = {r[0] for r in _rows(db, "SELECT original_path FROM items")}
        files = _stored_files(data)
        assert [f for f in files if f.endswith(".tmp")] == [], "a partial original is left"
        assert set(files) == referenced, "an original without an item, or an item without one"
        orphans = _rows(
            db, "SELECT count(*) FROM chunks WHERE item_id NOT IN (SELECT id FROM items)"
        )
        assert orphans == [(0,)], "a chunk without its item"
    finally:
        db.dispose()


# ---------------------------------------------------------------- 1. uploads
def _upload(base: str, token: str, n: int) -> tuple[int, str | None]:
    """One upload, as a file or as JSON text: (status, item id), status 0 on no answer. A
    503 (every ingestion slot taken) is retried after its Retry-After, a bounded number of
    times, as a client would."""
    headers = {"Authorization": f"Bearer {token}"}
    text = document(n)
    for _ in range(RETRIES):
        try:
            if n % 2:
                files = {"file": (f"report-{n}.md", text.encode(), "text/markdown")}
                r = httpx.post(f"{base}/api/v1/items", headers=headers, files=files, timeout=60)
            else:
                r = httpx.post(
                    f"{base}/api/v1/items", headers=headers, json={"text": text}, timeout=60
                )
        except httpx.HTTPError:
            return 0, None
        if r.status_code != 503:
            break
        time.sleep(min(1.0, float(r.headers.get("retry-after", "1"))))
    return r.status_code, (r.json().get("id") if r.status_code == 201 else None)


def _round(server: Served, token: str, numbers: range) -> dict[int, str]:
    """Upload ``numbers`` from ``CLIENTS`` threads; SIGKILL the server after ``KILL_AFTER``
    2xx answers while the rest are in flight. Returns the acknowledged uploads."""
    acked: dict[int, str] = {}
    lock = threading.Lock()
    enough = threading.Event()

    def one(n: int) -> None:
        status, item_id = _upload(server.base, token, n)
        if status == 201 and item_id:
            with lock:
                acked[n] = item_id
                if len(acked) >= KILL_AFTER:
                    enough.set()

    with ThreadPoolExecutor(CLIENTS) as pool:
        futures = [pool.submit(one, n) for n in numbers]
        assert enough.wait(DEADLINE), server.log.read_text(errors="replace")[-4000:]
        server.kill()
        for f in futures:
            f.result()
    return acked


def test_every_acknowledged_upload_survives_sigkill_and_becomes_ready(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = _env(
        data,
        RELATA_EMBEDDING_PROVIDER="none",
        RELATA_WORKERS="2",
        # Nothing but these processes uses the data dir: repair what a kill left at once.
        RELATA_RECOVERY_GRACE_SECONDS="0",
    )
    _cli(env, "createadmin", "--username", "admin", "--password-stdin", stdin=PASSWORD + "\n")
    token = _cli(env, "tokens", "create", "--user", "admin", "--name", "durability").strip()
    log = tmp_path / "serve.log"
    acked: dict[int, str] = {}
    leftovers = []
    for r in range(2):
        server = Served(env, log)
        try:
            _wait_for("relata serve to be ready", server.ready)
            numbers = range(r * UPLOADS_PER_ROUND, (r + 1) * UPLOADS_PER_ROUND)
            acked.update(_round(server, token, numbers))
        finally:
            server.stop()
        # What the kill left, as relata doctor sees it before the restart repairs it.
        report = json.loads(_cli(env, "doctor", "--json", "--grace", "0", check=False))
        leftovers.append(report)

    server = Served(env, log)
    try:
        _wait_for("relata serve to be ready", server.ready)  # start-up recovery has run
        _assert_nothing_half_written(data)
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=server.base, headers=headers, timeout=30) as client:
            for item_id in acked.values():
                assert client.get(f"/api/v1/items/{item_id}").status_code == 200

            def all_ready() -> bool:
                page = client.get("/api/v1/items", params={"limit": 200}).json()
                return all(i["status"] == "ready" for i in page["items"])

            _wait_for("every item to be ready", all_ready)
            items = client.get("/api/v1/items", params={"limit": 200}).json()["items"]
    finally:
        server.stop()
    assert set(acked.values()) <= {i["id"] for i in items}
    _assert_nothing_half_written(data)
    after = json.loads(_cli(env, "doctor", "--json", check=False))
    assert after["needs_attention"] == 0, after
    # The figures docs/reliability.md reports (shown with pytest -s / -rA).
    print(
        f"uploads: {2 * UPLOADS_PER_ROUND} sent, {len(acked)} acknowledged, "
        f"{len(items)} items after restart; leftovers per kill: "
        + "; ".join(
            f"{len(x['stray_originals'])} stray, {len(x['unstarted_uploads'])} unstarted"
            for x in leftovers
        )
    )


# ---------------------------------------------------------------- 2. and 3. a processed library
DOCS = 24


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir with ``DOCS`` documents processed through every stage with the local
    embedding model (made once; each test works on its own copy)."""
    base = tmp_path_factory.mktemp("library")
    folder = base / "docs"
    folder.mkdir()
    for n in range(DOCS):
        (folder / f"report-{n}.md").write_text(document(n))
    data = base / "data"
    _cli(_env(data, **LIBRARY), "ingest", str(folder), "--timeout", str(DEADLINE))
    return data


#: Small chunks and re-embedding batches: many of each, so a kill lands between two.
LIBRARY = {
    "RELATA_EMBEDDING_PROVIDER": "local",
    "RELATA_CHUNK_TARGET_CHARS": "200",
    "RELATA_CHUNK_OVERLAP_CHARS": "0",
    "RELATA_REEMBED_BATCH_SIZE": "4",
    "RELATA_WORKERS": "2",
}


@pytest.fixture
def copy(library: Path, tmp_path: Path) -> Iterator[Path]:
    data = tmp_path / "data"
    shutil.copytree(library, data)
    yield data


def _fingerprint(data: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Everything the pipeline derives, in a comparable form (lists: a duplicate shows)."""
    db = _db(data)
    try:
        q = {
            "chunks": "SELECT item_id, sequence, content_hash FROM chunks ORDER BY 1, 2",
            "vectors": "SELECT chunk_id, item_id FROM vec_points ORDER BY 1",
            "observations": "SELECT o.item_id, e.entity_type, e.normalised_key, o.start_offset,"
            " o.end_offset FROM entity_observations o JOIN entities e ON e.id = o.entity_id "
            "ORDER BY 1, 4, 5, 2, 3",
            "entities": "SELECT entity_type, normalised_key, observation_count FROM entities "
            "ORDER BY 1, 2",
            "claims": "SELECT item_id, dedupe_key, start_offset, end_offset FROM claims "
            "ORDER BY 1, 2",
            "contradictions": "SELECT identity FROM contradictions ORDER BY 1",
        }
        found = {name: _rows(db, sql) for name, sql in q.items()}
        found["vec0 rows"] = _rows(db, "SELECT count(*) FROM vec_chunks_384")
        # Relationships: one per pair of items, each contribution once (none twice).
        found["pairs twice"] = _rows(
            db,
            "SELECT min(source_id, target_id), max(source_id, target_id) FROM relationships "
            "GROUP BY 1, 2 HAVING count(*) > 1",
        )
        found["contributions twice"] = _rows(
            db,
            "SELECT relationship_id, entity_key FROM relationship_entities GROUP BY 1, 2 "
            "HAVING count(*) > 1",
        )
        found["counted observations"] = _rows(
            db,
            "SELECT e.normalised_key, e.observation_count, count(o.id) FROM entities e "
            "LEFT JOIN entity_observations o ON o.entity_id = e.id GROUP BY e.id "
            "HAVING e.observation_count != count(o.id)",
        )
        return found
    finally:
        db.dispose()


def _assert_one_vector_per_chunk(f: dict[str, list[tuple[Any, ...]]]) -> None:
    chunk_ids = len(f["chunks"])
    assert len(f["vectors"]) == chunk_ids == f["vec0 rows"][0][0]
    assert len({v[0] for v in f["vectors"]}) == chunk_ids


def _spawn(env: dict[str, str], log: Path, *args: str) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "relata.cli.main", *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _kill_when(
    proc: subprocess.Popen[bytes], log: Path, what: str, cond: Callable[[], bool]
) -> None:
    def ready() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"it ended before {what}:\n{log.read_text()[-4000:]}")
        return cond()

    _wait_for(what, ready)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(30) == -signal.SIGKILL


def test_a_reembedding_killed_mid_way_resumes_with_one_vector_per_chunk(
    copy: Path, tmp_path: Path
) -> None:
    data = copy
    env = _env(data, **LIBRARY)
    before = _fingerprint(data)
    _assert_one_vector_per_chunk(before)
    total = len(before["chunks"])
    db = _db(data)
    log = tmp_path / "reembed.log"
    try:

        def stamped() -> int:
            rows = _rows(db, "SELECT count(*) FROM chunks WHERE embedding_model IS NOT NULL")
            return int(rows[0][0])

        proc = _spawn(env, log, "reembed", "--all", "--wait")
        # --all unstamps every chunk in one transaction, then stamps them batch by batch.
        _kill_when(proc, log, "the rebuild to be part-way", lambda: total // 3 <= stamped() < total)
        at_kill = stamped()
        assert 0 < at_kill < total
        _cli(env, "reembed", "--wait", "--timeout", str(DEADLINE))
        assert stamped() == total
    finally:
        db.dispose()
    after = _fingerprint(data)
    _assert_one_vector_per_chunk(after)
    assert after == before
    print(f"re-embedding: killed with {at_kill} of {total} chunks re-embedded; resumed")


def test_a_reprocess_killed_mid_way_resumes_to_the_same_data_none_twice(
    copy: Path, tmp_path: Path
) -> None:
    data = copy
    env = _env(data, **LIBRARY)
    before = _fingerprint(data)
    assert before["claims"] and before["contradictions"] and before["observations"]
    assert before["counted observations"] == [] == before["pairs twice"]
    db = _db(data)
    log = tmp_path / "reprocess.log"
    try:
        assert _rows(db, "SELECT count(*) FROM relationships")[0][0] > 0

        def second_pass_done() -> int:
            rows = _rows(
                db,
                "SELECT count(*) FROM processing_runs WHERE stage = 'relationships' "
                "AND json_extract(details, '$.generation') = 2",
            )
            return int(rows[0][0])

        proc = _spawn(env, log, "reprocess", "--all", "--wait")
        part_way = lambda: DOCS // 3 <= second_pass_done() < DOCS  # noqa: E731
        _kill_when(proc, log, "the reprocess to be part-way", part_way)
        at_kill = second_pass_done()

        def settled() -> bool:
            left = _rows(db, "SELECT count(*) FROM jobs WHERE status IN ('pending', 'running')")
            return left == [(0,)]

        worker = _spawn(env, log, "worker")
        try:
            _wait_for("the reprocess to finish", settled)
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(60)
        statuses = _rows(db, "SELECT status, count(*) FROM items GROUP BY 1")
        assert statuses == [("ready", DOCS)]
    finally:
        db.dispose()
    after = _fingerprint(data)
    _assert_one_vector_per_chunk(after)
    assert after == before
    print(f"reprocess: killed with {at_kill} of {DOCS} items through; resumed by a worker")
