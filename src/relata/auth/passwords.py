"""Password hashing with Argon2id (RFC 9106), behind the ``PasswordHasher`` port.

``Argon2Hasher()`` runs at production cost, argon2-cffi's defaults (64 MiB, t=3, p=4):
verification is deliberately slow (~0.1 s), so callers bound how many run at once.
``bootstrap.build`` takes another hasher as a port; the tests pass an ``Argon2Hasher`` with a
cheap parameter set (still Argon2id, still verified), except where the cost itself is the
point (docs/decisions/0030-test-suite.md). A hash records its own parameters, so a hash made
at one cost verifies under a hasher set to another.
"""

from __future__ import annotations

from dataclasses import dataclass

from argon2 import PasswordHasher as _Argon2
from argon2 import Type
from argon2.exceptions import InvalidHashError, VerificationError

from relata.domain.errors import ValidationError

MIN_LENGTH = 12
MAX_LENGTH = 1024


@dataclass(frozen=True, slots=True)
class Argon2Cost:
    """Argon2id's cost parameters: passes, memory (KiB) and lanes."""

    time_cost: int
    memory_kib: int
    parallelism: int


#: argon2-cffi's defaults, RFC 9106's second recommended option.
PRODUCTION_COST = Argon2Cost(time_cost=3, memory_kib=64 * 1024, parallelism=4)


def validate_password(password: str) -> str:
    if len(password) < MIN_LENGTH:
        raise ValidationError(
            f"password must be at least {MIN_LENGTH} characters", field="password"
        )
    if len(password) > MAX_LENGTH:
        raise ValidationError(f"password must be at most {MAX_LENGTH} characters", field="password")
    return password


class Argon2Hasher:
    """The ``PasswordHasher`` port on argon2-cffi, Argon2id at ``cost``."""

    def __init__(self, cost: Argon2Cost = PRODUCTION_COST) -> None:
        self.cost = cost
        self._argon2 = _Argon2(
            time_cost=cost.time_cost,
            memory_cost=cost.memory_kib,
            parallelism=cost.parallelism,
            type=Type.ID,
        )

    def hash(self, password: str) -> str:
        return self._argon2.hash(validate_password(password))

    def verify(self, stored_hash: str, password: str) -> bool:
        try:
            return bool(self._argon2.verify(stored_hash, password))
        except (VerificationError, InvalidHashError):
            return False


def is_argon2id(stored_hash: str) -> bool:
    return stored_hash.startswith("$argon2id$")
