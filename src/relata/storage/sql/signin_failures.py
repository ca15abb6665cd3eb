"""Failed sign-ins counted in the database, so every HTTP process of a deployment counts the
same failures (``relata serve --processes N``; docs/decisions/0036-http-processes.md).

The same contract as ``relata.auth.ratelimit.FailureLimiter`` (in memory, one process): a
key is refused once it has ``max_failures`` failures within the last ``window`` seconds and
released as soon as the oldest of them leaves the window. One row per failure; ``fail``
deletes what has left the window (every key's, through the index on ``failed_at``), so the
table holds at most the failures of the last window. A key refused is not verified, so it
adds no rows: rows per key stay about ``max_failures`` (a few more if requests race).
Keys are truncated to the column's 200 characters.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import sqlalchemy as sa

from relata.domain.ports import Clock
from relata.storage.sql.engine import Database
from relata.storage.sql.tables import signin_failures

_KEY_CHARS = 200


class SqlFailureLimiter:
    def __init__(
        self, db: Database, clock: Clock, *, max_failures: int, window_seconds: float
    ) -> None:
        if max_failures < 1 or window_seconds <= 0:
            raise ValueError("max_failures and window_seconds must be positive")
        self._db = db
        self._clock = clock
        self._max = max_failures
        self._window = timedelta(seconds=window_seconds)

    def retry_after(self, key: str) -> int | None:
        """Seconds until ``key`` may try again, or None when it may now."""
        now = self._clock.now()
        t = signin_failures.c
        with self._db.read(shared=False) as conn:
            times = conn.execute(
                sa.select(t.failed_at)
                .where(t.key == key[:_KEY_CHARS], t.failed_at > now - self._window)
                .order_by(t.failed_at.desc())
                .limit(self._max)
            ).scalars()
            recent: list[datetime] = list(times)
        if len(recent) < self._max:
            return None
        oldest = recent[-1]  # the max-th most recent failure
        left = (self._window - (now - oldest)).total_seconds()
        return max(1, math.ceil(left))

    def fail(self, key: str) -> None:
        now = self._clock.now()
        t = signin_failures.c
        with self._db.write(durable=False) as conn:
            conn.execute(sa.delete(signin_failures).where(t.failed_at <= now - self._window))
            conn.execute(sa.insert(signin_failures).values(key=key[:_KEY_CHARS], failed_at=now))

    def clear(self, key: str) -> None:
        with self._db.write(durable=False) as conn:
            conn.execute(
                sa.delete(signin_failures).where(signin_failures.c.key == key[:_KEY_CHARS])
            )

    def __len__(self) -> int:
        """Keys with a failure still in the window (what the in-memory limiter counts)."""
        now = self._clock.now()
        t = signin_failures.c
        with self._db.read(shared=False) as conn:
            n = conn.execute(
                sa.select(sa.func.count(sa.distinct(t.key))).where(t.failed_at > now - self._window)
            ).scalar_one()
        return int(n)
