"""Fuzz target: the CSV and TSV parsers, ``parse(data, SourceType.CSV or TSV)``.

Byte 0 picks the delimiter (even: CSV, odd: TSV); the rest is the table. Declared errors:
``UnsupportedContent``, ``ValidationError`` (with ``TooLarge``). Invariants: the document's
blocks are ordered, stripped, exact slices of its storable text, within the bounds
(``tests.fuzz.invariants.check_document``).
"""

from __future__ import annotations

from relata.domain.models import SourceType
from tests.fuzz.targets.common import parse_checked


def one_input(data: bytes) -> None:
    if not data:
        return
    parse_checked(data[1:], SourceType.TSV if data[0] % 2 else SourceType.CSV)
