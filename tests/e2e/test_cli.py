"""The ``relata`` command as a user runs it: a subprocess with only environment variables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from relata.auth.passwords import PRODUCTION_COST, Argon2Hasher, is_argon2id
from relata.bootstrap import build
from relata.config.settings import Settings
from relata.storage.sql import migrate


def _relata(
    args: list[str], env: dict[str, str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("RELATA_")}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-m", "relata.cli.main", *args],
        env=full,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"RELATA_DATA_DIR": str(tmp_path / "data"), "RELATA_LOG_FORMAT": "text"}


def test_a_bad_http_addr_stops_start_up_with_a_clear_message(env: dict[str, str]) -> None:
    r = _relata(["serve"], {**env, "RELATA_HTTP_ADDR": "localhost:notaport"})
    assert r.returncode == 2
    assert "RELATA_HTTP_ADDR" in r.stderr and "host:port" in r.stderr
    assert "Traceback" not in r.stderr


def test_migrate_then_version_prints_version_and_schema_revision(env: dict[str, str]) -> None:
    before = _relata(["version"], env)
    assert before.returncode == 0
    assert "schema none" in before.stdout
    assert _relata(["migrate"], env).returncode == 0
    r = _relata(["version"], env)
    assert r.returncode == 0
    assert r.stdout.startswith("relata ")
    assert f"schema {migrate.head_revision()} (current)" in r.stdout


def test_seed_creates_the_default_workspace_once(env: dict[str, str]) -> None:
    first = _relata(["seed"], env)
    assert first.returncode == 0, first.stderr
    assert "'default' created" in first.stdout
    second = _relata(["seed"], env)
    assert "already exists" in second.stdout


def test_createadmin_stores_an_argon2id_hash(env: dict[str, str]) -> None:
    password = "correct horse battery staple"
    r = _relata(["createadmin", "--username", "ada", "--password-stdin"], env, password + "\n")
    assert r.returncode == 0, r.stderr
    assert password not in r.stdout + r.stderr
    c = build(Settings(data_dir=env["RELATA_DATA_DIR"]))
    try:
        user = c.repos.users.get_by_username("ada")
    finally:
        c.close()
    assert user.is_admin
    assert user.password_hash and is_argon2id(user.password_hash)
    cost = PRODUCTION_COST  # the command line hashes at production cost, never the tests' own
    assert f"$m={cost.memory_kib},t={cost.time_cost},p={cost.parallelism}$" in user.password_hash
    assert Argon2Hasher().verify(user.password_hash, password)
    assert not Argon2Hasher().verify(user.password_hash, "wrong password!!")


def test_createadmin_refuses_a_short_password(env: dict[str, str]) -> None:
    r = _relata(["createadmin", "--username", "bob", "--password-stdin"], env, "short\n")
    assert r.returncode == 1
    assert "at least 12 characters" in r.stderr
