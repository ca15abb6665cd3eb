"""XLSX parser: every worksheet a section, its rows grouped under the sheet's header row.

openpyxl reads the workbook in read-only mode (rows streamed from the sheet XML) with
``data_only=True``: a formula cell gives the value Excel last calculated and saved, never
the formula, and nothing is recalculated. Before openpyxl sees the package, the zip bounds
(``archive.open_zip``) and the XML part checks (``archive.check_xml_parts``: part sizes, no
DTD or entities) apply.

Cells are bounded, not only the package: a sheet's declared dimension is ignored
(``reset_dimensions``), since a hostile ``A1:XFD1048576`` would pad every row to 16,384
cells; the cells openpyxl still yields (the empty ones between cells and rows included) are
charged to ``max_cells``. The first non-empty row of a sheet is its header, repeated in every
group of rows (``rows.RowTable``). The workbook's core properties give the title and
metadata; otherwise the document has no title of its own.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

from relata.domain.models import SourceType
from relata.parsing.archive import check_xml_parts, open_zip
from relata.parsing.model import (
    Deadline,
    Document,
    DocumentBuilder,
    ParseLimits,
    path_label,
    unparseable,
)
from relata.parsing.rows import CellBudget, RowTable

WORKBOOK_PART = "xl/workbook.xml"
_CORE_FIELDS = {"creator": "author", "subject": "subject", "keywords": "keywords"}


def check_xlsx(archive: zipfile.ZipFile, limits: ParseLimits) -> None:
    """The package checks that need no parsing: run at upload (``sniff``) and at parse."""
    if WORKBOOK_PART not in archive.namelist():
        raise unparseable(f"the XLSX has no {WORKBOOK_PART}")
    check_xml_parts(archive, limits, "XLSX")


def core_properties(props: Any, builder: DocumentBuilder) -> str | None:
    """Title and metadata from an Office package's core properties (openpyxl, python-pptx)."""
    for name, key in _CORE_FIELDS.items():
        builder.set_metadata(key, getattr(props, name, None) or None)
    title = getattr(props, "title", None)
    return title if isinstance(title, str) and title.strip() else None


def parse_xlsx(data: bytes, limits: ParseLimits, deadline: Deadline) -> Document:
    from openpyxl import load_workbook  # ~0.1 s to import: only where a workbook is read

    with open_zip(data, limits) as archive:
        check_xlsx(archive, limits)
    builder = DocumentBuilder(SourceType.XLSX, limits)
    budget = CellBudget(limits, deadline)
    workbook = load_workbook(
        io.BytesIO(data), read_only=True, data_only=True, keep_links=False, keep_vba=False
    )
    try:
        builder.title = core_properties(workbook.properties, builder)
        for sheet in workbook.worksheets:
            deadline.check()
            sheet.reset_dimensions()
            name = path_label(str(sheet.title)) or "Sheet"
            path = (name,)
            table = RowTable(budget)
            for number, row in enumerate(sheet.iter_rows(values_only=True), start=1):
                table.add(row, number)
            if table.header is not None:  # an empty sheet adds nothing, not even its name
                builder.add(name, kind="heading", heading_path=path, level=1)
                table.emit(builder, path)
    finally:
        workbook.close()
    return builder.build()
