"""PDF parser: text per page with page numbers, document info, and its bounds."""

from __future__ import annotations

import io
import itertools

import pytest
from pypdf import PdfReader, PdfWriter

from relata.domain.errors import UnsupportedContent, ValidationError
from relata.domain.models import SourceType
from relata.parsing import ParseLimits, parse
from tests.fuzz.docgen import make_pdf


def test_pdf_text_keeps_page_numbers_and_info_title() -> None:
    data = make_pdf(
        [["Alpha line one.", "Alpha line two."], [], ["Gamma (third page)."]],
        title="Annual Report",
        author="Ada",
    )
    doc = parse(data, SourceType.PDF)
    assert doc.title == "Annual Report"
    assert doc.metadata["author"] == "Ada"
    assert doc.metadata["pages"] == "3"
    assert [(b.page, b.text) for b in doc.blocks] == [
        (1, "Alpha line one.\nAlpha line two."),
        (3, "Gamma (third page)."),
    ]
    for block in doc.blocks:
        assert doc.text[block.start : block.end] == block.text
    assert doc.warnings == ("pages without extractable text: 1 of 3 (scanned images need OCR)",)


def test_pdf_without_any_text_is_rejected_saying_ocr_is_needed() -> None:
    with pytest.raises(ValidationError) as info:
        parse(make_pdf([[], []]), SourceType.PDF)
    assert "no extractable text" in info.value.message
    assert "OCR" in info.value.message


def test_a_pdf_with_thousands_of_pages_is_rejected_before_extraction() -> None:
    data = make_pdf([[]] * 3000)
    with pytest.raises(ValidationError) as info:
        parse(data, SourceType.PDF)  # default limit: 1000 pages
    assert info.value.message == (
        "the PDF has 3000 pages; the limit is 1000 (RELATA_PARSE_MAX_PDF_PAGES)"
    )
    assert info.value.code == "content_too_large"


def test_a_lying_page_count_does_not_get_past_the_page_bound() -> None:
    data = make_pdf([[]] * 1500)
    forged = data.replace(b"/Count 1500", b"/Count 1   ")
    assert forged != data
    with pytest.raises(ValidationError) as info:
        parse(forged, SourceType.PDF)
    assert "1500 pages" in info.value.message


def test_parsing_time_is_bounded_between_pages() -> None:
    ticks = itertools.count()
    data = make_pdf([[f"Page {n} text."] for n in range(20)])
    with pytest.raises(ValidationError) as info:
        parse(data, SourceType.PDF, limits=ParseLimits(max_seconds=5), clock=lambda: next(ticks))
    assert "longer than the limit of 5 seconds" in info.value.message


def test_extracted_characters_are_bounded() -> None:
    data = make_pdf([["x" * 80] * 40 for _ in range(3)])
    with pytest.raises(ValidationError) as info:
        parse(data, SourceType.PDF, limits=ParseLimits(max_chars=5000))
    assert "exceeds the limit of 5000 characters" in info.value.message


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"%PDF-1.7\n", id="header-only"),
        pytest.param(b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\nendobj\n%%EOF", id="no-pages"),
        pytest.param(make_pdf([["Some text."]])[:300], id="truncated"),
    ],
)
def test_damaged_pdfs_raise_one_clear_error(data: bytes) -> None:
    with pytest.raises(ValidationError) as info:
        parse(data, SourceType.PDF)
    assert "PDF" in info.value.message


def test_password_protected_pdf_is_unsupported() -> None:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf([["Secret."]]))))
    writer.encrypt(user_password="hunter2", owner_password="owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    with pytest.raises(UnsupportedContent) as info:
        parse(out.getvalue(), SourceType.PDF)
    assert "password" in info.value.message


def test_the_page_tree_walk_itself_is_bounded() -> None:
    data = make_pdf([[]] * 1500)
    forged = data.replace(b"/Count 1500", b"/Count 1   ")
    with pytest.raises(ValidationError) as info:
        parse(forged, SourceType.PDF, limits=ParseLimits(max_pdf_pages=10))
    assert info.value.code == "content_too_large"
    assert "structural limit" in info.value.message
