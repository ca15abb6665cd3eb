"""Identifiers: random UUIDs, deterministic chunk ids and dedupe keys, and secret tokens.

Chunk ids are UUIDv5 over (workspace, item, sequence, content hash), so re-chunking an
unchanged item reproduces the same ids (and the same vector point ids). Session and API
tokens come from ``secrets`` (a CSPRNG) and only their SHA-256 is ever stored.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import uuid

# A fixed namespace for Relata's UUIDv5 ids. Changing it would change every chunk id.
_NAMESPACE = uuid.UUID("6f0b9c1e-3f53-4c53-9a3c-7d8a1e0b2c44")
_SEP = "\x1f"  # unit separator: cannot appear in UUIDs or hex digests


def new_id() -> str:
    """A random UUID (version 4) as a string."""
    return str(uuid.uuid4())


def content_hash(data: bytes | str) -> str:
    """SHA-256 hex digest of bytes, or of a string's UTF-8 encoding."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def chunk_id(workspace_id: str, item_id: str, sequence: int, chunk_hash: str) -> str:
    """Deterministic chunk id: the same inputs always give the same UUID."""
    if not workspace_id or not item_id:
        raise ValueError("chunk_id needs a workspace and an item")
    name = _SEP.join((workspace_id, item_id, str(sequence), chunk_hash))
    return str(uuid.uuid5(_NAMESPACE, name))


def dedupe_key(kind: str, *parts: str) -> str:
    """Deterministic key for a derived record, e.g. a relationship's endpoint pair.

    Parts are joined with a separator that cannot occur in them, so ("ab", "c") and
    ("a", "bc") never collide.
    """
    if not kind:
        raise ValueError("dedupe_key needs a kind")
    return hashlib.sha256(_SEP.join((kind, *parts)).encode("utf-8")).hexdigest()


def pair_key(kind: str, a: str, b: str) -> str:
    """Dedupe key for an unordered pair: (a, b) and (b, a) give the same key."""
    lo, hi = sorted((a, b))
    return dedupe_key(kind, lo, hi)


def new_token(prefix: str = "rl") -> str:
    """A fresh secret token (256 bits from the CSPRNG). Show it once; store only its hash."""
    return f"{prefix}_{secrets.token_urlsafe(32)}"


#: ``<kind>_<8 hex>_<43 url-safe characters>``: the shape of a prefixed secret.
_PREFIXED = re.compile(r"^([a-z]{2})_([0-9a-f]{8})_[A-Za-z0-9_-]{43}$")


def new_prefixed_secret(kind: str) -> tuple[str, str]:
    """A fresh secret ``<kind>_<prefix>_<256 random bits>`` and its public ``prefix`` (8 hex),
    the scheme of API tokens (``rl``) and invitation codes (``ri``): show the secret once,
    store only ``hash_token(secret)`` and the prefix, which tells secrets apart in a list
    without authenticating anything."""
    if not re.fullmatch(r"[a-z]{2}", kind):
        raise ValueError("a secret's kind is two lowercase letters")
    prefix = secrets.token_hex(4)
    return f"{kind}_{prefix}_{secrets.token_urlsafe(32)}", prefix


def is_prefixed_secret(kind: str, secret: str) -> bool:
    """Whether ``secret`` has the shape ``new_prefixed_secret(kind)`` gives (checked before
    any lookup, so a malformed value costs no database read)."""
    m = _PREFIXED.match(secret)
    return m is not None and m.group(1) == kind


def hash_token(token: str) -> str:
    """The stored form of a token: SHA-256 hex. Tokens are high-entropy, so no salt is needed."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def tokens_equal(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))


#: Longest title key stored and compared (longer titles are cut, as the column is).
TITLE_KEY_LENGTH = 300


def title_key(title: str) -> str:
    """How titles compare when one item names another's: casefolded, whitespace collapsed,
    cut to ``TITLE_KEY_LENGTH``. The same function fills the indexed column and the lookup."""
    return " ".join(title.casefold().split())[:TITLE_KEY_LENGTH]
