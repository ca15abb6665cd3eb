"""DOCX parser: WordprocessingML read directly with a hardened, streaming XML parser.

python-docx is not used for reading: it loads every part of the package into memory and
gives no control over XML parsing. Instead the archive is opened within the zip-bomb bounds
(``archive.open_zip``) and ``word/document.xml`` is streamed through lxml ``iterparse`` with
entity resolution, DTD loading and network access off; any document that declares a DTD is
rejected outright (WordprocessingML never needs one). Body-level elements are processed and
freed one at a time, so memory stays proportional to the largest paragraph or table.

Work is bounded by what the document holds, not only by the parse deadline: a 20 MB package
can hold 127 MB of near-empty paragraphs that pass every size and ratio bound of the zip yet
take minutes to read. So ``word/document.xml`` must declare at most ``max_docx_xml_bytes``
(checked from the zip directory, also at upload by ``sniff``), and while streaming the
paragraphs (``max_docx_paragraphs``, empty ones included), all XML elements
(``max_xml_elements``) and the elements of the one body-level element being read
(``max_block_elements``) are counted; the first bound crossed refuses the document, naming it.

Structure: paragraphs whose style (resolved through ``word/styles.xml`` and ``basedOn``) is
"heading N", or that carry an outline level, open sections; the "Title" style is the
document title (level 0). Tables become ``cell | cell`` lines. Core properties
(``docProps/core.xml``) become metadata; their title wins over a Title paragraph, which wins
over the first "heading 1" (the title of a document with no Title paragraph).
"""

from __future__ import annotations

import re
import zipfile
from typing import IO, Any

from lxml import etree

from relata.domain.errors import RelataError
from relata.domain.models import SourceType
from relata.parsing.archive import ZIP_ERRORS, damaged, open_member, open_zip
from relata.parsing.model import (
    Deadline,
    Document,
    DocumentBuilder,
    MiB,
    ParseLimits,
    clean_text,
    path_label,
    too_big,
    unparseable,
)

DOCUMENT_PART = "word/document.xml"
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_BODY, _P, _TBL, _TR, _TC = f"{_W}body", f"{_W}p", f"{_W}tbl", f"{_W}tr", f"{_W}tc"
_SDT, _SDT_CONTENT, _CUSTOM_XML = f"{_W}sdt", f"{_W}sdtContent", f"{_W}customXml"
_TEXT_TAGS = {
    f"{_W}t": None,
    f"{_W}tab": "\t",
    f"{_W}br": "\n",
    f"{_W}cr": "\n",
    f"{_W}noBreakHyphen": "-",
    _P: "\n",  # a paragraph nested in a text box
}
_VAL = f"{_W}val"
_HEADING_NAME = re.compile(r"heading\s*([1-9])\Z")
_CORE_FIELDS = {
    "creator": "author",
    "subject": "subject",
    "keywords": "keywords",
    "description": "description",
    "category": "category",
    "language": "language",
    "created": "created",
    "modified": "modified",
}
# styles.xml and core.xml are small in real documents; bound them separately and tightly.
_MAX_SMALL_PART_BYTES = 16 * MiB
_MAX_STYLE_CHAIN = 10
_MAX_CONTAINER_DEPTH = 8
_CHECK_EVERY = 200
_XML_OPTIONS: dict[str, Any] = {
    "resolve_entities": False,
    "no_network": True,
    "load_dtd": False,
    "huge_tree": False,
    "remove_comments": True,
    "remove_pis": True,
}


def _reject_dtd(element: Any) -> None:
    if element.getroottree().docinfo.doctype:
        raise unparseable("the DOCX contains an XML document type declaration (not allowed)")


def _read_small_part(archive: zipfile.ZipFile, name: str) -> Any | None:
    stream = open_member(archive, name)
    if stream is None:
        return None
    with stream:
        data = stream.read(_MAX_SMALL_PART_BYTES + 1)
    if len(data) > _MAX_SMALL_PART_BYTES:
        raise unparseable(f"the DOCX part {name} is larger than {_MAX_SMALL_PART_BYTES} bytes")
    root = etree.fromstring(data, etree.XMLParser(**_XML_OPTIONS))
    _reject_dtd(root)
    return root


class _Styles:
    """Heading level of a paragraph style: "heading N" -> N, "Title" -> 0, else outline level."""

    def __init__(self, root: Any | None) -> None:
        self._styles: dict[str, tuple[str, int | None, str | None]] = {}
        if root is None:
            return
        for style in root.iterchildren(f"{_W}style"):
            style_id = style.get(f"{_W}styleId")
            if not style_id:
                continue
            name_el = style.find(f"{_W}name")
            name = (name_el.get(_VAL) or "") if name_el is not None else ""
            outline = _outline_level(style.find(f"{_W}pPr"))
            based = style.find(f"{_W}basedOn")
            based_on = based.get(_VAL) if based is not None else None
            self._styles[style_id] = (name.strip().lower(), outline, based_on)

    def level(self, style_id: str) -> int | None:
        current: str | None = style_id
        for _ in range(_MAX_STYLE_CHAIN):
            if current is None:
                return None
            entry = self._styles.get(current)
            name, outline, based_on = entry if entry else (current.lower(), None, None)
            if name == "title":
                return 0
            match = _HEADING_NAME.match(name)
            if match:
                return int(match.group(1))
            if outline is not None:
                return outline
            current = based_on
        return None


def _outline_level(ppr: Any | None) -> int | None:
    """``w:outlineLvl`` 0-8 -> heading level 1-9 (9 means body text)."""
    if ppr is None:
        return None
    el = ppr.find(f"{_W}outlineLvl")
    value = el.get(_VAL) if el is not None else None
    if value is not None and value.isdigit() and int(value) < 9:
        return int(value) + 1
    return None


def _paragraph_level(p: Any, styles: _Styles) -> int | None:
    ppr = p.find(f"{_W}pPr")
    if ppr is None:
        return None
    direct = _outline_level(ppr)
    if direct is not None:
        return direct
    style = ppr.find(f"{_W}pStyle")
    style_id = style.get(_VAL) if style is not None else None
    return styles.level(style_id) if style_id else None


def _text(element: Any) -> str:
    # One unfiltered pass: lxml's tag-filtered iter() costs more to set up than a small
    # paragraph takes to walk, and documents hold many small (often empty) paragraphs.
    parts: list[str] = []
    fallbacks: list[Any] = []
    for el in element.iter():
        tag = el.tag
        if tag == _MC_FALLBACK:
            fallbacks.append(el)
        elif tag in _TEXT_TAGS and el is not element:
            fixed = _TEXT_TAGS[tag]
            parts.append((el.text or "") if fixed is None else fixed)
    if not fallbacks:
        return "".join(parts)
    for fallback in fallbacks:  # the same content, twice: read it once
        parent = fallback.getparent()
        if parent is not None:
            parent.remove(fallback)
    return _text(element)


def _table_text(tbl: Any) -> str:
    rows = []
    for tr in tbl.iterchildren(_TR):
        cells = []
        for tc in tr.iterchildren(_TC):
            paragraphs = (" ".join(_text(p).split()) for p in tc.iter(_P))
            cells.append(" ".join(t for t in paragraphs if t))
        if any(cells):
            rows.append(" | ".join(cells))
    return "\n".join(rows)


class _BodyReader:
    def __init__(self, builder: DocumentBuilder, styles: _Styles) -> None:
        self.builder = builder
        self.styles = styles
        self.stack: list[tuple[int, str]] = []
        self.path: tuple[str, ...] = ()
        self.first_title: str | None = None
        #: The first "heading 1": the title when there is no Title paragraph.
        self.first_heading: str | None = None

    def element(self, el: Any, depth: int = 0) -> None:
        if el.tag == _P:
            self.paragraph(el)
        elif el.tag == _TBL:
            self.builder.add(_table_text(el), kind="table", heading_path=self.path)
        elif el.tag in (_SDT, _SDT_CONTENT, _CUSTOM_XML) and depth < _MAX_CONTAINER_DEPTH:
            for child in el.iterchildren():
                self.element(child, depth + 1)

    def paragraph(self, p: Any) -> None:
        text = clean_text(_text(p))
        if not text:
            return
        level = _paragraph_level(p, self.styles)
        if level is None:
            self.builder.add(text, heading_path=self.path, clean=False)
            return
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        self.stack.append((level, path_label(text)))
        self.path = tuple(label for _, label in self.stack)
        kind = "title" if level == 0 else "heading"
        if level == 0 and self.first_title is None:
            self.first_title = text
        elif level == 1 and self.first_heading is None:
            self.first_heading = text
        self.builder.add(text, kind=kind, heading_path=self.path, level=level, clean=False)


def check_docx(archive: zipfile.ZipFile, limits: ParseLimits) -> None:
    """Refuse, from the zip directory alone, a body too large to read in bounded work."""
    try:
        size = archive.getinfo(DOCUMENT_PART).file_size
    except KeyError:
        return
    if size > limits.max_docx_xml_bytes:
        raise too_big(
            f"the DOCX body ({DOCUMENT_PART}) is {size} bytes uncompressed; the limit is "
            f"{limits.max_docx_xml_bytes} bytes"
        )


def _over(limits: ParseLimits, paragraphs: int, elements: int, pending: int) -> None:
    """Raise for the first body bound crossed (see the module docstring)."""
    if paragraphs > limits.max_docx_paragraphs:
        raise too_big(
            f"the DOCX has more than {limits.max_docx_paragraphs} paragraphs "
            "(empty ones included), the limit"
        )
    if elements > limits.max_xml_elements:
        raise too_big(
            f"the DOCX body has more than {limits.max_xml_elements} XML elements, the limit"
        )
    if pending > limits.max_block_elements:
        raise too_big(
            f"a single paragraph or table of the DOCX has more than "
            f"{limits.max_block_elements} XML elements, the limit"
        )


def _read_body(
    stream: IO[bytes], reader: _BodyReader, deadline: Deadline, limits: ParseLimits
) -> None:
    seen = 0
    # Counted inline, per XML element: this loop runs once for every element of the body.
    elements = paragraphs = pending = 0
    max_paragraphs, max_elements = limits.max_docx_paragraphs, limits.max_xml_elements
    max_pending = limits.max_block_elements
    checked_dtd = False
    for _, el in etree.iterparse(stream, events=("end",), **_XML_OPTIONS):
        if not checked_dtd:
            _reject_dtd(el)
            checked_dtd = True
        elements += 1
        pending += 1  # elements of the body-level element being read, all in memory
        tag = el.tag
        if tag == _P:
            paragraphs += 1
        if paragraphs > max_paragraphs or elements > max_elements or pending > max_pending:
            _over(limits, paragraphs, elements, pending)
        parent = el.getparent()
        if parent is None or parent.tag != _BODY:
            continue
        seen += 1
        if seen % _CHECK_EVERY == 0:
            deadline.check()
        reader.element(el)
        pending = 0
        el.clear()
        while el.getprevious() is not None:
            del parent[0]


def _core_properties(archive: zipfile.ZipFile, builder: DocumentBuilder) -> str | None:
    root = _read_small_part(archive, "docProps/core.xml")
    if root is None:
        return None
    title = None
    for el in root.iterchildren():
        if not isinstance(el.tag, str):
            continue
        name = etree.QName(el).localname
        value = (el.text or "").strip()
        if name == "title" and value:
            title = value
        elif name in _CORE_FIELDS and value:
            builder.set_metadata(_CORE_FIELDS[name], value)
    return title


def _read(data: bytes, limits: ParseLimits, deadline: Deadline) -> Document:
    with open_zip(data, limits) as archive:
        check_docx(archive, limits)
        stream = open_member(archive, DOCUMENT_PART)
        if stream is None:
            raise unparseable(f"the DOCX has no {DOCUMENT_PART}")
        builder = DocumentBuilder(SourceType.DOCX, limits)
        core_title = _core_properties(archive, builder)
        reader = _BodyReader(builder, _Styles(_read_small_part(archive, "word/styles.xml")))
        with stream:
            _read_body(stream, reader, deadline, limits)
    builder.title = core_title or reader.first_title or reader.first_heading
    return builder.build()


def parse_docx(data: bytes, limits: ParseLimits, deadline: Deadline) -> Document:
    try:
        return _read(data, limits, deadline)
    except RelataError:
        raise
    except etree.LxmlError as exc:
        raise unparseable(f"the DOCX contains malformed XML ({type(exc).__name__})") from exc
    except ZIP_ERRORS as exc:
        raise damaged(type(exc).__name__) from exc
