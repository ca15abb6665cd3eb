"""The pipeline's one stage runner, on real SQLite, with a stage added in the
test (one class in tests/support/pipeline_stages.py, one entry in a declared order): runs,
transient retries, permanent failure naming the stage once, skips of unconfigured stages,
reprocessing from a stage, and a process killed inside a stage's transaction."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from relata.bootstrap import Container, build
from relata.config.settings import Settings
from relata.domain.errors import ValidationError
from relata.domain.models import ItemStatus, JobStatus
from relata.domain.vocabulary import RunOutcome
from relata.ingest.service import IngestRequest
from relata.pipeline import Requirement
from relata.storage.sql import migrate
from tests.support.fake_embedder import FakeEmbedder
from tests.support.ingest import drain, workspace_id
from tests.support.pipeline_stages import (
    AFTER_TAG,
    FAILURES,
    ORDER,
    TAG,
    SnapshotStage,
    TagStage,
    container,
)

ROOT = Path(__file__).resolve().parents[2]
TEXT = "The Sabrewing Array has twelve turbines rated at 1.5 MW each."
# Retries become due at once, so a test drains them without waiting.
FAST_RETRY = {"job_backoff_seconds": 0.001, "job_backoff_max_seconds": 0.001}


@contextmanager
def pipeline_with(settings: Settings, stage: TagStage, **changes: object) -> Iterator[Container]:
    c = build(
        settings.replace(**{**FAST_RETRY, **changes}),
        embedder=FakeEmbedder(),
        stage_order=ORDER,
    )
    migrate.upgrade(c.db)
    c.workspaces.ensure(c.settings.default_workspace)
    c.pipeline.add(stage)
    try:
        yield c
    finally:
        c.close()


def _drain(c: Container) -> list[str]:
    kinds = []
    for _ in range(20):
        time.sleep(0.005)  # let a retry's backoff (1 ms) pass
        jobs = drain(c)
        if not jobs:
            return kinds
        kinds += [j.kind for j in jobs]
    raise AssertionError("the pipeline did not settle")


def _runs(c: Container, ws: str, item_id: str) -> list[tuple[str, str]]:
    return [(r.stage, str(r.outcome)) for r in c.repos.runs.list_for_item(ws, item_id)]


def test_a_stage_added_in_a_test_runs_in_its_declared_place(settings: Settings) -> None:
    stage = TagStage()
    with pipeline_with(settings, stage) as c:
        ws = workspace_id(c)
        item = c.ingest.ingest(ws, IngestRequest(text=TEXT))
        assert _drain(c) == ["parse_item", "chunk_item", "tag_item", *AFTER_TAG]
        assert _runs(c, ws, item.id) == [
            ("parse", "succeeded"),
            ("chunk", "succeeded"),
            ("tag", "succeeded"),
            ("embed", "succeeded"),
            ("entities", "succeeded"),
            ("claims", "succeeded"),
            ("relationships", "succeeded"),
        ]
        done = c.repos.items.get(ws, item.id)
        assert done.status is ItemStatus.READY and done.failed_stage is None
        [chunk] = c.repos.chunks.list_for_item(ws, item.id)
        assert chunk.text == "tagged"  # the tag stage's result, embedded by the next stage
        assert c.vectors.count(ws) == 1
        tag_run = c.repos.runs.list_for_item(ws, item.id)[2]
        assert tag_run.versions == {"tagger": "1"} and tag_run.details["tags"] == 1
        assert tag_run.details["generation"] == 1 and tag_run.details["duration_ms"] >= 0
        assert 0 <= tag_run.details["cpu_ms"] <= tag_run.details["duration_ms"] + 1
        assert c.pipeline.kinds == ORDER
        with pytest.raises(ValueError, match="already part"):
            c.pipeline.add(TagStage())


@pytest.mark.parametrize("one_snapshot", [True, False])
def test_a_stage_that_asks_for_one_snapshot_reads_one_state_of_the_database(
    settings: Settings, one_snapshot: bool
) -> None:
    # An item committed (by another transaction) between two reads of the stage's run: seen
    # by the second read only when the stage did not ask for one snapshot.
    stage = SnapshotStage(one_snapshot=one_snapshot)
    with pipeline_with(settings, stage) as c:
        ws = workspace_id(c)
        stage.count = c.repos.items.count
        stage.meanwhile = lambda: c.ingest.ingest(ws, IngestRequest(text="Another item."))
        c.ingest.ingest(ws, IngestRequest(text=TEXT))
        _drain(c)
        assert stage.counts[0] == ((1, 1) if one_snapshot else (1, 2))
        assert stage.counts[1] == (2, 2)  # the next run: a new snapshot sees both
        assert c.repos.items.count(ws) == 2


def test_a_transient_failure_is_retried_and_then_succeeds(settings: Settings) -> None:
    stage = TagStage(failures=[FAILURES["transient"]])
    with pipeline_with(settings, stage) as c:
        ws = workspace_id(c)
        item = c.ingest.ingest(ws, IngestRequest(text=TEXT))
        kinds = _drain(c)
        assert kinds.count("tag_item") == 2 and stage.calls == 2
        assert c.repos.items.get(ws, item.id).status is ItemStatus.READY
        # The failed attempt left no run and no failure on the item.
        assert ("tag", "failed") not in _runs(c, ws, item.id)
        [tag_job] = c.queue.list(ws, kind="tag_item")
        assert tag_job.status is JobStatus.SUCCEEDED and tag_job.attempts == 2


@pytest.mark.parametrize("failure", ["permanent", "bug"])
def test_a_permanent_failure_fails_the_item_naming_the_stage_once(
    settings: Settings, failure: str
) -> None:
    stage = TagStage(failures=[FAILURES[failure]])
    with pipeline_with(settings, stage) as c:
        ws = workspace_id(c)
        item = c.ingest.ingest(ws, IngestRequest(text=TEXT))
        assert _drain(c) == ["parse_item", "chunk_item", "tag_item"]  # no retry, no embed
        assert stage.calls == 1
        failed = c.repos.items.get(ws, item.id)
        assert failed.status is ItemStatus.FAILED and failed.failed_stage == TAG
        expected = (
            "tag failed: the tagger refused the item"
            if failure == "permanent"
            else (
                "tag failed: KeyError"  # a programming error's text may quote input: type only
            )
        )
        assert failed.error == expected
        assert _runs(c, ws, item.id).count(("tag", "failed")) == 1
        [job] = c.queue.list(ws, kind="tag_item")
        assert job.status is JobStatus.FAILED and job.attempts == 1


def test_a_transient_failure_on_the_last_attempt_fails_the_item_once(settings: Settings) -> None:
    stage = TagStage(failures=[FAILURES["transient"], FAILURES["transient"]])
    with pipeline_with(settings, stage, job_max_attempts=2) as c:
        ws = workspace_id(c)
        item = c.ingest.ingest(ws, IngestRequest(text=TEXT))
        assert _drain(c).count("tag_item") == 2
        failed = c.repos.items.get(ws, item.id)
        assert failed.status is ItemStatus.FAILED and failed.failed_stage == TAG
        assert failed.error == "tag failed: gave up after 2 attempts: the tagging service is down"
        assert _runs(c, ws, item.id).count(("tag", "failed")) == 1


def test_a_stage_whose_requirement_is_missing_is_skipped_and_the_item_becomes_ready(
    settings: Settings,
) -> None:
    # No language model is configured in the test settings: a stage needing one is skipped.
    stage = TagStage(requires=frozenset({Requirement.ANALYSER}))
    with pipeline_with(settings, stage) as c:
        assert not c.analysis.enabled
        ws = workspace_id(c)
        item = c.ingest.ingest(ws, IngestRequest(text=TEXT))
        # The skipped stage takes no job of its own: it is recorded with the stage before it.
        assert _drain(c) == ["parse_item", "chunk_item", *AFTER_TAG]
        assert stage.calls == 0
        runs = c.repos.runs.list_for_item(ws, item.id)
        skipped = [r for r in runs if r.stage == TAG]
        assert [str(r.outcome) for r in skipped] == ["skipped"]
        assert skipped[0].details["reason"] == Requirement.ANALYSER.missing_reason
        assert c.repos.items.get(ws, item.id).status is ItemStatus.READY


def test_a_stage_that_reports_not_configured_is_skipped_not_failed(settings: Settings) -> None:
    stage = TagStage(failures=[FAILURES["skip"]])
    with pipeline_with(settings, stage) as c:
        ws = workspace_id(c)
        item = c.ingest.ingest(ws, IngestRequest(text=TEXT))
        assert _drain(c) == ["parse_item", "chunk_item", "tag_item", *AFTER_TAG]
        assert ("tag", "skipped") in _runs(c, ws, item.id)
        assert c.repos.items.get(ws, item.id).status is ItemStatus.READY


def test_reprocessing_from_a_stage_reruns_it_and_the_later_ones_only(settings: Settings) -> None:
    stage = TagStage()
    with pipeline_with(settings, stage) as c:
        ws = workspace_id(c)
        item = c.ingest.ingest(ws, IngestRequest(text=TEXT))
        _drain(c)
        again = c.items.reprocess(ws, item.id, from_stage=TAG)
        assert again.from_stage == TAG and again.generation == 2
        assert c.repos.items.get(ws, item.id).status is ItemStatus.PENDING
        assert _drain(c) == ["tag_item", *AFTER_TAG]
        stages = [s for s, _ in _runs(c, ws, item.id)]
        assert stages.count("parse") == 1 and stages.count("chunk") == 1
        assert stages.count(TAG) == 2 and stages.count("embed") == 2
        assert c.repos.items.get(ws, item.id).status is ItemStatus.READY
        with pytest.raises(ValidationError) as bad:
            c.items.reprocess(ws, item.id, from_stage="nonsense")
        assert (
            bad.value.field == "from"
            and "parse, chunk, tag, embed, entities, claims, relationships" in bad.value.message
        )


def test_reprocessing_starts_by_default_at_the_stage_that_failed(settings: Settings) -> None:
    stage = TagStage(failures=[FAILURES["permanent"]])
    with pipeline_with(settings, stage) as c:
        ws = workspace_id(c)
        item = c.ingest.ingest(ws, IngestRequest(text=TEXT))
        _drain(c)
        [again] = c.items.reprocess_failed(ws)
        assert again.item.id == item.id and again.from_stage == TAG
        assert _drain(c) == ["tag_item", *AFTER_TAG]
        ready = c.repos.items.get(ws, item.id)
        assert ready.status is ItemStatus.READY
        assert ready.error is None and ready.failed_stage is None


def _die_in_stage(data: Path, when: str) -> int:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.support.pipeline_stages", str(data), when],
        env=env,
        cwd=ROOT,
        capture_output=True,
        timeout=120,
        check=False,
    )
    return proc.returncode


@pytest.mark.slow
@pytest.mark.parametrize("when", ["inside", "after"])
def test_a_process_killed_in_a_stage_leaves_the_item_before_or_after_it(
    tmp_path: Path, when: str
) -> None:
    data = tmp_path / "data"
    c = container(data)
    try:
        c.pipeline.add(TagStage())
        ws = workspace_id(c)
        item = c.ingest.ingest(ws, IngestRequest(text=TEXT))
        pool = c.worker_pool(workers=1, name="before")
        pool.run_one()
        pool.run_one()  # parse, chunk: the tag job is pending
    finally:
        c.close()
    assert _die_in_stage(data, when) == -9
    c = container(data)
    try:
        c.pipeline.add(TagStage())
        [chunk] = c.repos.chunks.list_for_item(ws, item.id)
        runs = _runs(c, ws, item.id)
        [tag_job] = c.queue.list(ws, kind="tag_item")
        status = c.repos.items.get(ws, item.id).status
        if when == "inside":
            # Before the stage: no result, no run, no successor; the job waits for its lease.
            assert chunk.text != "tagged" and TAG not in {s for s, _ in runs}
            assert status is ItemStatus.PROCESSING and tag_job.status is JobStatus.RUNNING
        else:
            # After the stage: its result, its run, the skipped embed run, the job completed
            # and the next stage's job waiting.
            assert chunk.text == "tagged"
            assert runs[-2:] == [(TAG, "succeeded"), ("embed", str(RunOutcome.SKIPPED))]
            assert status is ItemStatus.PROCESSING and tag_job.status is JobStatus.SUCCEEDED
            [following] = c.queue.list(ws, kind="entities_item")
            assert following.status is JobStatus.PENDING
    finally:
        c.close()
