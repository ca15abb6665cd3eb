"""Server-side sessions: the browser holds a random token, the database only its SHA-256.

- A session ends at whichever comes first: ``idle`` after its last use (each use moves the
  idle expiry on, written at most once a minute) or ``absolute`` after sign-in. An expired
  session is deleted when presented and by ``purge`` (bounded, called at each sign-in).
- Every sign-in creates a new session with a new token (rotation: a token planted before
  sign-in is never promoted); sign-out deletes it; a password change deletes all the user's.
- The CSRF synchronizer token is derived from the session token (a keyed-by-the-secret hash),
  so it changes with the session, needs no storage, and cannot be computed without the
  cookie. ``csrf_ok`` compares in constant time.
- Before there is a session, the sign-in form carries the same kind of token derived from a
  random *pre-session* cookie (``PRESESSION_COOKIE``: HttpOnly, SameSite=Strict, short-lived),
  so a sign-in posted by another page is refused (login CSRF;
  docs/decisions/0027-request-limits-and-origins.md).
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from datetime import timedelta

from relata.domain.errors import Unavailable
from relata.domain.models import Session
from relata.domain.ports import Clock, SessionRepository
from relata.ids import hash_token, new_id, new_token, tokens_equal

#: Cookie names: ``__Host-`` requires Secure, path / and no Domain, so only over HTTPS.
COOKIE_NAME = "relata_session"
SECURE_COOKIE_NAME = "__Host-relata_session"
#: The pre-session cookie of the sign-in form (``csrf_token_for`` its value is the form's token).
PRESESSION_COOKIE = "relata_signin"
SECURE_PRESESSION_COOKIE = "__Host-relata_signin"
#: How long a sign-in form stays valid after it was first shown.
PRESESSION_MAX_AGE = timedelta(hours=2)
TOUCH_INTERVAL = timedelta(minutes=1)
PURGE_BATCH = 500


def csrf_token_for(session_token: str) -> str:
    """The synchronizer token of the session whose cookie holds ``session_token``."""
    return hash_token("csrf\x1f" + session_token)


def csrf_ok(session_token: str, presented: str | None) -> bool:
    if not presented:
        return False
    return tokens_equal(csrf_token_for(session_token), presented)


class SessionService:
    def __init__(
        self, repo: SessionRepository, clock: Clock, *, idle: timedelta, absolute: timedelta
    ) -> None:
        self._repo = repo
        self._clock = clock
        self.idle = idle
        self.absolute = absolute

    def start(self, user_id: str, workspace_id: str) -> tuple[str, Session]:
        """A new session and its token (shown to the browser once, never stored)."""
        self.purge()
        now = self._clock.now()
        token = new_token("rs")
        absolute = now + self.absolute
        session = Session(
            id=new_id(),
            user_id=user_id,
            workspace_id=workspace_id,
            token_hash=hash_token(token),
            created_at=now,
            idle_expiry=min(now + self.idle, absolute),
            absolute_expiry=absolute,
            last_seen_at=now,
        )
        self._repo.create(session)
        return token, session

    def resolve(self, token: str) -> Session | None:
        """The live session of ``token``, its idle expiry moved on; None when unknown or
        expired (an expired one is deleted)."""
        session = self._repo.get_by_hash(hash_token(token))
        if session is None:
            return None
        now = self._clock.now()
        if now >= session.idle_expiry or now >= session.absolute_expiry:
            self._repo.delete(session.id)
            return None
        seen = session.last_seen_at or session.created_at
        if now - seen >= TOUCH_INTERVAL:
            idle_expiry = min(now + self.idle, session.absolute_expiry)
            # Best effort: a busy database must not turn a read into a 503 (the idle expiry
            # then moves on at the next use).
            with contextlib.suppress(Unavailable):
                self._repo.touch(session.id, now, idle_expiry)
                session = replace(session, last_seen_at=now, idle_expiry=idle_expiry)
        return session

    def end(self, token: str) -> Session | None:
        """Sign-out: the session of ``token`` is deleted (None when there was none)."""
        session = self._repo.get_by_hash(hash_token(token))
        if session is not None:
            self._repo.delete(session.id)
        return session

    def end_all(self, user_id: str) -> int:
        return self._repo.delete_for_user(user_id)

    def purge(self, limit: int = PURGE_BATCH) -> int:
        """Delete at most ``limit`` expired sessions."""
        return self._repo.purge_expired(self._clock.now(), limit)
