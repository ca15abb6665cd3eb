"""The web package's place in the layers."""

from __future__ import annotations

from pathlib import Path


def test_the_web_reaches_data_through_services_only() -> None:
    """``web`` depends on services like ``api`` does, never on storage: import-linter forbids
    importing it, and this forbids reaching the repositories through the container."""
    import relata.web

    root = Path(relata.web.__file__).parent
    offenders = [
        f"{path.relative_to(root)}:{n}"
        for path in sorted(root.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if ".repos." in line or ".repos)" in line
    ]
    assert offenders == []
