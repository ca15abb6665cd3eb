"""The answer's text while the model is still writing it (docs/decisions/0042-streaming-answers.md).

The model replies with one JSON object, ``{"answer": "...", "sufficient": ..., "citations":
[...]}`` (``relata.analysis.answer``), and a streaming provider hands it over a few characters
at a time. Two pure, incremental filters turn those pieces into text a person may read before
the reply is judged:

* ``AnswerFieldReader`` follows the JSON just far enough to find the top-level ``"answer"``
  string and decodes it (escapes, ``\\uXXXX`` and surrogate pairs) as it arrives; everything
  else in the object is skipped. It judges nothing: the whole reply is still decoded
  strictly, and may be rejected, when it is complete.
* ``MarkerHold`` holds back every inline citation marker (``[S1]``, ``[S1, S2]``): a bracket
  is kept until it closes, then dropped when it is a marker (``find_markers``' rule) and let
  through when it is prose (``[sic]``). So no citation, invented or not, is shown before it
  has been resolved against the supplied sources; the final answer carries the markers,
  resolved.

Both are bounded: the reader keeps at most ``MAX_KEY_CHARS`` of a key, the hold at most
``MAX_HELD_CHARS`` (a longer bracket is prose by ``find_markers``' rule).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

from relata.analysis.answer import find_markers

MAX_KEY_CHARS: Final = 64
MAX_HELD_CHARS: Final = 202  # "[" + find_markers' 200 characters + "]"
_ESCAPES: Final = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r"}
_ESCAPES["t"] = "\t"
_HEX: Final = frozenset("0123456789abcdefABCDEF")


class AnswerFieldReader:
    """Feed raw reply pieces; get back the newly decoded characters of the ``answer`` field."""

    def __init__(self, field: str = "answer") -> None:
        self._field = field
        self._depth = 0
        self._in_string = False
        self._is_key = False
        self._is_answer = False
        self._escape: str | None = None  # the characters after a backslash, while incomplete
        self._high: str | None = None  # a high surrogate waiting for its low half
        self._key: list[str] = []
        self._last_key: str | None = None
        self._after_colon = False
        self.finished = False  # the answer string has been read to its closing quote

    def feed(self, piece: str) -> str:
        out: list[str] = []
        for ch in piece:
            if self._in_string:
                self._string_char(ch, out)
            elif ch == '"':
                self._in_string = True
                self._is_key = self._depth == 1 and not self._after_colon
                self._is_answer = (
                    self._depth == 1
                    and self._after_colon
                    and self._last_key == self._field
                    and not self.finished
                )
                self._key.clear()
            elif ch in "{[":
                self._depth += 1
            elif ch in "}]":
                self._depth -= 1
            elif ch == ":" and self._depth == 1:
                self._after_colon = True
            elif ch == "," and self._depth == 1:
                self._after_colon = False
        return "".join(out)

    def _string_char(self, ch: str, out: list[str]) -> None:
        if self._escape is not None:
            self._escape += ch
            if self._escape[0] != "u":
                self._emit(_ESCAPES.get(ch, ch), out)
                self._escape = None
            elif len(self._escape) > 1 and ch not in _HEX:
                # A broken \u escape: the strict decode rejects the reply.
                self._escape = None
            elif len(self._escape) == 5:
                self._code_point(int(self._escape[1:], 16), out)
                self._escape = None
            return
        if ch == "\\":
            self._escape = ""
            return
        if ch == '"':
            self._in_string = False
            if self._high is not None:
                self._high = None
                self._emit("\ufffd", out)
            if self._is_key:
                self._last_key = "".join(self._key)
            elif self._is_answer:
                self.finished = True
            self._is_key = self._is_answer = False
            return
        self._emit(ch, out)

    def _code_point(self, code: int, out: list[str]) -> None:
        if 0xD800 <= code <= 0xDBFF:
            if self._high is not None:
                self._high = None
                self._emit("\ufffd", out)
            self._high = chr(code)
            return
        if 0xDC00 <= code <= 0xDFFF and self._high is not None:
            pair = (self._high + chr(code)).encode("utf-16-le", "surrogatepass")
            self._high = None
            self._emit(pair.decode("utf-16-le"), out)
            return
        self._emit("\ufffd" if 0xD800 <= code <= 0xDFFF else chr(code), out)

    def _emit(self, text: str, out: list[str]) -> None:
        if self._high is not None and text:
            self._high = None
            if self._is_answer:
                out.append("\ufffd")
        if self._is_key:
            if len(self._key) < MAX_KEY_CHARS:
                self._key.append(text)
        elif self._is_answer:
            out.append(text)


class MarkerHold:
    """Feed answer text; get back the text with every citation marker held back for good,
    with the spaces before it (``twelve turbines [S1].`` shows as ``twelve turbines.``)."""

    def __init__(self, supplied_refs: Collection[str]) -> None:
        self._supplied = frozenset(supplied_refs)
        self._held: list[str] = []  # an open bracket, until it closes
        self._space: list[str] = []  # spaces that may come before a marker

    def feed(self, text: str) -> str:
        out: list[str] = []
        for ch in text:
            if self._held:
                self._in_bracket(ch, out)
            elif ch == "[":
                self._held = ["["]
            elif ch in " \t":
                self._space.append(ch)
                if len(self._space) > MAX_HELD_CHARS:
                    out.append(self._space.pop(0))
            else:
                out.extend(self._space)
                self._space = []
                out.append(ch)
        return "".join(out)

    def _in_bracket(self, ch: str, out: list[str]) -> None:
        if ch == "[" or ch == "\n":
            self._release(out)
            if ch == "[":
                self._held = ["["]
            else:
                out.append(ch)
            return
        self._held.append(ch)
        if ch == "]":
            bracket = "".join(self._held)
            markers, _ = find_markers(bracket, self._supplied)
            if markers and markers[0].end - markers[0].start == len(bracket):
                self._held = []  # a marker: dropped, with the spaces before it
                self._space = []
            else:
                self._release(out)
        elif len(self._held) >= MAX_HELD_CHARS:
            self._release(out)

    def _release(self, out: list[str]) -> None:
        out.extend(self._space)
        out.extend(self._held)
        self._space, self._held = [], []

    def flush(self) -> str:
        """What is still held when the answer ends (an unclosed bracket is prose)."""
        out: list[str] = []
        self._release(out)
        return "".join(out)
