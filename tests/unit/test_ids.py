"""Identifiers: deterministic where they must be, unguessable where they must be."""

from __future__ import annotations

import uuid

import pytest

from relata.ids import (
    chunk_id,
    content_hash,
    dedupe_key,
    hash_token,
    is_prefixed_secret,
    new_id,
    new_prefixed_secret,
    new_token,
    pair_key,
)


def test_new_ids_are_uuid_strings_and_distinct() -> None:
    ids = {new_id() for _ in range(1000)}
    assert len(ids) == 1000
    for i in list(ids)[:5]:
        assert str(uuid.UUID(i)) == i


def test_chunk_ids_are_deterministic_and_sensitive_to_every_part() -> None:
    base = chunk_id("w", "i", 0, "h")
    assert base == chunk_id("w", "i", 0, "h")
    assert str(uuid.UUID(base)) == base
    variants = {
        chunk_id("w2", "i", 0, "h"),
        chunk_id("w", "i2", 0, "h"),
        chunk_id("w", "i", 1, "h"),
        chunk_id("w", "i", 0, "h2"),
    }
    assert base not in variants and len(variants) == 4


def test_dedupe_keys_do_not_collide_on_concatenation() -> None:
    assert dedupe_key("k", "ab", "c") != dedupe_key("k", "a", "bc")
    assert pair_key("r", "x", "y") == pair_key("r", "y", "x")


def test_tokens_are_random_and_only_hashes_are_stored() -> None:
    a, b = new_token(), new_token()
    assert a != b and len(a) > 40
    assert hash_token(a) == hash_token(a) and hash_token(a) != a
    assert len(hash_token(a)) == 64


def test_content_hash_is_sha256_of_utf8() -> None:
    assert content_hash("abc") == content_hash(b"abc")
    assert content_hash(b"abc").startswith("ba7816bf")


def test_prefixed_secrets_carry_their_kind_and_prefix_and_differ_each_time() -> None:
    """API tokens (rl) and invitation codes (ri) share one scheme; one kind's secret is never
    taken for the other's."""
    secret, prefix = new_prefixed_secret("ri")
    assert secret.startswith(f"ri_{prefix}_") and len(prefix) == 8 and len(secret) == 55
    assert is_prefixed_secret("ri", secret) and not is_prefixed_secret("rl", secret)
    assert new_prefixed_secret("ri")[0] != secret
    for bad in ("", "ri_", secret[:-1], secret + "x", " " + secret, secret.upper()):
        assert not is_prefixed_secret("ri", bad), bad
    with pytest.raises(ValueError):
        new_prefixed_secret("r")
