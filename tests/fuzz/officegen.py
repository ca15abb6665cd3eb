"""Builds real XLSX, PPTX, e-mail, HTML and CSV inputs in memory (no binary fixtures), with
openpyxl, python-pptx and the standard library's ``email`` package."""

from __future__ import annotations

import io
from collections.abc import Sequence
from email.message import EmailMessage

from openpyxl import Workbook
from pptx import Presentation
from pptx.util import Inches

XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def make_xlsx(sheets: dict[str, Sequence[Sequence[object]]], *, title: str | None = None) -> bytes:
    """A workbook with one worksheet per entry, rows appended in order."""
    workbook = Workbook()
    first = True
    for name, rows in sheets.items():
        sheet = workbook.active if first else workbook.create_sheet()
        assert sheet is not None
        sheet.title = name
        first = False
        for row in rows:
            sheet.append(list(row))
    if title is not None:
        workbook.properties.title = title
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def make_pptx(
    slides: Sequence[tuple[str, str, str | None]],
    *,
    table: Sequence[Sequence[str]] | None = None,
    title: str | None = None,
) -> bytes:
    """A deck of (title, body, notes) slides; an optional table on a last slide "Table"."""
    deck = Presentation()
    for heading, body, notes in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        assert slide.shapes.title is not None
        slide.shapes.title.text = heading
        slide.placeholders[1].text = body  # type: ignore[attr-defined]
        if notes is not None:
            frame = slide.notes_slide.notes_text_frame
            assert frame is not None
            frame.text = notes
    if table:
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        assert slide.shapes.title is not None
        slide.shapes.title.text = "Table"
        shape = slide.shapes.add_table(
            len(table), len(table[0]), Inches(1), Inches(1.5), Inches(6), Inches(2)
        )
        for r, row in enumerate(table):
            for c, text in enumerate(row):
                shape.table.cell(r, c).text = text
    if title is not None:
        deck.core_properties.title = title
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def make_eml(
    *,
    subject: str = "Harbour report",
    text: str | None = "Hello Bob,\n\nThe slipway repairs are complete.\n",
    html: str | None = None,
    attachments: Sequence[tuple[str, str, bytes]] = (),
) -> bytes:
    """A message from Alice to Bob: a text and/or HTML body, (filename, type, data) files."""
    message = EmailMessage()
    message["From"] = "Alice Vaughan <alice@example.org>"
    message["To"] = "Bob Reyes <bob@example.org>, carol@example.org"
    message["Date"] = "Tue, 01 Dec 2026 10:00:00 +0000"
    message["Subject"] = subject
    message["Message-ID"] = "<1@example.org>"
    if text is not None:
        message.set_content(text)
    if html is not None:
        if text is None:
            message.set_content(html, subtype="html")
        else:
            message.add_alternative(html, subtype="html")
    for filename, media, data in attachments:
        maintype, subtype = media.split("/", 1)
        message.add_attachment(data, maintype=maintype, subtype=subtype, filename=filename)
    return bytes(message)


HTML_PAGE = b"""<!DOCTYPE html>
<html lang="en"><head><title>Harbour report</title>
<meta name="author" content="Alice Vaughan"><style>p { color: red }</style>
<script>document.write("never text")</script></head>
<body><nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<main><h1>Slipway repairs</h1><p>The slipway repairs were completed in <b>October</b>.</p>
<h2>Costs</h2><table><tr><th>Item</th><th>Cost</th></tr><tr><td>Concrete</td><td>1200</td></tr>
</table><ul><li>Pour</li><li>Cure</li></ul></main>
<footer>Copyright footer</footer></body></html>"""


def make_csv(rows: int, *, delimiter: str = ",") -> bytes:
    """A table of ``rows`` data rows under a header of three columns."""
    lines = [delimiter.join(["turbine", "site", "megawatts"])]
    lines += [
        delimiter.join([f"SB-{n:03d}", f"Site {n % 7}", f"{n * 1.5:.1f}"]) for n in range(rows)
    ]
    return ("\n".join(lines) + "\n").encode()
