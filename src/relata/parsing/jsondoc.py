"""JSON parser: a JSON document as ``path: value`` lines, e.g. ``authors[0].name: Ada``.

Each top-level entry (a key of the root object, or an element of the root array) becomes
one block of its lines, so a chunk never starts in the middle of a record unless the record
alone is longer than a chunk. Keys that are not plain identifiers are quoted
(``meta["a.b"]``). The walk is iterative with an explicit depth bound, and the number of
lines is bounded, so hostile nesting or fan-out cannot exhaust the stack or memory.

The line count is known before anything is built: a valid JSON document flattens to exactly
one line per leaf (scalar or empty container), and it has one more leaf than it has commas
outside strings (a container of k values has k - 1 commas). ``check_json_lines`` counts those
commas in linear time and bounded memory (numpy, a window at a time: a quote ends or starts a
string unless an odd run of backslashes precedes it), so a document over ``max_json_lines`` is
refused before ``json.loads`` materialises millions of objects, and at upload already
(``sniff``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from relata.domain.models import SourceType
from relata.parsing.decode import decode_text
from relata.parsing.model import (
    Deadline,
    Document,
    DocumentBuilder,
    ParseLimits,
    check_source_chars,
    too_big,
    unparseable,
)

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_QUOTE, _COMMA, _BACKSLASH = ord('"'), ord(","), ord("\\")
_WINDOW_CHARS = 1 << 18
_TITLE_KEYS = ("title", "name", "headline")
_CHECK_EVERY = 2000


def _key_path(prefix: str, key: str) -> str:
    if _IDENTIFIER.match(key):
        return f"{prefix}.{key}" if prefix else key
    return f"{prefix}[{json.dumps(key, ensure_ascii=False)}]"


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


class _Lines:
    """Flattens one JSON value into ``path: value`` lines within the document's bounds."""

    def __init__(self, limits: ParseLimits, deadline: Deadline) -> None:
        self.count = 0
        self._limits = limits
        self._deadline = deadline

    def _emit(self, out: list[str], line: str) -> None:
        self.count += 1
        if self.count > self._limits.max_json_lines:
            raise too_big(f"the JSON expands to more than {self._limits.max_json_lines} lines")
        if self.count % _CHECK_EVERY == 0:
            self._deadline.check()
        out.append(line)

    def flatten(self, path: str, value: Any, depth: int) -> list[str]:
        out: list[str] = []
        stack: list[tuple[str, Any, int]] = [(path, value, depth)]
        max_depth = self._limits.max_json_depth
        while stack:
            p, v, d = stack.pop()
            if d > max_depth:
                raise too_big(f"the JSON is nested deeper than {max_depth} levels")
            if isinstance(v, dict):
                if not v:
                    self._emit(out, f"{p}: {{}}" if p else "{}")
                children = [(_key_path(p, str(k)), c, d + 1) for k, c in v.items()]
                stack.extend(reversed(children))
            elif isinstance(v, list):
                if not v:
                    self._emit(out, f"{p}: []" if p else "[]")
                stack.extend((f"{p}[{n}]", c, d + 1) for n, c in reversed(list(enumerate(v))))
            else:
                self._emit(out, f"{p}: {_scalar(v)}" if p else _scalar(v))
        return out


def check_json_lines(text: str, limits: ParseLimits) -> None:
    """Refuse JSON that would flatten to more than ``max_json_lines`` lines (see above)."""
    limit = limits.max_json_lines
    if text.count(",") < limit:  # commas inside strings can only add to this count
        return
    values = commas_outside_strings(text, stop_at=limit) + 1
    if values > limit:
        raise too_big(
            f"the JSON holds more than {limit} values, one line of text each; the limit is "
            f"{limit} lines"
        )


def commas_outside_strings(text: str, *, stop_at: int, window: int = _WINDOW_CHARS) -> int:
    """Commas of ``text`` outside JSON strings, counted up to ``stop_at`` (then it stops)."""
    import numpy as np

    count = 0
    inside = False  # whether the window starts inside a string
    run = 0  # backslashes that end the previous window
    for start in range(0, len(text), window):
        # UTF-8 keeps quotes, commas and backslashes as single bytes and nothing else as them.
        raw = text[start : start + window].encode("utf-8", "surrogatepass")
        b = np.frombuffer(raw, dtype=np.uint8)
        positions = np.arange(len(b))
        # For each byte, the index of the last byte at or before it that is not a backslash.
        last_plain = np.maximum.accumulate(np.where(b == _BACKSLASH, -1, positions))
        quotes = np.flatnonzero(b == _QUOTE)
        before = quotes - 1
        plain = np.where(before >= 0, last_plain[np.maximum(before, 0)], -1)
        runs = np.where(plain >= 0, before - plain, before + 1 + run)
        quotes = quotes[runs % 2 == 0]  # an odd run of backslashes escapes the quote
        commas = np.flatnonzero(b == _COMMA)
        parity = (np.searchsorted(quotes, commas) + int(inside)) % 2
        count += int(np.count_nonzero(parity == 0))
        if count >= stop_at:
            return count
        inside ^= bool(len(quotes) % 2)
        tail = int(last_plain[-1]) if len(b) else -1
        run = len(b) - 1 - tail if tail >= 0 else run + len(b)
    return count


def json_title(root: Any) -> str | None:
    """The value of the first title-like field (``_TITLE_KEYS``) of an object, or of the
    first record of a list of records (JSON Lines, whose first line ``parse_text`` reads)."""
    if isinstance(root, list) and root:
        root = root[0]
    if isinstance(root, dict):
        for key in _TITLE_KEYS:
            value = root.get(key)
            if isinstance(value, str) and value.strip():
                return value
    return None


def parse_json(data: bytes, limits: ParseLimits, deadline: Deadline) -> Document:
    decoded = decode_text(data)
    check_source_chars(decoded.text, limits)
    check_json_lines(decoded.text, limits)
    try:
        root = json.loads(decoded.text)
    except RecursionError as exc:
        raise too_big(f"the JSON is nested deeper than {limits.max_json_depth} levels") from exc
    except ValueError as exc:
        detail = (
            f"{exc.msg} at line {exc.lineno} column {exc.colno}"
            if isinstance(exc, json.JSONDecodeError)
            else str(exc)
        )
        raise unparseable(f"the content is not valid JSON: {detail}") from exc
    deadline.check()
    builder = DocumentBuilder(SourceType.JSON, limits)
    if decoded.warning:
        builder.warnings.append(decoded.warning)
    builder.title = json_title(root)
    lines = _Lines(limits, deadline)
    if isinstance(root, dict) and root:
        entries: list[tuple[str, Any, str]] = [
            (_key_path("", str(k)), v, "field") for k, v in root.items()
        ]
    elif isinstance(root, list) and root:
        entries = [(f"[{n}]", v, "record") for n, v in enumerate(root)]
    else:
        entries = [("", root, "field")]
    for path, value, kind in entries:
        builder.add("\n".join(lines.flatten(path, value, 1)), kind=kind)
    return builder.build()
