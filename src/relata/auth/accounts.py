"""Accounts: creating users, signing in and out, changing a password.

Sign-in answers an unknown user and a wrong password alike: the same error, and an Argon2
verification in both cases (an unknown user is checked against a dummy hash), so neither the
response nor its timing tells whether an account exists. Before verifying, the account and
the client address are checked against the failure limiters (``relata.auth.ratelimit``;
counted in the database, so every HTTP process counts the same failures), so guessing is
slowed per account and per address; a success clears the account's counter. The
address allows ``ADDRESS_FACTOR`` times the account's failures: people behind one proxy or
office address share it, and a few mistyped passwords there must not lock everyone out.
Verifications run at most ``concurrency`` at once (each costs ~0.1 s and 64 MiB); a caller
that waits too long gets ``Overloaded`` (503) rather than piling up memory.

Each user has a workspace they sign in to: their private one (``users create``), or the
default workspace for the first administrator (docs/decisions/0022-accounts-sessions-tokens.md).
"""

from __future__ import annotations

import math
import re
import secrets
import threading
from dataclasses import dataclass

from relata.auth.passwords import MAX_LENGTH, Argon2Hasher
from relata.auth.ratelimit import FailureCounter
from relata.auth.sessions import SessionService
from relata.domain.errors import (
    Forbidden,
    NotFound,
    Overloaded,
    RateLimited,
    Unauthenticated,
    ValidationError,
)
from relata.domain.models import Actor, Membership, Session, User, Workspace
from relata.domain.ports import AuditRecorder, Clock, PasswordHasher, UserRepository
from relata.domain.vocabulary import ActorKind, AuditAction, AuditTarget, Role
from relata.ids import new_id

BAD_CREDENTIALS = "username or password is incorrect"
TOO_MANY = "too many failed sign-ins; try again in {wait}"
#: How many times the account's failures one client address may have.
ADDRESS_FACTOR = 4
VERIFY_WAIT_SECONDS = 10.0
_USERNAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


def validate_username(username: str) -> str:
    u = username.strip().lower()
    if not _USERNAME.match(u):
        raise ValidationError(
            "username must be 1-64 lowercase letters, digits, '.', '_' or '-'", field="username"
        )
    return u


@dataclass(frozen=True, slots=True)
class SignedIn:
    token: str
    session: Session
    user: User


class AccountService:
    def __init__(
        self,
        users: UserRepository,
        sessions: SessionService,
        clock: Clock,
        *,
        limiter: FailureCounter,
        audit: AuditRecorder,
        concurrency: int = 2,
        address_limiter: FailureCounter | None = None,
        hasher: PasswordHasher | None = None,
    ) -> None:
        self._users = users
        self._hasher: PasswordHasher = hasher or Argon2Hasher()
        self.sessions = sessions
        self._clock = clock
        self._limiter = limiter
        self._address_limiter = limiter if address_limiter is None else address_limiter
        self._audit = audit
        self._verify_slots = threading.BoundedSemaphore(concurrency)
        self._dummy_hash: str | None = None
        self._dummy_lock = threading.Lock()

    # ------------------------------------------------------------ users
    def create_user(
        self,
        username: str,
        password: str,
        *,
        workspace: Workspace,
        role: Role,
        is_admin: bool = False,
        display_name: str = "",
    ) -> User:
        user = User(
            id=new_id(),
            username=validate_username(username),
            password_hash=self._hasher.hash(password),
            display_name=display_name,
            is_admin=is_admin,
            created_at=self._clock.now(),
        )
        self._users.create(user)
        self._users.add_member(workspace.id, user.id, role.value)
        return user

    def add_member(self, workspace_id: str, user_id: str, role: Role) -> None:
        """Conflict when the user is already a member."""
        self._users.add_member(workspace_id, user_id, role.value)

    def get_by_username(self, username: str) -> User:
        return self._users.get_by_username(username.strip().lower())

    def get(self, user_id: str) -> User:
        return self._users.get(user_id)

    def users(self) -> list[User]:
        return self._users.list()

    def count(self) -> int:
        return self._users.count()

    def memberships(self, user_id: str) -> list[Membership]:
        return self._users.memberships(user_id)

    def role_in(self, user_id: str, workspace_id: str) -> Role | None:
        return self._users.role_in(user_id, workspace_id)

    def home(self, user_id: str) -> Membership | None:
        """The workspace a user signs in to: their first as owner, else their first."""
        memberships = self._users.memberships(user_id)
        owned = [m for m in memberships if m.role is Role.OWNER]
        chosen = owned or memberships
        return chosen[0] if chosen else None

    def change_password(self, user_id: str, new_password: str) -> int:
        """Set a new password and end every session of the user; returns how many ended."""
        self._users.set_password_hash(user_id, self._hasher.hash(new_password))
        return self.sessions.end_all(user_id)

    # ------------------------------------------------------------ signing in
    def _verify(self, stored_hash: str | None, password: str) -> bool:
        if not self._verify_slots.acquire(timeout=VERIFY_WAIT_SECONDS):
            raise Overloaded("too many sign-ins at once; try again shortly")
        try:
            if stored_hash is None:
                self._hasher.verify(self._dummy(), password)
                return False
            return self._hasher.verify(stored_hash, password)
        finally:
            self._verify_slots.release()

    def _dummy(self) -> str:
        # Made by the same hasher as real hashes: an unknown user costs what a wrong password does.
        with self._dummy_lock:
            if self._dummy_hash is None:
                self._dummy_hash = self._hasher.hash(secrets.token_urlsafe(24))
            return self._dummy_hash

    def sign_in(self, username: str, password: str, *, client: str | None) -> SignedIn:
        """A new session for the user, or ``Unauthenticated`` (the same for an unknown user
        and a wrong password) or ``RateLimited``."""
        account_key = "u:" + username.strip().lower()[:128]
        address_key = "a:" + (client or "unknown")
        waits = [
            w
            for w in (
                self._limiter.retry_after(account_key),
                self._address_limiter.retry_after(address_key),
            )
            if w
        ]
        if waits:
            wait = max(waits)
            words = f"{wait} seconds" if wait < 120 else f"{math.ceil(wait / 60)} minutes"
            raise RateLimited(TOO_MANY.format(wait=words), retry_after=wait)
        too_long = len(password) > MAX_LENGTH
        try:
            user: User | None = self._users.get_by_username(username.strip().lower())
        except NotFound:
            user = None
        stored = user.password_hash if user is not None and not user.disabled else None
        ok = False if too_long else self._verify(stored, password)
        home = self.home(user.id) if user is not None and ok else None
        if user is None or not ok:
            self._limiter.fail(account_key)
            self._address_limiter.fail(address_key)
            if user is not None:
                failed_home = self.home(user.id)
                if failed_home is not None:
                    self._audit.record(
                        failed_home.workspace.id,
                        AuditAction.SIGN_IN_FAILED,
                        Actor(ActorKind.USER, user_id=user.id),
                        target_kind=AuditTarget.USER,
                        target_id=user.id,
                    )
            raise Unauthenticated(BAD_CREDENTIALS)
        if home is None:
            raise Forbidden("this account is not a member of any workspace")
        self._limiter.clear(account_key)
        token, session = self.sessions.start(user.id, home.workspace.id)
        self._audit.record(
            home.workspace.id,
            AuditAction.SIGN_IN_SUCCEEDED,
            Actor(ActorKind.USER, user_id=user.id),
            target_kind=AuditTarget.USER,
            target_id=user.id,
        )
        return SignedIn(token, session, user)

    def sign_out(self, token: str) -> None:
        session = self.sessions.end(token)
        if session is not None:
            self._audit.record(
                session.workspace_id,
                AuditAction.SIGNED_OUT,
                Actor(ActorKind.USER, user_id=session.user_id),
                target_kind=AuditTarget.USER,
                target_id=session.user_id,
            )
