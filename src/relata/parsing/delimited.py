"""CSV and TSV parser: rows under their header, the header repeated in every group of rows.

The text is decoded like any text upload (``decode``) and read with the standard library's
``csv`` reader (comma for CSV, tab for TSV; quoted fields may span lines). The first
non-empty row is the header; the rest are grouped by ``rows.RowTable`` so every chunk of
rows starts with it. Bounds: the text's length (``check_source_chars``), every cell against
``max_cells``, one field against the ``csv`` module's own limit (128 KiB), and the deadline.

``delimiter_of`` is the content test ``sniff`` uses when no filename or Content-Type says
CSV/TSV: at least three lines, each splitting into the same number of fields (three or
more; two only over ten lines or more, since prose lines with one comma each are common),
with a header of short cells.
"""

from __future__ import annotations

import csv
import io

from relata.domain.models import SourceType
from relata.parsing.decode import decode_text
from relata.parsing.model import (
    Deadline,
    Document,
    DocumentBuilder,
    ParseLimits,
    check_source_chars,
    unparseable,
)
from relata.parsing.rows import CellBudget, RowTable

DELIMITERS = {SourceType.CSV: ",", SourceType.TSV: "\t"}
_SNIFF_LINES = 50
_SNIFF_MIN_LINES = 3
_SNIFF_CHARS = 65_536
_SNIFF_TWO_FIELD_LINES = 10
_MAX_HEADER_CELL_CHARS = 100


def delimiter_of(text: str) -> SourceType | None:
    """CSV or TSV when the start of ``text`` is consistently delimited, else None."""
    sample = text[:_SNIFF_CHARS]
    cut = sample.rfind("\n") if len(text) > _SNIFF_CHARS else len(sample)
    sample = sample[: max(0, cut)]
    lines = [line for line in sample.splitlines() if line.strip()][:_SNIFF_LINES]
    if len(lines) < _SNIFF_MIN_LINES:
        return None
    for source_type in (SourceType.TSV, SourceType.CSV):
        delimiter = DELIMITERS[source_type]
        if delimiter not in lines[0]:
            continue
        try:
            rows = list(csv.reader(lines, delimiter=delimiter, strict=True))
        except csv.Error:
            continue
        widths = {len(row) for row in rows}
        width = min(widths)
        if (
            len(widths) == 1
            and (width >= 3 or (width == 2 and len(rows) >= _SNIFF_TWO_FIELD_LINES))
            and all(len(cell) <= _MAX_HEADER_CELL_CHARS for cell in rows[0])
        ):
            return source_type
    return None


def parse_delimited(
    source_type: SourceType, data: bytes, limits: ParseLimits, deadline: Deadline
) -> Document:
    decoded = decode_text(data)
    check_source_chars(decoded.text, limits)
    builder = DocumentBuilder(source_type, limits)
    if decoded.warning:
        builder.warnings.append(decoded.warning)
    text = decoded.text.lstrip("\ufeff")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=DELIMITERS[source_type])
    table = RowTable(CellBudget(limits, deadline))
    try:
        for number, row in enumerate(reader, start=1):
            table.add(row, number)
    except csv.Error as exc:
        raise unparseable(
            f"the {source_type.value.upper()} content is malformed at line "
            f"{reader.line_num} ({exc})"
        ) from exc
    table.emit(builder, ())
    return builder.build()


def parse_csv(data: bytes, limits: ParseLimits, deadline: Deadline) -> Document:
    return parse_delimited(SourceType.CSV, data, limits, deadline)


def parse_tsv(data: bytes, limits: ParseLimits, deadline: Deadline) -> Document:
    return parse_delimited(SourceType.TSV, data, limits, deadline)
