"""The vendored cytoscape.js is the release scripts/vendor_cytoscape.sh pins, byte for byte,
with its licence beside it, and is one of the files the web serves (docs/decisions/0043)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from relata.web.ui import STATIC, STATIC_FILES

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts/vendor_cytoscape.sh"


def _pinned(name: str) -> str:
    found = re.search(rf'^{name}="([^"]+)"$', SCRIPT.read_text(encoding="utf-8"), re.M)
    assert found, name
    return found.group(1)


def test_the_vendored_build_is_the_pinned_release() -> None:
    build = (STATIC / "cytoscape.min.js").read_bytes()
    assert hashlib.sha256(build).hexdigest() == _pinned("MIN_SHA256")
    assert f'"{_pinned("VERSION")}"'.encode() in build


def test_its_licence_ships_and_the_build_is_served() -> None:
    licence = (STATIC / "cytoscape.LICENSE").read_text(encoding="utf-8")
    assert "The Cytoscape Consortium" in licence and "Permission is hereby granted" in licence
    assert {"cytoscape.min.js", "graph.js", "graph.css"} <= STATIC_FILES
    assert "cytoscape.LICENSE" not in STATIC_FILES  # not a type the web serves


def test_make_vendor_js_runs_the_script() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^vendor-js:\n\tsh scripts/vendor_cytoscape\.sh$", makefile, re.M)
