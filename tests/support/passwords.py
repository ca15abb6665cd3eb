"""A cheap Argon2id for tests: real hashing and verification at the smallest cost Argon2
allows (one pass over 8 KiB, ~0.1 ms) instead of production's ~0.15 s per hash.

Containers built by the fixtures take it (``build(..., password_hasher=TEST_HASHER)``); the
tests where the cost itself matters (an unknown user and a wrong password cost the same) build
with ``Argon2Hasher()``, production's (docs/decisions/0030-test-suite.md).
"""

from __future__ import annotations

from relata.auth.passwords import Argon2Cost, Argon2Hasher

CHEAP_COST = Argon2Cost(time_cost=1, memory_kib=8, parallelism=1)
TEST_HASHER = Argon2Hasher(CHEAP_COST)
