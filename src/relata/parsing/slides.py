"""PPTX parser: every slide a section headed by its title, its speaker notes a section under it.

python-pptx reads the presentation (its XML parser leaves entities unresolved); before it
sees the package, the zip bounds (``archive.open_zip``), the XML part checks
(``archive.check_xml_parts``) and the slide count (``max_slides``, counted from the zip
directory) apply. Shapes are read in the slide's order: text frames become paragraphs,
tables header-led groups of rows (``rows.RowTable``, cells charged to ``max_cells``), group
shapes are entered at most ``_MAX_GROUP_DEPTH`` deep. The section of slide 3 titled
"Results" is ``Slide 3: Results``; its notes are the section ``Slide 3: Results > Notes``.
The title is the core properties' title, else the first slide's title.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterable
from typing import Any

from relata.domain.models import SourceType
from relata.parsing.archive import check_xml_parts, open_zip
from relata.parsing.model import (
    Deadline,
    Document,
    DocumentBuilder,
    ParseLimits,
    clean_text,
    path_label,
    too_big,
    unparseable,
)
from relata.parsing.rows import CellBudget, RowTable
from relata.parsing.sheets import core_properties

PRESENTATION_PART = "ppt/presentation.xml"
_SLIDE_PART = re.compile(r"ppt/slides/slide\d+\.xml\Z")
_MAX_GROUP_DEPTH = 8


def check_pptx(archive: zipfile.ZipFile, limits: ParseLimits) -> None:
    """The package checks that need no parsing: run at upload (``sniff``) and at parse."""
    names = archive.namelist()
    if PRESENTATION_PART not in names:
        raise unparseable(f"the PPTX has no {PRESENTATION_PART}")
    slides = sum(1 for name in names if _SLIDE_PART.match(name))
    if slides > limits.max_slides:
        raise too_big(f"the presentation has {slides} slides; the limit is {limits.max_slides}")
    check_xml_parts(archive, limits, "PPTX")


def _is_group(shape: Any) -> bool:
    from pptx.shapes.group import GroupShape

    return isinstance(shape, GroupShape)


class _SlideReader:
    def __init__(self, builder: DocumentBuilder, budget: CellBudget) -> None:
        self.builder = builder
        self.budget = budget

    def shapes(self, shapes: Iterable[Any], path: tuple[str, ...], skip: Any, depth: int) -> None:
        for shape in shapes:
            if shape is skip or (skip is not None and shape.shape_id == skip.shape_id):
                continue
            if _is_group(shape):
                if depth >= _MAX_GROUP_DEPTH:
                    raise too_big(
                        f"the presentation nests groups of shapes more than "
                        f"{_MAX_GROUP_DEPTH} deep, the limit"
                    )
                self.shapes(shape.shapes, path, None, depth + 1)
            elif getattr(shape, "has_table", False) and shape.has_table:
                table = RowTable(self.budget)
                for number, row in enumerate(shape.table.rows, start=1):
                    table.add([cell.text for cell in row.cells], number)
                table.emit(self.builder, path)
            elif shape.has_text_frame:
                self.builder.add(shape.text_frame.text, heading_path=path)

    def slide(self, number: int, slide: Any) -> str | None:
        title_shape = slide.shapes.title
        title = (
            " ".join(clean_text(title_shape.text_frame.text).split())
            if title_shape is not None and title_shape.has_text_frame
            else ""
        )
        label = path_label(f"Slide {number}: {title}" if title else f"Slide {number}")
        path = (label,)
        self.builder.add(label, kind="heading", heading_path=path, level=1)
        self.shapes(slide.shapes, path, title_shape, 0)
        if slide.has_notes_slide:
            frame = slide.notes_slide.notes_text_frame
            notes = clean_text(frame.text) if frame is not None else ""
            if notes:
                notes_path = (label, "Notes")
                self.builder.add("Notes", kind="heading", heading_path=notes_path, level=2)
                self.builder.add(notes, heading_path=notes_path, clean=False)
        return title or None


def parse_pptx(data: bytes, limits: ParseLimits, deadline: Deadline) -> Document:
    from pptx import Presentation  # ~0.2 s to import (with Pillow): only where a deck is read

    with open_zip(data, limits) as archive:
        check_pptx(archive, limits)
    builder = DocumentBuilder(SourceType.PPTX, limits)
    presentation = Presentation(io.BytesIO(data))
    core_title = core_properties(presentation.core_properties, builder)
    reader = _SlideReader(builder, CellBudget(limits, deadline))
    first_title: str | None = None
    for number, slide in enumerate(presentation.slides, start=1):
        deadline.check()
        title = reader.slide(number, slide)
        first_title = first_title or title
    builder.title = core_title or first_title
    return builder.build()
