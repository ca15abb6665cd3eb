"""The job queue's policies without a database: which failures retry, how long a retry
waits (bounded exponential backoff with full jitter), what ``last_error`` may hold, and
input validation that names the offending parameter before anything reaches the store."""

from __future__ import annotations

import random
import sqlite3
from typing import Any, cast

import pytest
import sqlalchemy as sa

from relata.analysis.errors import AnalysisDisabled, InvalidModelOutput
from relata.analysis.failures import ModelProviderFailed, ModelProviderUnavailable
from relata.config.settings import load_settings
from relata.domain.cancel import Cancelled
from relata.domain.clock import ManualClock
from relata.domain.errors import (
    ConfigError,
    DuplicateKey,
    LeaseLost,
    NotConfigured,
    NotFound,
    Overloaded,
    Permanent,
    Unavailable,
    UnsupportedContent,
    ValidationError,
)
from relata.domain.ports import JobRepository
from relata.jobs.queue import MAX_PAYLOAD_BYTES, JobQueue
from relata.jobs.registry import HandlerRegistry
from relata.jobs.retry import (
    MAX_ERROR_CHARS,
    Backoff,
    FailureClassifier,
    Outcome,
    classify,
    describe,
)
from relata.storage.sql.transient import is_transient


class _UntouchableStore:
    """Any call means validation let bad input through to the store."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the store was called ({name}) with input that should be refused")


def _queue(kinds: list[str] | None = None) -> JobQueue:
    return JobQueue(
        cast(JobRepository, _UntouchableStore()),
        ManualClock(),
        max_attempts=3,
        lease_seconds=1.0,
        known_kinds=(lambda: kinds) if kinds is not None else None,
    )


def test_backoff_ceiling_doubles_per_attempt_up_to_the_cap() -> None:
    b = Backoff(base=2.0, cap=30.0)
    assert [b.ceiling(n) for n in range(1, 7)] == [2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert b.ceiling(10_000) == 30.0  # no overflow however many attempts


def test_backoff_uses_full_jitter_between_zero_and_the_ceiling() -> None:
    b = Backoff(base=1.0, cap=60.0, rng=random.Random(1))
    draws = [b.delay(4) for _ in range(2000)]
    assert all(0.0 <= d <= 8.0 for d in draws)
    # Full jitter spreads retries over the whole window, not around its top.
    assert min(draws) < 0.1 and max(draws) > 7.9


def _sql_error(orig: Exception) -> sa.exc.OperationalError:
    return sa.exc.OperationalError("UPDATE items SET ...", {}, orig)


class _PgError(Exception):
    def __init__(self, sqlstate: str) -> None:
        super().__init__(f"sqlstate {sqlstate}")
        self.sqlstate = sqlstate


# The one classifier's table (relata.jobs.retry): every error class to its outcome.
CLASSIFIER_TABLE = [
    (Permanent("invalid model output"), Outcome.PERMANENT),
    (InvalidModelOutput("not_json"), Outcome.PERMANENT),
    (ModelProviderFailed("the provider refused"), Outcome.PERMANENT),
    (NotFound("item not found"), Outcome.PERMANENT),
    (UnsupportedContent("not a PDF"), Outcome.PERMANENT),
    (ValidationError("bad", field="x"), Outcome.PERMANENT),
    (ConfigError("bad setting"), Outcome.PERMANENT),
    # Programming errors are bugs: repeating them only spends the attempt budget.
    (TypeError("unsupported operand"), Outcome.PERMANENT),
    (AttributeError("no attribute"), Outcome.PERMANENT),
    (KeyError("text"), Outcome.PERMANENT),
    (RuntimeError("anything else"), Outcome.PERMANENT),
    (Cancelled("lease lost"), Outcome.ABANDONED),
    (LeaseLost("gone"), Outcome.ABANDONED),
    (NotConfigured("no embedder"), Outcome.SKIP),
    (AnalysisDisabled(), Outcome.SKIP),
    (Unavailable("model server down"), Outcome.TRANSIENT),
    (ModelProviderUnavailable("overloaded"), Outcome.TRANSIENT),
    (Overloaded("busy"), Outcome.TRANSIENT),
    (TimeoutError("timed out"), Outcome.TRANSIENT),
    (ConnectionError("refused"), Outcome.TRANSIENT),
    (ConnectionResetError("reset"), Outcome.TRANSIENT),
    (DuplicateKey("raced"), Outcome.TRANSIENT),
    (_sql_error(sqlite3.OperationalError("database is locked")), Outcome.TRANSIENT),
    (_sql_error(_PgError("40001")), Outcome.TRANSIENT),  # serialization failure
    (_sql_error(_PgError("40P01")), Outcome.TRANSIENT),  # deadlock
    (_sql_error(_PgError("08006")), Outcome.TRANSIENT),  # connection failure
    (_sql_error(sqlite3.OperationalError("no such table: items")), Outcome.PERMANENT),
    (_sql_error(_PgError("42P01")), Outcome.PERMANENT),  # undefined table
]


@pytest.mark.parametrize(("exc", "outcome"), CLASSIFIER_TABLE)
def test_the_classifier_table(exc: Exception, outcome: Outcome) -> None:
    classifier = FailureClassifier([is_transient])
    assert classifier.classify(exc) is outcome


def test_without_the_sql_recogniser_a_database_error_is_permanent() -> None:
    # The job layer knows no SQL: only the recogniser the composition root registers does.
    assert classify(_sql_error(sqlite3.OperationalError("database is locked"))) is (
        Outcome.PERMANENT
    )


def test_a_recorded_error_is_the_type_and_a_short_message_never_foreign_text() -> None:
    assert describe(NotFound("item not found")) == "NotFound: item not found"
    assert describe(KeyError("a key from the document")) == "KeyError"
    assert describe(ValueError("a fragment of the document")) == "ValueError"
    long = describe(Permanent("x" * 5000 + "\n\nmore"))
    assert long.startswith("Permanent: xxx") and len(long) <= MAX_ERROR_CHARS
    assert "\n" not in long


def test_registering_a_kind_twice_or_a_bad_kind_is_refused() -> None:
    r = HandlerRegistry()
    r.register("parse_item", lambda ctx: None)
    with pytest.raises(ValueError, match="already registered"):
        r.register("parse_item", lambda ctx: None)
    with pytest.raises(ValueError, match="invalid job kind"):
        r.register("Parse Item", lambda ctx: None)
    r.register("chunk_item", lambda ctx: None)
    assert r.kinds() == ["chunk_item", "parse_item"] and "chunk_item" in r
    assert r.get("missing") is None


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"kind": "Not A Kind"}, "kind"),
        ({"kind": ""}, "kind"),
        ({"payload": ["not", "an", "object"]}, "payload"),
        ({"payload": {"x": {1, 2}}}, "payload"),
        ({"payload": {"x": float("nan")}}, "payload"),
        ({"payload": {"text": "x" * MAX_PAYLOAD_BYTES}}, "payload"),
        ({"idempotency_key": "k" * 256}, "idempotency_key"),
        ({"max_attempts": 0}, "max_attempts"),
    ],
)
def test_bad_enqueue_input_names_its_field(kwargs: dict[str, Any], field: str) -> None:
    args: dict[str, Any] = {"kind": "parse_item", "payload": {}, **kwargs}
    kind, payload = args.pop("kind"), args.pop("payload")
    with pytest.raises(ValidationError) as err:
        _queue().enqueue(kind, "ws", payload, **args)
    assert err.value.field == field


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"status": "done"}, "status"),
        ({"kind": "embed_item"}, "kind"),
        ({"limit": 0}, "limit"),
        ({"limit": 1001}, "limit"),
        ({"offset": -1}, "offset"),
    ],
)
def test_bad_list_filters_name_their_parameter(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        _queue(kinds=["parse_item"]).list("ws", **kwargs)
    assert err.value.field == field


def test_the_kind_filter_lists_the_registered_kinds() -> None:
    with pytest.raises(ValidationError, match="one of: chunk_item, parse_item"):
        _queue(kinds=["parse_item", "chunk_item"]).list("ws", kind="nope")


@pytest.mark.parametrize(
    ("env", "value"),
    [
        ("RELATA_WORKERS", "65"),
        ("RELATA_AI_CONCURRENCY", "0"),
        ("RELATA_JOB_MAX_ATTEMPTS", "0"),
        ("RELATA_JOB_LEASE_SECONDS", "0"),
        ("RELATA_JOB_POLL_SECONDS", "soon"),
    ],
)
def test_job_settings_are_validated_by_name(env: str, value: str) -> None:
    with pytest.raises(ConfigError, match=env):
        load_settings({env: value})
