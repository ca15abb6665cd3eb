"""Content sniffing: the type comes from the bytes; filename and Content-Type are hints only."""

from __future__ import annotations

import json
import random
import zlib

import pytest

from relata.domain.errors import UnsupportedContent, ValidationError
from relata.domain.models import SourceType
from relata.parsing import parse, sniff
from tests.fuzz.docgen import make_docx, make_pdf, make_zip

PDF = make_pdf([["Hello from a PDF."]])
DOCX = make_docx([("h1", "Heading"), ("p", "Body text.")])
PLAIN = b"Meeting notes\n\nWe agreed to ship on Friday. Nobody objected.\n"
MARKDOWN = b"# Release notes\n\nSee [the docs](https://example.org) for details.\n"
JSON_DOC = json.dumps({"title": "T", "authors": [{"name": "Ada"}]}).encode()
RANDOM_BLOB = random.Random(4).randbytes(4096)


@pytest.mark.parametrize(
    ("data", "filename", "content_type", "expected"),
    [
        pytest.param(PLAIN, None, None, SourceType.TEXT, id="plain-text"),
        pytest.param(PLAIN, "notes.md", None, SourceType.MARKDOWN, id="text-named-md-is-markdown"),
        pytest.param(PLAIN, None, "text/markdown", SourceType.MARKDOWN, id="markdown-content-type"),
        pytest.param(MARKDOWN, None, None, SourceType.MARKDOWN, id="markdown-by-content"),
        pytest.param(MARKDOWN, "notes.txt", None, SourceType.TEXT, id="markdown-named-txt-is-text"),
        pytest.param(
            MARKDOWN, "notes.md", "text/plain", SourceType.MARKDOWN, id="filename-beats-header"
        ),
        pytest.param(JSON_DOC, None, None, SourceType.JSON, id="json-object"),
        pytest.param(b" [1, 2, 3]\n", None, None, SourceType.JSON, id="json-array"),
        pytest.param(JSON_DOC, "data.txt", "text/plain", SourceType.JSON, id="json-named-txt"),
        pytest.param(b'{"a": 1,}', "data.json", None, SourceType.TEXT, id="invalid-json-is-text"),
        pytest.param(b'{"a": 1}\n{"a": 2}\n', None, None, SourceType.TEXT, id="json-lines-is-text"),
        pytest.param(b"42", "n.json", None, SourceType.TEXT, id="json-scalar-is-text"),
        pytest.param(PDF, None, None, SourceType.PDF, id="pdf"),
        pytest.param(PDF, "report.txt", "text/plain", SourceType.PDF, id="pdf-renamed-txt"),
        pytest.param(b"\n\r\n" + PDF, None, None, SourceType.PDF, id="pdf-after-blank-lines"),
        pytest.param(
            b"The header %PDF-1.7 starts a PDF.", None, None, SourceType.TEXT, id="pdf-mentioned"
        ),
        pytest.param(DOCX, None, None, SourceType.DOCX, id="docx"),
        pytest.param(DOCX, "scan.pdf", "application/pdf", SourceType.DOCX, id="docx-renamed-pdf"),
        pytest.param(
            "Caf\u00e9 cr\u00e8me".encode("latin-1"), None, None, SourceType.TEXT, id="invalid-utf8"
        ),
        pytest.param(
            "\ufeffPlain words".encode("utf-16-le"), None, None, SourceType.TEXT, id="utf16-le-bom"
        ),
        pytest.param(
            "\ufeff# Heading\n\nBody".encode("utf-16-be"),
            None,
            None,
            SourceType.MARKDOWN,
            id="utf16-be-bom",
        ),
        pytest.param(b"\xef\xbb\xbf" + JSON_DOC, None, None, SourceType.JSON, id="utf8-bom-json"),
        pytest.param(
            "\ufeffWide text".encode("utf-32-le"), None, None, SourceType.TEXT, id="utf32-bom"
        ),
    ],
)
def test_sniff_decides_from_content(
    data: bytes, filename: str | None, content_type: str | None, expected: SourceType
) -> None:
    assert sniff(data, filename=filename, content_type=content_type) is expected


@pytest.mark.parametrize(
    ("data", "filename", "detected"),
    [
        pytest.param(b"", None, "empty", id="empty"),
        pytest.param(b" \n\t\r\n ", "a.txt", "only whitespace", id="whitespace"),
        pytest.param(
            make_zip({"readme.txt": b"hello"}),
            "letter.docx",
            "zip archive that is not a DOCX, XLSX or PPTX",
            id="zip-renamed-docx",
        ),
        pytest.param(
            make_zip({"mimetype": b"application/epub+zip", "META-INF/container.xml": b"<c/>"}),
            "book.docx",
            "EPUB book",
            id="epub-renamed-docx",
        ),
        pytest.param(b"PK\x03\x04" + b"\x00" * 64, "a.docx", "damaged zip", id="damaged-zip"),
        pytest.param(RANDOM_BLOB, "blob.txt", "binary data", id="binary-blob"),
        pytest.param(bytes(range(1, 9)) * 300, None, "control characters", id="binary-no-nul"),
        pytest.param(b"\x89PNG\r\n\x1a\n" + RANDOM_BLOB, "x.md", "PNG image", id="png"),
        pytest.param(b"\x1f\x8b\x08\x00" + zlib.compress(b"x"), "x.txt", "gzip archive", id="gzip"),
        pytest.param(
            b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + RANDOM_BLOB,
            "old.docx",
            "legacy Microsoft Office",
            id="ole2-doc",
        ),
        pytest.param(
            "Plain words without a BOM".encode("utf-16-le"),
            None,
            "UTF-16 text without a byte-order mark",
            id="utf16-without-bom",
        ),
    ],
)
def test_sniff_rejects_naming_what_it_detected(
    data: bytes, filename: str | None, detected: str
) -> None:
    with pytest.raises(UnsupportedContent) as info:
        sniff(data, filename=filename)
    assert detected in info.value.message
    assert info.value.field == "content"


def test_invalid_utf8_is_decoded_with_a_recorded_fallback() -> None:
    data = "Caf\u00e9 cr\u00e8me \u2013 menu".encode("cp1252")
    doc = parse(data, sniff(data))
    assert doc.text == "Caf\u00e9 cr\u00e8me \u2013 menu"
    assert len(doc.warnings) == 1
    assert "not valid UTF-8" in doc.warnings[0]
    assert "offset 3" in doc.warnings[0]
    assert "Windows-1252" in doc.warnings[0]


def test_bytes_undefined_in_windows_1252_fall_back_to_latin1() -> None:
    data = b"Price \x81 list \xe9t\xe9"
    doc = parse(data, sniff(data))
    assert doc.text == "Price  list \u00e9t\u00e9"  # the C1 control is dropped from the text
    assert "Latin-1" in doc.warnings[0]


def test_utf16_with_bom_decodes_without_warning() -> None:
    data = "\ufeffZ\u00fcrich is in Switzerland.".encode("utf-16-le")
    doc = parse(data, sniff(data))
    assert doc.text == "Z\u00fcrich is in Switzerland."
    assert doc.warnings == ()


def test_a_docx_zip_bomb_is_refused_at_sniffing_time() -> None:
    bomb = make_zip({"word/document.xml": b"<w/>", "word/media/big.bin": b"\x00" * (8 << 20)})
    with pytest.raises(ValidationError) as info:
        sniff(bomb, filename="big.docx")
    assert not isinstance(info.value, UnsupportedContent)
    assert "zip bomb" in info.value.message
