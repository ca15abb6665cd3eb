"""Helpers for the ingestion tests: a container with its own settings, and running the
pipeline in the test's thread until no job is due."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from relata.bootstrap import Container, build
from relata.config.settings import Settings
from relata.domain.models import Job
from relata.domain.ports import Embedder
from relata.domain.vocabulary import StageKind
from relata.storage.sql import migrate
from tests.support.passwords import TEST_HASHER

# Bounds a drain: a pipeline that keeps enqueueing work fails the test instead of hanging.
MAX_JOBS = 500

#: Every pipeline stage, in order, and the job kind each runs as.
STAGES = [k.value for k in StageKind]
STAGE_JOBS = [k.job_kind for k in StageKind]


@contextmanager
def built(
    settings: Settings, *, embedder: Embedder | None = None, **changes: object
) -> Iterator[Container]:
    """A migrated container (with the default workspace) on ``settings`` plus ``changes``;
    ``embedder`` replaces the configured one (a fake of the port, in tests). Passwords are
    hashed with the tests' cheap Argon2id."""
    c = build(settings.replace(**changes), embedder=embedder, password_hasher=TEST_HASHER)
    migrate.upgrade(c.db)
    c.workspaces.ensure(c.settings.default_workspace)
    try:
        yield c
    finally:
        c.close()


def drain(c: Container, *, max_jobs: int = MAX_JOBS) -> list[Job]:
    """Run due jobs in this thread (one worker, the real handlers) until none is left."""
    pool = c.worker_pool(workers=1, name="test")
    done: list[Job] = []
    for _ in range(max_jobs):
        job = pool.run_one()
        if job is None:
            return done
        done.append(job)
    raise AssertionError(f"the pipeline was still running after {max_jobs} jobs")


def workspace_id(c: Container) -> str:
    return c.workspaces.resolve().id


def originals_of(c: Container, ws: str) -> list[Path]:
    """The stored original files of a workspace (temporary files included, if any)."""
    root = c.settings.data_path / "originals" / ws
    return sorted(root.iterdir()) if root.exists() else []
