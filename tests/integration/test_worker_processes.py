"""``relata worker --processes N`` for real, killed on the way (issue 29): N worker processes
under the supervisor share one queue while items are being ingested; a child that holds a
job is SIGKILLed three times, chosen at random, and the supervisor restarts it. Whatever was
killed, every item ends ready, no job and no stage ran to completion twice, no lease is left
running, and no chunk, vector, entity, observation, claim or relationship exists twice.

PostgreSQL (with pgvector, so the vectors are shared too) runs four processes over 2,000
items; SQLite two processes over fewer. Embeddings come from a real local HTTP server (the
OpenAI-compatible adapter), which also makes every embedding call take a slot of the
deployment-wide AI-call limit (ADR 33). Leases are short (a killed job returns after a few
seconds); every wait is on a condition with a generous deadline, never on a duration.

On PostgreSQL the test's database commits without waiting for its WAL flush
(``synchronous_commit = off``): what is killed here is a worker, never the server, so no
commit can be lost, and on a loaded two-core machine the flushes were most of the run's time.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa

from relata.bootstrap import Container, build
from relata.config.settings import load_settings
from relata.storage.sql import migrate
from relata.storage.sql.engine import Database
from tests.support.worker_processes import (
    CountingProvider,
    Supervised,
    alive,
    corpus,
    duplicates,
    item_statuses,
    rows,
    running_jobs_by_pid,
    scalar,
    wait_until,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

KILLS = 3
STAGES = ["parse", "chunk", "embed", "entities", "claims", "relationships"]
BATCH = 200


@dataclass(frozen=True)
class Case:
    processes: int
    items: int


def env_for(
    database_url: str, data_dir: Path, provider_url: str, vector_store: str
) -> dict[str, str]:
    return {
        "RELATA_DATABASE_URL": database_url,
        "RELATA_DATA_DIR": str(data_dir),
        "RELATA_VECTOR_STORE": vector_store,
        "RELATA_EMBEDDING_PROVIDER": "openai",
        "RELATA_OPENAI_BASE_URL": f"{provider_url}/v1",
        "RELATA_EMBEDDING_MODEL": "fake-embed",
        "RELATA_EMBEDDING_DIMENSIONS": "8",
        "RELATA_ANALYSIS_ENABLED": "false",
        "RELATA_AI_CONCURRENCY": "2",
        # A killed job's lease expires within seconds; a live one is renewed every third.
        "RELATA_JOB_LEASE_SECONDS": "5",
        "RELATA_JOB_POLL_SECONDS": "0.2",
        "RELATA_JOB_BACKOFF_SECONDS": "0.2",
        "RELATA_JOB_BACKOFF_MAX_SECONDS": "2",
        "RELATA_JOB_MAX_ATTEMPTS": "10",
        "RELATA_SHUTDOWN_TIMEOUT": "10",
        "RELATA_LOG_LEVEL": "warning",
        "RELATA_LOG_FORMAT": "text",
    }


def run_killed_ingest(
    tmp_path: Path, database_url: str, vector_store: str, case: Case, *worker_args: str
) -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    note = f"(random seed {seed})"
    with CountingProvider(dimensions=8, hold=0.005) as provider:
        env = env_for(database_url, tmp_path / "data", provider.url, vector_store)
        settings = load_settings(env)
        c = build(settings)
        try:
            migrate.upgrade(c.db)
            c.vectors.prepare()
            ws, _ = c.workspaces.ensure(settings.default_workspace)
            sup = Supervised(tmp_path, env, "--processes", str(case.processes), *worker_args)
            try:
                wait_until(
                    lambda: sup.running() and len(sup.children()) == case.processes,
                    timeout=120,
                    what=f"{case.processes} worker processes {note}",
                )
                # Ingest while the workers run, so kills land during ingestion too.
                requests = corpus(case.items)
                errors: list[BaseException] = []

                def ingest() -> None:
                    try:
                        for start in range(0, len(requests), BATCH):
                            results = c.ingest.ingest_many(ws.id, requests[start : start + BATCH])
                            assert all(not isinstance(r, Exception) for r in results)
                    except BaseException as exc:  # reported by the test thread
                        errors.append(exc)

                feeder = threading.Thread(target=ingest, daemon=True)
                feeder.start()
                orphans = kill_busy_children(c.db, sup, case, rng, note)
                feeder.join(600)
                assert not feeder.is_alive() and not errors, errors

                def settled() -> bool:
                    sup.running()
                    counts = item_statuses(c.db)
                    assert counts.get("failed", 0) == 0, f"failed items {counts} {note}"
                    return counts.get("ready", 0) == case.items

                wait_until(settled, timeout=1500, every=1.0, what=f"every item ready {note}")
                assert sup.stop(timeout=120) == 0, sup.output()
                assert not [p for p in sup.seen if alive(p)], "a worker process outlived it"
            finally:
                sup.close()
            check_invariants(c, ws.id, case, orphans, note)
        finally:
            c.close()


def kill_busy_children(
    db: Database, sup: Supervised, case: Case, rng: random.Random, note: str
) -> set[str]:
    """SIGKILL, ``KILLS`` times, a child chosen at random among those holding a job, at a
    random point of the run (in the first, middle and last part of the stage runs); wait for
    the supervisor to replace it each time. Returns the jobs the killed children held."""
    orphans: set[str] = set()
    total_runs = case.items * len(STAGES)
    for n in range(KILLS):
        target = int(total_runs * rng.uniform(0.1 + 0.25 * n, 0.3 + 0.25 * n))
        wait_until(
            lambda target=target: sup.running() and stage_runs(db) >= target,
            timeout=900,
            every=0.2,
            what=f"kill point {n + 1} {note}",
        )
        victim, held = pick_busy_child(db, sup, rng, note)
        before = set(sup.children())
        os.kill(victim, signal.SIGKILL)
        # What it held is still leased to it: only lease expiry can return it to the queue.
        orphans.update(j for j in held if still_leased_to(db, j, victim))
        wait_until(
            lambda before=before: (
                sup.running()
                and len(sup.children()) == case.processes
                and bool(set(sup.children()) - before)
            ),
            timeout=180,
            what=f"the supervisor to restart the killed process {note}",
        )
    assert orphans, f"no kill caught a job in the middle {note}"
    return orphans


def stage_runs(db: Database) -> int:
    return int(scalar(db, "SELECT count(*) FROM processing_runs WHERE outcome = 'succeeded'"))


def pick_busy_child(
    db: Database, sup: Supervised, rng: random.Random, note: str
) -> tuple[int, list[str]]:
    """A child process that holds a job now, at random, and the jobs it holds."""
    deadline = time.monotonic() + 120
    while True:
        busy = running_jobs_by_pid(db)
        candidates = [p for p in sup.children() if busy.get(p)]
        if candidates:
            victim = rng.choice(candidates)
            return victim, busy[victim]
        assert time.monotonic() < deadline, f"no worker process held a job {note}"
        time.sleep(0.05)


def still_leased_to(db: Database, job_id: str, pid: int) -> bool:
    """Whether ``job_id`` is still running under a lease of process ``pid`` (it may have
    finished between the choice and the kill)."""
    owner = scalar(
        db,
        "SELECT coalesce(max(lease_owner), '') FROM jobs WHERE id = :j AND status = 'running'",
        j=job_id,
    )
    return f":{pid}/" in str(owner)


def check_invariants(
    c: Container, workspace_id: str, case: Case, orphans: set[str], note: str
) -> None:
    db = c.db
    # Every item processed, through every stage, once.
    assert item_statuses(db) == {"ready": case.items}, note
    runs = rows(db, "SELECT stage, outcome, count(*) FROM processing_runs GROUP BY stage, outcome")
    assert sorted((s, o, int(n)) for s, o, n in runs) == sorted(
        (stage, "succeeded", case.items) for stage in STAGES
    ), note
    # No job left pending or running, none completed twice; the killed ones were finished by
    # another worker after their leases expired.
    statuses = dict(rows(db, "SELECT status, count(*) FROM jobs GROUP BY status"))
    assert statuses == {"succeeded": case.items * len(STAGES)}, (statuses, note)
    for job_id in orphans:
        status, attempts = rows(db, "SELECT status, attempts FROM jobs WHERE id = :j", j=job_id)[0]
        assert status == "succeeded" and attempts >= 2, (job_id, status, attempts, note)
    # No duplicate of anything the stages write.
    assert dict(duplicates(db)) == {}, note
    # One chunk per (short) item, one vector per chunk.
    assert scalar(db, "SELECT count(*) FROM chunks") == case.items
    assert c.vectors.count(workspace_id) == case.items
    sample = [r[0] for r in rows(db, "SELECT id FROM items ORDER BY id LIMIT 50")]
    for item_id in sample:
        assert len(c.vectors.item_vectors(workspace_id, item_id)) == 1, item_id
    # Counters kept beside the rows agree with the rows (a double write would skew them).
    skewed = rows(
        db,
        "SELECT e.id FROM entities e LEFT JOIN entity_observations o ON o.entity_id = e.id "
        "GROUP BY e.id, e.observation_count HAVING count(o.id) != e.observation_count",
    )
    assert skewed == [], note
    # And the stages had something to write: the invariants above are not vacuous.
    assert scalar(db, "SELECT count(*) FROM entity_observations") >= case.items
    assert scalar(db, "SELECT count(*) FROM claims") >= case.items
    assert scalar(db, "SELECT count(*) FROM relationships") > 0


@pytest.mark.postgres
def test_four_processes_on_postgresql_survive_three_kills_and_duplicate_nothing(
    tmp_path: Path, pgvector_url: str
) -> None:
    engine = sa.create_engine(pgvector_url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            name = conn.execute(sa.text("SELECT current_database()")).scalar_one()
            conn.execute(sa.text(f'ALTER DATABASE "{name}" SET synchronous_commit = off'))
    finally:
        engine.dispose()
    # Two threads per process (eight jobs at once): on PostgreSQL a job mostly waits on
    # round trips, which more threads overlap.
    run_killed_ingest(
        tmp_path, pgvector_url, "pgvector", Case(processes=4, items=2000), "--workers", "2"
    )


def test_two_processes_on_sqlite_survive_three_kills_and_duplicate_nothing(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'data' / 'relata.db'}"
    run_killed_ingest(tmp_path, url, "sqlite-vec", Case(processes=2, items=400))
