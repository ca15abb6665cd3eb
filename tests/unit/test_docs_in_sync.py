"""Generated documentation is kept in step with the code (`make docs` regenerates it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _sync_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("sync_docs", ROOT / "scripts" / "sync_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_openapi_yaml_matches_the_app() -> None:
    current = (ROOT / "docs" / "openapi.yaml").read_text(encoding="utf-8")
    assert current == _sync_module().openapi_yaml(), "docs/openapi.yaml is stale: run `make docs`"


def test_readme_settings_table_is_generated_from_declarations() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme == _sync_module().readme_with_table(readme), (
        "README settings table is stale: run `make docs`"
    )
