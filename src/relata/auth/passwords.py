"""Password hashing with Argon2id (argon2-cffi's defaults: 64 MiB, t=3, p=4).

Verification is deliberately slow (~0.1 s), so callers bound how many run at once.
"""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from relata.domain.errors import ValidationError

MIN_LENGTH = 12
MAX_LENGTH = 1024
_hasher = PasswordHasher()


def validate_password(password: str) -> str:
    if len(password) < MIN_LENGTH:
        raise ValidationError(
            f"password must be at least {MIN_LENGTH} characters", field="password"
        )
    if len(password) > MAX_LENGTH:
        raise ValidationError(f"password must be at most {MAX_LENGTH} characters", field="password")
    return password


def hash_password(password: str) -> str:
    return _hasher.hash(validate_password(password))


def verify_password(stored_hash: str, password: str) -> bool:
    try:
        return bool(_hasher.verify(stored_hash, password))
    except (VerificationError, InvalidHashError):
        return False


def is_argon2id(stored_hash: str) -> bool:
    return stored_hash.startswith("$argon2id$")
