"""The provider-agnostic retry helpers: what is retried, how often, how long, and cancellation."""

from __future__ import annotations

import random

import httpx
import pytest

from relata.domain.cancel import Cancel, Cancelled
from relata.domain.errors import Permanent, Unavailable, ValidationError
from relata.providers.http import redact
from relata.providers.retry import (
    MalformedResponse,
    ProviderUnreachable,
    RetriesExhausted,
    RetryPolicy,
    StatusError,
    do,
    is_retryable,
    permanent,
)

POLICY = RetryPolicy(max_attempts=4, base_delay=0.5, max_delay=3.0)


class Recorder:
    """A ``sleep`` for ``do`` that records delays instead of sleeping."""

    def __init__(self, cancel_after: int | None = None) -> None:
        self.delays: list[float] = []
        self.cancel_after = cancel_after

    def __call__(self, cancel: Cancel, seconds: float) -> bool:
        self.delays.append(seconds)
        if self.cancel_after is not None and len(self.delays) >= self.cancel_after:
            cancel.cancel("lease lost")
        return cancel.cancelled


class Script:
    """A callable that raises the given errors in turn, then returns ``"done"``."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.attempts: list[int] = []

    def __call__(self, attempt: int) -> str:
        self.attempts.append(attempt)
        if self.errors:
            raise self.errors.pop(0)
        return "done"


class MaxRandom(random.Random):
    """Always draws the top of the range, to expose the backoff ceiling."""

    def uniform(self, a: float, b: float) -> float:
        return b


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        (httpx.ConnectError("refused"), True),
        (httpx.ReadTimeout("slow"), True),
        (ProviderUnreachable("down"), True),
        (MalformedResponse("bad envelope"), True),
        (StatusError(429, op="t"), True),
        (StatusError(500, op="t"), True),
        (StatusError(503, op="t"), True),
        (StatusError(599, op="t"), True),
        (StatusError(400, op="t"), False),
        (StatusError(401, op="t"), False),
        (StatusError(404, op="t"), False),
        (StatusError(422, op="t"), False),
        (Permanent("no"), False),
        (Cancelled("stop"), False),
        (ValueError("bug"), False),
        (ValidationError("bad", field="x"), False),
    ],
)
def test_only_transient_failures_are_retryable(error: BaseException, retryable: bool) -> None:
    assert is_retryable(error) is retryable


def test_transient_failures_are_retried_until_success() -> None:
    fn = Script(StatusError(503, op="t"), StatusError(429, op="t"), httpx.ReadTimeout("slow"))
    sleep = Recorder()
    assert do(fn, POLICY, Cancel.never(), sleep=sleep) == "done"
    assert fn.attempts == [0, 1, 2, 3]
    assert len(sleep.delays) == 3


def test_attempts_are_bounded_and_the_last_error_is_kept() -> None:
    last = StatusError(502, op="embed", body="bad gateway")
    fn = Script(*[StatusError(503, op="embed")] * 3, last, StatusError(503, op="embed"))
    sleep = Recorder()
    with pytest.raises(RetriesExhausted) as info:
        do(fn, POLICY, Cancel.never(), sleep=sleep)
    assert fn.attempts == [0, 1, 2, 3]
    assert len(sleep.delays) == 3  # no sleep after the last attempt
    assert info.value.last is last and info.value.__cause__ is last
    assert info.value.attempts == 4
    assert "bad gateway" in str(info.value)
    # Exhausted retries are "unavailable", not permanent: the job layer may try later.
    assert isinstance(info.value, Unavailable) and not isinstance(info.value, Permanent)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_permanent_at_once(status: int) -> None:
    err = StatusError(status, op="embed", body="model not found")
    fn = Script(err)
    sleep = Recorder()
    with pytest.raises(Permanent) as info:
        do(fn, POLICY, Cancel.never(), sleep=sleep)
    assert fn.attempts == [0]
    assert sleep.delays == []
    assert info.value.__cause__ is err
    assert "model not found" in str(info.value)


def test_a_permanent_error_is_raised_unchanged() -> None:
    err = Permanent("response too large")
    with pytest.raises(Permanent) as info:
        do(Script(err), POLICY, Cancel.never(), sleep=Recorder())
    assert info.value is err


def test_a_programming_error_is_not_retried_and_keeps_its_type() -> None:
    fn = Script(KeyError("oops"))
    with pytest.raises(KeyError):
        do(fn, POLICY, Cancel.never(), sleep=Recorder())
    assert fn.attempts == [0]


def test_backoff_is_exponential_and_capped() -> None:
    fn = Script(*[StatusError(500, op="t")] * 5)
    sleep = Recorder()
    policy = RetryPolicy(max_attempts=6, base_delay=0.5, max_delay=3.0)
    do(fn, policy, Cancel.never(), sleep=sleep, rng=MaxRandom())
    assert sleep.delays == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_backoff_has_full_jitter_within_the_ceiling() -> None:
    policy = RetryPolicy(max_attempts=4, base_delay=1.0, max_delay=4.0)
    rng = random.Random(7)
    for attempt in range(6):
        ceiling = min(4.0, 1.0 * 2**attempt)
        draws = [policy.backoff(attempt, rng) for _ in range(200)]
        assert all(0.0 <= d <= ceiling for d in draws)
        assert min(draws) < ceiling * 0.2 and max(draws) > ceiling * 0.8  # the whole range


def test_retry_after_from_the_server_raises_the_delay_up_to_the_cap() -> None:
    fn = Script(StatusError(429, op="t", retry_after=2.0), StatusError(429, op="t", retry_after=60))
    sleep = Recorder()
    do(fn, POLICY, Cancel.never(), sleep=sleep, rng=random.Random(1))
    assert sleep.delays[0] >= 2.0
    assert sleep.delays[1] == POLICY.max_delay


def test_cancelled_before_the_first_attempt_never_calls() -> None:
    cancel = Cancel()
    cancel.cancel("shutdown")
    fn = Script()
    with pytest.raises(Cancelled):
        do(fn, POLICY, cancel, sleep=Recorder())
    assert fn.attempts == []


def test_cancellation_during_backoff_stops_retrying() -> None:
    fn = Script(*[StatusError(503, op="t")] * 3)
    with pytest.raises(Cancelled):
        do(fn, POLICY, Cancel(), sleep=Recorder(cancel_after=1))
    assert fn.attempts == [0]


def test_cancelled_raised_by_the_call_propagates_without_retry() -> None:
    fn = Script(Cancelled("lease lost"))
    with pytest.raises(Cancelled):
        do(fn, POLICY, Cancel.never(), sleep=Recorder())
    assert fn.attempts == [0]


def test_the_default_sleep_wakes_on_cancellation() -> None:
    cancel = Cancel.after(0.05)
    fn = Script(*[StatusError(503, op="t")] * 3)
    policy = RetryPolicy(max_attempts=3, base_delay=30.0, max_delay=30.0)
    with pytest.raises(Cancelled):
        do(fn, policy, cancel, rng=MaxRandom())  # would sleep 30 s without the cancel
    assert fn.attempts == [0]


def test_permanent_wraps_once_and_keeps_the_cause() -> None:
    err = StatusError(400, op="t")
    wrapped = permanent(err)
    assert isinstance(wrapped, Permanent) and wrapped.__cause__ is err
    assert permanent(wrapped) is wrapped
    assert str(permanent(err, "unknown model")) == "unknown model"


@pytest.mark.parametrize("bad", [{"max_attempts": 0}, {"base_delay": -1.0}, {"max_delay": -0.1}])
def test_a_nonsensical_policy_is_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**bad)  # type: ignore[arg-type]


def test_redact_removes_secrets_and_bearer_tokens() -> None:
    text = "key sk-live-abcdef123456 sent as Authorization: Bearer tok.en-42, secret=hunter2x"
    out = redact(text, ["hunter2x", ""])
    assert "hunter2x" not in out
    assert "tok.en-42" not in out and "Bearer [REDACTED]" in out
    assert "sk-live-abcdef123456" not in out
    assert out.startswith("key [REDACTED]")
