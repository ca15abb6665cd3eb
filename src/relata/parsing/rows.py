"""Tables as chunkable blocks: rows grouped under their header, repeated in every group.

A chunk is an exact slice of the document's text, so the only way a chunk of rows can carry
the header that says what its columns mean is for the text itself to repeat it. ``RowTable``
collects the rows of one table (CSV/TSV, an XLSX sheet, an HTML table) and emits them as
``table`` blocks of at most about ``ROW_GROUP_CHARS`` characters, each beginning with the
header row. A table of more than one group gives each group its own section (``rows 2-41``
appended to the heading path), because the chunker never merges sections: each group
becomes a chunk of its own at the default chunk size, header first.

Every cell read (the empty cells a sheet pads a row with included) is charged to one
``CellBudget`` per document, which refuses the document past ``max_cells``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from relata.parsing.model import Deadline, DocumentBuilder, ParseLimits, clean_text, too_big

#: The size a group of rows aims at (header included): under the default chunk target
#: (RELATA_CHUNK_TARGET_CHARS, 1000), so a group is one chunk.
ROW_GROUP_CHARS = 800
CELL_SEPARATOR = " | "
_CHECK_EVERY = 1000


class CellBudget:
    """Cells read so far in one document, against ``ParseLimits.max_cells``."""

    def __init__(self, limits: ParseLimits, deadline: Deadline) -> None:
        self._max = limits.max_cells
        self._deadline = deadline
        self._cells = 0
        self._rows = 0

    def charge(self, cells: int) -> None:
        self._cells += max(1, cells)
        self._rows += 1
        if self._cells > self._max:
            raise too_big(f"the table has more than {self._max} cells, the limit")
        if self._rows % _CHECK_EVERY == 0:
            self._deadline.check()


def cell_text(value: object) -> str:
    """One cell on one line: whitespace collapsed, dates without a midnight time."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, dt.datetime) and value.time() == dt.time():
        value = value.date()
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    return " ".join(clean_text(str(value)).split())


def row_line(cells: Sequence[object]) -> str:
    """A row as one ``cell | cell`` line, trailing empty cells dropped ("" when all empty)."""
    texts = [cell_text(c) for c in cells]
    while texts and not texts[-1]:
        texts.pop()
    return CELL_SEPARATOR.join(texts) if any(texts) else ""


class RowTable:
    """The rows of one table; ``emit`` adds them to the builder as header-led groups."""

    def __init__(self, budget: CellBudget) -> None:
        self._budget = budget
        self.header: str | None = None
        self._rows: list[tuple[int, str]] = []  # (row number, line)

    def add(self, cells: Sequence[object], number: int) -> None:
        """Add row ``number`` (1-based, as the source counts); empty rows are skipped."""
        self._budget.charge(len(cells))
        line = row_line(cells)
        if not line:
            return
        if self.header is None:
            self.header = line
        else:
            self._rows.append((number, line))

    def emit(self, builder: DocumentBuilder, path: tuple[str, ...]) -> None:
        if self.header is None:
            return
        groups = self._groups()
        if not groups:
            builder.add(self.header.strip(), kind="table", heading_path=path, clean=False)
            return
        for first, last, lines in groups:
            label = (f"rows {first}-{last}",) if len(groups) > 1 else ()
            text = "\n".join([self.header, *lines]).strip()  # a first cell may be empty
            builder.add(text, kind="table", heading_path=path + label, clean=False)

    def _groups(self) -> list[tuple[int, int, list[str]]]:
        assert self.header is not None
        groups: list[tuple[int, int, list[str]]] = []
        lines: list[str] = []
        first = last = 0
        size = len(self.header)
        for number, line in self._rows:
            if lines and size + 1 + len(line) > ROW_GROUP_CHARS:
                groups.append((first, last, lines))
                lines, size = [], len(self.header)
            if not lines:
                first = number
            lines.append(line)
            last = number
            size += 1 + len(line)
        if lines:
            groups.append((first, last, lines))
        return groups
