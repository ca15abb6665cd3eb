"""Markdown parser (CommonMark + GFM tables, via markdown-it-py) -> sections and blocks.

Headings open sections: a heading's ``heading_path`` is the chain of enclosing headings
ending with itself, and every following block inherits that path until a heading of the same
or a higher level. Inline markup is reduced to its text (link text, image alt text, code
without backticks); tables become ``cell | cell`` lines; lists become ``- item`` lines; code
blocks keep their content. A leading YAML-style front matter block (``---`` ... ``---``) is not
part of the text: its ``key: value`` lines become metadata, ``title`` the document title.

Work is bounded by the line count (``max_markdown_lines``, checked before parsing and at
upload by ``sniff``) as well as by the characters and the deadline, which is checked between
segments of at most 256 KiB and every few hundred tokens.
"""

from __future__ import annotations

import functools
import re

from markdown_it import MarkdownIt
from markdown_it.token import Token

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

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.{0,8192}?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
_FRONT_MATTER_LINE = re.compile(r"([A-Za-z][A-Za-z0-9_-]{0,63})[ \t]*:(.*)")
_CHECK_EVERY = 500
_SEGMENT_CHARS = 64 * 1024


@functools.cache
def _markdown() -> MarkdownIt:
    # "commonmark" caps nesting (maxNesting), which bounds recursion on hostile input.
    return MarkdownIt("commonmark", {"html": True}).enable("table")


def _front_matter(text: str, builder: DocumentBuilder) -> str:
    match = _FRONT_MATTER.match(text)
    if not match:
        return text
    for line in match.group(1).splitlines():
        kv = _FRONT_MATTER_LINE.fullmatch(line)
        if not kv or not kv.group(2).strip():
            continue
        key, value = kv.group(1).lower(), kv.group(2).strip().strip("\"'")
        if key == "title":
            builder.title = value
        else:
            builder.set_metadata(key, value)
    return text[match.end() :]


def check_markdown_lines(text: str, limits: ParseLimits) -> None:
    """Refuse Markdown of more than ``max_markdown_lines`` lines (any newline convention)."""
    lines = text.count("\n") + text.count("\r") - text.count("\r\n") + 1
    if lines > limits.max_markdown_lines:
        raise too_big(
            f"the Markdown has {lines} lines; the limit is {limits.max_markdown_lines} lines"
        )


def inline_text(token: Token) -> str:
    """The readable text of an inline token: markup dropped, link and alt text kept."""
    parts: list[str] = []
    for child in token.children or ():
        if child.type in ("text", "code_inline", "image"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append("\n")
    return "".join(parts)


def _closing(tokens: list[Token], i: int) -> int:
    """Index of the token closing the container opened at ``tokens[i]``."""
    open_token = tokens[i]
    close_type = open_token.type.replace("_open", "_close")
    for j in range(i + 1, len(tokens)):
        if tokens[j].type == close_type and tokens[j].level == open_token.level:
            return j
    return len(tokens) - 1


def _list_text(tokens: list[Token]) -> str:
    lines: list[str] = []
    depth = 0
    marker: str | None = None
    for tok in tokens:
        if tok.type in ("bullet_list_open", "ordered_list_open"):
            depth += 1
        elif tok.type in ("bullet_list_close", "ordered_list_close"):
            depth -= 1
        elif tok.type == "list_item_open":
            marker = f"{tok.info}{tok.markup} " if tok.info else "- "
        elif tok.type in ("inline", "fence", "code_block", "html_block"):
            text = inline_text(tok) if tok.type == "inline" else tok.content.rstrip("\n")
            indent = "  " * max(0, depth - 1)
            prefix = marker or "  "
            marker = None
            for k, line in enumerate(text.split("\n")):
                lines.append(indent + (prefix if k == 0 else "  ") + line)
    return "\n".join(lines)


def _table_text(tokens: list[Token]) -> str:
    rows: list[str] = []
    cells: list[str] = []
    for tok in tokens:
        if tok.type == "tr_open":
            cells = []
        elif tok.type == "inline":
            cells.append(" ".join(inline_text(tok).split()))
        elif tok.type == "tr_close":
            rows.append(" | ".join(cells))
    return "\n".join(rows)


def segments(source: str) -> list[str]:
    """``source`` cut into pieces markdown-it can parse one at a time, so the deadline is
    checked between them. Cuts fall on blank lines (or, for a very long run without one, on
    any line end), never inside a fenced code block; at worst a paragraph becomes two.
    """
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    fence: str | None = None
    for line in source.split("\n"):
        stripped = line.lstrip(" ")
        if fence is None:
            if len(line) - len(stripped) <= 3 and stripped[:3] in ("```", "~~~"):
                fence = stripped[:3]
        elif stripped.startswith(fence):
            fence = None
        current.append(line)
        size += len(line) + 1
        if fence is None and (
            (size >= _SEGMENT_CHARS and not line.strip()) or size >= 4 * _SEGMENT_CHARS
        ):
            pieces.append("\n".join(current))
            current, size = [], 0
    if current:
        pieces.append("\n".join(current))
    return pieces


class _Walker:
    """Turns markdown-it tokens into blocks, keeping the heading stack across segments."""

    def __init__(self, builder: DocumentBuilder, deadline: Deadline) -> None:
        self.builder = builder
        self.deadline = deadline
        self.stack: list[tuple[int, str]] = []  # (heading level, path label)
        self.path: tuple[str, ...] = ()
        self.quote_depth = 0
        self.steps = 0

    def heading(self, level: int, text: str) -> None:
        if not text:
            return
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        self.stack.append((level, path_label(text)))
        self.path = tuple(label for _, label in self.stack)
        block = self.builder.add(text, kind="heading", heading_path=self.path, level=level)
        if block is not None and self.builder.block_count == 1 and level == 1:
            self.builder.title = self.builder.title or text

    def walk(self, tokens: list[Token]) -> None:
        add, i = self.builder.add, 0
        self.quote_depth = 0
        while i < len(tokens):
            self.steps += 1
            if self.steps % _CHECK_EVERY == 0:
                self.deadline.check()
            tok = tokens[i]
            kind = tok.type
            if kind == "heading_open":
                inline = tokens[i + 1] if i + 1 < len(tokens) else None
                self.heading(int(tok.tag[1:]), clean_text(inline_text(inline)) if inline else "")
                i = _closing(tokens, i) + 1
                continue
            if kind in ("bullet_list_open", "ordered_list_open", "table_open"):
                end = _closing(tokens, i)
                inner = tokens[i : end + 1]
                if kind == "table_open":
                    add(_table_text(inner), kind="table", heading_path=self.path)
                else:
                    add(_list_text(inner), kind="list", heading_path=self.path)
                i = end + 1
                continue
            if kind == "blockquote_open":
                self.quote_depth += 1
            elif kind == "blockquote_close":
                self.quote_depth -= 1
            elif kind == "inline":
                block_kind = "quote" if self.quote_depth else "paragraph"
                add(inline_text(tok), kind=block_kind, heading_path=self.path)
            elif kind in ("fence", "code_block"):
                add(tok.content, kind="code", heading_path=self.path)
            elif kind == "html_block":
                add(tok.content, kind="html", heading_path=self.path)
            i += 1


def parse_markdown(data: bytes, limits: ParseLimits, deadline: Deadline) -> Document:
    decoded = decode_text(data)
    check_source_chars(decoded.text, limits)
    check_markdown_lines(decoded.text, limits)
    builder = DocumentBuilder(SourceType.MARKDOWN, limits)
    if decoded.warning:
        builder.warnings.append(decoded.warning)
    source = _front_matter(clean_text(decoded.text), builder)
    walker = _Walker(builder, deadline)
    for segment in segments(source):
        deadline.check()
        walker.walk(_markdown().parse(segment))
    return builder.build()
