"""Fuzz target: the XLSX parser, ``parse(data, SourceType.XLSX)``.

Declared errors: ``UnsupportedContent``, ``ValidationError`` (with ``TooLarge``). Invariants:
the document's blocks are ordered, stripped, exact slices of its storable text, within the
bounds (``tests.fuzz.invariants.check_document``).
"""

from __future__ import annotations

from relata.domain.models import SourceType
from tests.fuzz.targets.common import parse_checked


def one_input(data: bytes) -> None:
    parse_checked(data, SourceType.XLSX)
