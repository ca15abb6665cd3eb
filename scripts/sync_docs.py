"""Regenerate the generated parts of the docs: the README settings table and docs/openapi.yaml.

Run with `make docs`; tests/unit/test_docs_in_sync.py fails when either is stale.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import yaml

from relata.api.app import create_app
from relata.bootstrap import build
from relata.config.settings import Settings, markdown_table

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- settings:begin -->", "<!-- settings:end -->"


def readme_with_table(text: str) -> str:
    pre, rest = text.split(BEGIN, 1)
    _, post = rest.split(END, 1)
    return f"{pre}{BEGIN}\n{markdown_table()}{END}{post}"


def openapi_yaml() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        container = build(Settings(data_dir=tmp))
        try:
            schema = create_app(container).openapi()
        finally:
            container.close()
    return yaml.safe_dump(schema, sort_keys=False, allow_unicode=True, width=100)


def main() -> int:
    readme = ROOT / "README.md"
    readme.write_text(readme_with_table(readme.read_text(encoding="utf-8")), encoding="utf-8")
    (ROOT / "docs" / "openapi.yaml").write_text(openapi_yaml(), encoding="utf-8")
    print("README.md settings table and docs/openapi.yaml regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
