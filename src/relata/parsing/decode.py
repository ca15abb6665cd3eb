"""Bytes to text for the text-like types (plain text, Markdown, JSON), and binary detection.

Order of trust: a byte-order mark (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE) decides the encoding;
without one the bytes must be UTF-8. Bytes that are not valid UTF-8 are still accepted as
text, decoded as Windows-1252 (or Latin-1 when even that fails), and the fallback is recorded
as a warning on the document, so nobody mistakes a guessed decoding for a faithful one.
Content with NUL bytes or many control characters is binary and rejected, with a message that
says what it looks like.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from relata.domain.errors import UnsupportedContent
from relata.parsing.model import SUPPORTED_TYPES

_BOMS: tuple[tuple[bytes, str, str], ...] = (
    # UTF-32 first: its little-endian BOM begins with the UTF-16 one.
    (b"\xff\xfe\x00\x00", "utf-32-le", "UTF-32"),
    (b"\x00\x00\xfe\xff", "utf-32-be", "UTF-32"),
    (b"\xef\xbb\xbf", "utf-8", "UTF-8"),
    (b"\xff\xfe", "utf-16-le", "UTF-16"),
    (b"\xfe\xff", "utf-16-be", "UTF-16"),
)
# Control characters no text document needs (tab, newlines, form feed and ESC are allowed),
# plus the C1 range a Latin-1 decoding of binary data produces.
_BINARY_CONTROL = re.compile(r"[\x01-\x08\x0e-\x1a\x1c-\x1f\x7f-\x9f]")
_MAX_CONTROL_RATIO = 0.01


@dataclass(frozen=True, slots=True)
class DecodedText:
    text: str
    encoding: str
    warning: str | None = None


def _binary(detail: str) -> UnsupportedContent:
    return UnsupportedContent(
        f"the content is {detail}; supported types are {SUPPORTED_TYPES}",
        field="content",
    )


def _looks_like_bomless_utf16(data: bytes) -> bool:
    sample = data[:4096]
    half = max(1, len(sample) // 2)
    zeros_even = sample[0::2].count(0)
    zeros_odd = sample[1::2].count(0)
    return max(zeros_even, zeros_odd) > 0.3 * half and min(zeros_even, zeros_odd) < 0.05 * half


def _decode_with_bom(data: bytes) -> DecodedText | None:
    # FF FE 00 00 is both the UTF-32 LE mark and UTF-16 LE's followed by U+0000: try both.
    failed: tuple[bytes, str, str, int] | None = None
    for bom, codec, name in _BOMS:
        if not data.startswith(bom):
            continue
        try:
            return DecodedText(data[len(bom) :].decode(codec), name)
        except UnicodeDecodeError as exc:
            failed = (bom, codec, name, exc.start + len(bom))
    if failed is None:
        return None
    bom, codec, name, bad = failed
    return DecodedText(
        data[len(bom) :].decode(codec, errors="replace"),
        name,
        f"the content has a {name} byte-order mark but is not valid {name} "
        f"(first bad byte at offset {bad}); undecodable bytes were replaced",
    )


def _decode_without_bom(data: bytes) -> DecodedText:
    if b"\x00" in data:
        if _looks_like_bomless_utf16(data):
            raise _binary("UTF-16 text without a byte-order mark (save it as UTF-8)")
        raise _binary("binary data (it contains NUL bytes)")
    try:
        return DecodedText(data.decode("utf-8"), "UTF-8")
    except UnicodeDecodeError as exc:
        where = f"first invalid byte at offset {exc.start}"
    try:
        text, encoding = data.decode("cp1252"), "Windows-1252"
    except UnicodeDecodeError:
        text, encoding = data.decode("latin-1"), "Latin-1"
    return DecodedText(
        text, encoding, f"the content is not valid UTF-8 ({where}); decoded as {encoding} fallback"
    )


def decode_text(data: bytes) -> DecodedText:
    """Decode ``data`` as text or raise ``UnsupportedContent`` saying why it is not text."""
    decoded = _decode_with_bom(data)
    if decoded is not None:
        if "\x00" in decoded.text:
            raise _binary("binary data (NUL characters after the byte-order mark)")
    else:
        decoded = _decode_without_bom(data)
    _reject_binary(decoded.text, data)
    return decoded


def _reject_binary(text: str, data: bytes) -> None:
    if not text:
        return
    controls = len(_BINARY_CONTROL.findall(text))
    if controls > 1 and controls > _MAX_CONTROL_RATIO * len(text):
        share = 100 * controls / len(text)
        raise _binary(f"binary data ({share:.0f}% control characters in {len(data)} bytes)")
