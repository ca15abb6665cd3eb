"""The sign-in failure limit in the database (``storage.sql.signin_failures``), on SQLite and
PostgreSQL: the in-memory limiter's contract, and one count shared by every process of a
deployment, so N HTTP processes do not give a guesser N times the failures (ADR 0036)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pytest
import sqlalchemy as sa

from relata.bootstrap import Container, build
from relata.config.settings import Settings
from relata.domain.clock import ManualClock
from relata.domain.errors import RateLimited, Unauthenticated
from relata.storage.sql.engine import Database
from relata.storage.sql.signin_failures import SqlFailureLimiter
from relata.storage.sql.tables import signin_failures
from tests.support.api import PASSWORD, make_user
from tests.support.passwords import TEST_HASHER

pytestmark = pytest.mark.both_dialects

WINDOW = 900.0


def _rows(db: Database) -> int:
    with db.read() as conn:
        return int(
            conn.execute(sa.select(sa.func.count()).select_from(signin_failures)).scalar_one()
        )


def test_a_key_is_refused_at_the_limit_and_released_when_its_oldest_failure_leaves(
    db: Database,
) -> None:
    clock = ManualClock()
    limiter = SqlFailureLimiter(db, clock, max_failures=3, window_seconds=WINDOW)
    for _ in range(2):
        limiter.fail("u:ada")
        clock.advance(10)
    assert limiter.retry_after("u:ada") is None  # two of three
    limiter.fail("u:ada")
    assert limiter.retry_after("u:ada") == int(WINDOW) - 20  # the oldest left 880 s later
    assert limiter.retry_after("u:bob") is None  # keys are separate
    assert len(limiter) == 1
    clock.advance(WINDOW - 20)
    assert limiter.retry_after("u:ada") is None  # the oldest has left the window
    limiter.clear("u:ada")
    assert limiter.retry_after("u:ada") is None and len(limiter) == 0


def test_failures_older_than_the_window_are_deleted(db: Database) -> None:
    clock = ManualClock()
    limiter = SqlFailureLimiter(db, clock, max_failures=3, window_seconds=WINDOW)
    for n in range(5):
        limiter.fail(f"a:10.0.0.{n}")
    assert _rows(db) == 5
    clock.advance(WINDOW)
    limiter.fail("a:10.0.0.9")  # each failure prunes every key's expired rows
    assert _rows(db) == 1


def test_a_very_long_key_is_truncated_not_refused(db: Database) -> None:
    limiter = SqlFailureLimiter(db, ManualClock(), max_failures=1, window_seconds=WINDOW)
    key = "u:" + "x" * 1000
    limiter.fail(key)
    assert limiter.retry_after(key) is not None


@pytest.fixture
def two_processes(settings: Settings) -> Iterator[tuple[Container, Container]]:
    """Two containers on one database: what two HTTP processes of one deployment hold."""
    clock = ManualClock()
    one = settings.replace(embedding_provider="none", login_max_failures=3)
    with ExitStack() as stack:
        a = build(one, clock=clock, password_hasher=TEST_HASHER)
        stack.callback(a.close)
        b = build(one, clock=clock, password_hasher=TEST_HASHER)
        stack.callback(b.close)
        a.workspaces.ensure(settings.default_workspace)
        yield a, b


def test_failures_spread_over_two_processes_are_counted_once(
    two_processes: tuple[Container, Container],
) -> None:
    a, b = two_processes
    make_user(a, username="ada")
    for c in (a, b, a):  # login_max_failures=3, spread over both
        with pytest.raises(Unauthenticated):
            c.accounts.sign_in("ada", "nope", client="10.0.0.1")
    for c in (a, b):  # refused in both, even with the right password
        with pytest.raises(RateLimited):
            c.accounts.sign_in("ada", PASSWORD, client="10.0.0.2")


def test_a_success_in_one_process_clears_the_count_for_the_other(
    two_processes: tuple[Container, Container],
) -> None:
    a, b = two_processes
    make_user(a, username="ada")
    for c in (a, b):
        with pytest.raises(Unauthenticated):
            c.accounts.sign_in("ada", "nope", client="10.0.0.1")
    b.accounts.sign_in("ada", PASSWORD, client="10.0.0.1")
    for c in (b, a):  # two more failures: the count began again at the success
        with pytest.raises(Unauthenticated):
            c.accounts.sign_in("ada", "nope", client="10.0.0.1")
    a.accounts.sign_in("ada", PASSWORD, client="10.0.0.1")
