"""HTML parser: the page's main content as headings, paragraphs, lists, quotes, code and tables.

lxml's HTML parser (libxml2, recovering from broken markup) reads the page with network
access off; comments and processing instructions are dropped. The main content is the first
``<main>``, else the longest ``<article>``, else ``<body>``; inside it, navigation, asides,
footers, forms and anything hidden (``hidden``, ``aria-hidden="true"``) are skipped, and
script, style, template, SVG and embedded objects are never text. The tree is walked
iteratively (``iterwalk``), counting elements against ``max_xml_elements`` and depth against
``max_nesting``.

Structure: ``<h1>``-``<h6>`` open sections; ``<li>`` become ``- item`` lines; ``<pre>`` is
code (whitespace kept); a table becomes header-led groups of ``cell | cell`` rows
(``rows.RowTable``). The title is ``<title>``, else the first ``<h1>``; ``<meta>``
description, author and keywords and ``<html lang>`` are metadata.

``read_html`` adds the blocks to a builder under a heading-path prefix, so an e-mail's HTML
body goes through the same reading (``eml``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lxml import etree

from relata.domain.models import SourceType
from relata.parsing.decode import decode_text
from relata.parsing.model import (
    Deadline,
    Document,
    DocumentBuilder,
    ParseLimits,
    check_source_chars,
    clean_text,
    path_label,
    too_big,
)
from relata.parsing.rows import CellBudget, RowTable

_SKIP = frozenset(
    {
        "script", "style", "noscript", "template", "svg", "math", "iframe", "object",
        "embed", "canvas", "video", "audio", "head", "nav", "aside", "footer", "form",
        "button", "select", "textarea", "dialog", "title", "meta", "link",
    }
)  # fmt: skip
_BLOCK = frozenset(
    {
        "p", "div", "section", "article", "main", "header", "li", "dd", "dt", "ul", "ol",
        "dl", "blockquote", "figure", "figcaption", "address", "hr", "body", "html",
        "details", "summary", "center",
    }
)  # fmt: skip
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_META = {"description": "description", "author": "author", "keywords": "keywords"}
_CHARSET = re.compile(rb"""<meta[^>]{0,200}charset\s*=\s*["']?([A-Za-z0-9_.:-]{1,40})""", re.I)
_CHECK_EVERY = 500


def _parser() -> Any:
    return etree.HTMLParser(
        no_network=True, remove_comments=True, remove_pis=True, huge_tree=False, recover=True
    )


def _tag(el: Any) -> str:
    return el.tag.lower() if isinstance(el.tag, str) else ""


def _hidden(el: Any) -> bool:
    return el.get("hidden") is not None or (el.get("aria-hidden") or "").lower() == "true"


def _flat(text: str) -> str:
    return " ".join(clean_text(text).split())


def _text_of(el: Any) -> str:
    """The visible text of a small element (a heading, a cell): skipped tags left out."""
    parts: list[str] = []
    walker = etree.iterwalk(el, events=("start", "end"))
    for event, node in walker:
        if node is el:
            if event == "start":
                parts.append(node.text or "")
            continue
        if event == "start":
            if _tag(node) in _SKIP or _hidden(node):
                walker.skip_subtree()
            else:
                parts.append(node.text or "")
        else:
            parts.append(node.tail or "")
    return " ".join(parts)


@dataclass(slots=True)
class HtmlInfo:
    """What a page says about itself: its ``<title>`` and its first ``<h1>``."""

    title: str | None = None
    first_h1: str | None = None


class _Walker:
    def __init__(
        self,
        builder: DocumentBuilder,
        deadline: Deadline,
        limits: ParseLimits,
        prefix: tuple[str, ...],
    ) -> None:
        self.builder = builder
        self.deadline = deadline
        self.limits = limits
        self.prefix = prefix
        self.stack: list[tuple[int, str]] = []
        self.path = prefix
        self.buffer: list[str] = []
        self.contexts: list[str] = []
        self.budget = CellBudget(limits, deadline)
        self.first_h1: str | None = None

    def flush(self) -> None:
        text = "".join(self.buffer)
        self.buffer.clear()
        lines = [" ".join(line.split()) for line in clean_text(text).split("\n")]
        text = "\n".join(line for line in lines if line)
        if not text:
            return
        context = self.contexts[-1] if self.contexts else ""
        if context == "li":
            self.builder.add("- " + text, kind="list", heading_path=self.path, clean=False)
        elif "blockquote" in self.contexts:
            self.builder.add(text, kind="quote", heading_path=self.path, clean=False)
        else:
            self.builder.add(text, heading_path=self.path, clean=False)

    def heading(self, level: int, el: Any) -> None:
        text = _flat(_text_of(el))
        if not text:
            return
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        self.stack.append((level, path_label(text)))
        self.path = self.prefix + tuple(label for _, label in self.stack)
        if level == 1 and self.first_h1 is None:
            self.first_h1 = text
        self.builder.add(text, kind="heading", heading_path=self.path, level=level, clean=False)

    def table(self, el: Any) -> None:
        table = RowTable(self.budget)
        for number, tr in enumerate(el.iter("tr"), start=1):
            cells = [_text_of(c) for c in tr.iterchildren() if _tag(c) in ("td", "th")]
            table.add(cells, number)
        table.emit(self.builder, self.path)

    def walk(self, root: Any) -> None:
        elements = depth = 0
        walker = etree.iterwalk(root, events=("start", "end"))
        for event, el in walker:
            tag = _tag(el)
            if event == "end":
                depth -= 1
                if tag in _BLOCK and (el is root or not _hidden(el)):
                    self.flush()
                    self.contexts.pop()
                if el is not root:
                    self.buffer.append(el.tail or "")
                continue
            depth += 1
            elements += 1
            if elements > self.limits.max_xml_elements:
                raise too_big(
                    f"the HTML has more than {self.limits.max_xml_elements} elements, the limit"
                )
            if depth > self.limits.max_nesting:
                raise too_big(
                    f"the HTML nests elements more than {self.limits.max_nesting} deep, the limit"
                )
            if elements % _CHECK_EVERY == 0:
                self.deadline.check()
            if (tag in _SKIP or _hidden(el)) and el is not root:
                walker.skip_subtree()
                continue
            if tag in _HEADINGS or tag in ("table", "pre"):
                self.flush()
                if tag in _HEADINGS:
                    self.heading(_HEADINGS[tag], el)
                elif tag == "table":
                    self.table(el)
                else:
                    code = clean_text(_text_of_pre(el))
                    self.builder.add(code, kind="code", heading_path=self.path, clean=False)
                walker.skip_subtree()
                continue
            if tag in _BLOCK:
                self.flush()
                self.contexts.append(tag)
            elif tag == "br":
                self.buffer.append("\n")
            self.buffer.append(el.text or "")
        self.flush()


def _text_of_pre(el: Any) -> str:
    # Whitespace is the content of a <pre>: no collapsing, only the skipped tags left out.
    parts: list[str] = []
    walker = etree.iterwalk(el, events=("start", "end"))
    for event, node in walker:
        if event == "start":
            if node is not el and (_tag(node) in _SKIP or _hidden(node)):
                walker.skip_subtree()
            else:
                parts.append(("\n" if _tag(node) == "br" else "") + (node.text or ""))
        elif node is not el:
            parts.append(node.tail or "")
    return "".join(parts)


def _main_content(root: Any) -> Any:
    main = next(root.iter("main"), None)
    if main is not None:
        return main
    articles = list(root.iter("article"))
    if articles:
        return max(articles, key=lambda a: sum(map(len, a.itertext())))
    body = next(root.iter("body"), None)
    return body if body is not None else root


def _head(root: Any, builder: DocumentBuilder) -> str | None:
    title_el = next(root.iter("title"), None)
    title = _flat("".join(title_el.itertext())) if title_el is not None else ""
    for meta in root.iter("meta"):
        name = (meta.get("name") or "").strip().lower()
        if name in _META and meta.get("content"):
            builder.set_metadata(_META[name], meta.get("content"))
    lang = root.get("lang") if _tag(root) == "html" else None
    if lang:
        builder.set_metadata("language", lang)
    return title or None


def read_html(
    text: str,
    builder: DocumentBuilder,
    deadline: Deadline,
    limits: ParseLimits,
    prefix: tuple[str, ...] = (),
) -> HtmlInfo:
    """Add the main content of the page ``text`` to ``builder`` under ``prefix``."""
    if not text.strip():
        return HtmlInfo()
    # libxml2 takes str input as UTF-8 bytes of it; its own encoding sniffing is not wanted.
    root = etree.fromstring(text.encode("utf-8", "replace"), _parser())
    if root is None:
        return HtmlInfo()
    title = _head(root, builder)
    walker = _Walker(builder, deadline, limits, prefix)
    walker.walk(_main_content(root))
    return HtmlInfo(title, walker.first_h1)


def _decode(data: bytes) -> tuple[str, str | None]:
    """The page's text: a byte-order mark or UTF-8, else its declared ``<meta charset>``,
    else the Windows-1252 fallback (with a warning)."""
    decoded = decode_text(data)
    if decoded.warning is None:
        return decoded.text, None
    declared = _CHARSET.search(data[:4096])
    if declared:
        try:
            return data.decode(declared.group(1).decode("ascii")), None
        except (LookupError, UnicodeDecodeError):
            pass
    return decoded.text, decoded.warning


def parse_html(data: bytes, limits: ParseLimits, deadline: Deadline) -> Document:
    text, warning = _decode(data)
    check_source_chars(text, limits)
    builder = DocumentBuilder(SourceType.HTML, limits)
    if warning:
        builder.warnings.append(warning)
    info = read_html(text, builder, deadline, limits)
    builder.title = info.title or info.first_h1
    return builder.build()
