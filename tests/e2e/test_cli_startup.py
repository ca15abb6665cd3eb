"""``relata --help`` starts without the heavy stacks: no database driver, vector client, model
runtime or web framework is imported until a command's handler needs it (issue 11: every
command took ~4.6 s to start, 0.9 s of it qdrant_client, which the default store never uses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = (
    "sqlalchemy",
    "alembic",
    "psycopg",
    "pysqlite3",
    "sqlite_vec",
    "qdrant_client",
    "onnxruntime",
    "tokenizers",
    "numpy",
    "fastapi",
    "starlette",
    "uvicorn",
    "httpx",
    "pypdf",
    "openpyxl",
    "pptx",
    "PIL",
    "spacy",
)

_PROBE = """
import json, sys
from relata.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.stdout.flush()
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})), file=sys.stderr)
"""


def _loaded_by(*args: str) -> set[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELATA_")}
    r = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "Traceback" not in r.stderr, r.stderr
    return set(json.loads(r.stderr.strip().splitlines()[-1]))


def test_relata_help_imports_no_database_vector_model_or_web_stack() -> None:
    loaded = _loaded_by("--help")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


@pytest.mark.parametrize("command", ["ingest", "search", "items", "jobs", "config", "inspect"])
def test_a_commands_help_imports_none_of_them_either(command: str) -> None:
    loaded = _loaded_by(command, "--help")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_config_reads_settings_without_opening_anything() -> None:
    loaded = _loaded_by("config")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
