"""The correlation id of the current request or job, carried in a context variable.

The HTTP middleware sets it from ``X-Request-ID`` (or a fresh id); the job queue stores it
with each job and sets it again while the job runs, so a job's logs carry the id of the
request that caused it.
"""

from __future__ import annotations

import contextvars
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

_correlation_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "relata_correlation_id", default=None
)
_SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def get_correlation_id() -> str | None:
    return _correlation_id.get()


def new_correlation_id() -> str:
    return uuid.uuid4().hex


def sanitise_incoming(value: str | None) -> str:
    """Accept a client's request id only if it is short and plain; otherwise make one."""
    if value and _SAFE_ID.match(value):
        return value
    return new_correlation_id()


@contextmanager
def correlation(cid: str | None) -> Iterator[str]:
    value = cid or new_correlation_id()
    token = _correlation_id.set(value)
    try:
        yield value
    finally:
        _correlation_id.reset(token)


def set_correlation_id(cid: str | None) -> contextvars.Token[str | None]:
    return _correlation_id.set(cid)


def reset_correlation_id(token: contextvars.Token[str | None]) -> None:
    _correlation_id.reset(token)
