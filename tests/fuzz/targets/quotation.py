"""Fuzz target: locating a model's quotation, and mapping it from a chunk to its item.

The bytes give a chunk's text, the item text around it, a quotation, a subject and a
``near`` offset. ``locate_quotation`` declares no error; the claim validators
(``judge_claims`` on the chunk, ``validate_model_claims`` on the item) declare
``InvalidModelOutput`` only for a reply that is not the promised object, which the reply
built here always is. Invariants:

- a located span slices the source to text with the quotation's words, white space aside,
  and it is found exactly when the white-space-normalised source contains the normalised
  quotation; with ``near``, no other match starts nearer;
- a claim ``judge_claims`` keeps quotes the chunk at its offsets, and the same offsets
  shifted by the chunk's ``base_offset`` quote the item (the mapping the claims stage
  applies); ``validate_model_claims`` on the item quotes the item at its offsets, and its
  draft (``draft_of``: facets read from the quotation, subject offsets made relative to it)
  is built without error.
"""

from __future__ import annotations

import json
import re

import atheris

from relata.analysis.claim_task import judge_claims
from relata.analysis.quotation import MAX_QUOTATION_CHARS, locate_quotation
from relata.claims.extract import Subject
from relata.claims.locate import draft_of, validate_model_claims

_WORDS = (
    "tide",
    "rose",
    " ",
    "  ",
    "\n",
    "\t",
    "3.5",
    "m",
    "Vaughan",
    "\u00a0",
    "\u2028",
    "(",
    ")",
    "*",
    ".",
    "\\",
    "é",
    "x",
)


def _text(fdp: atheris.FuzzedDataProvider, most: int) -> str:
    if fdp.ConsumeBool():
        return str(fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, most)))
    count = fdp.ConsumeIntInRange(0, most // 4)
    return "".join(_WORDS[fdp.ConsumeIntInRange(0, len(_WORDS) - 1)] for _ in range(count))


def _check_span(source: str, quotation: str, near: int | None) -> None:
    span = locate_quotation(source, quotation, near=near)
    words = quotation.split()
    if not words or len(quotation) > MAX_QUOTATION_CHARS:
        assert span is None
        return
    present = " ".join(words) in " ".join(source.split())
    assert (span is not None) == present, "located iff the normalised text contains it"
    if span is None:
        return
    start, end = span
    assert 0 <= start <= end <= len(source)
    assert source[start:end].split() == words
    if near is not None:
        pattern = re.compile(r"\s+".join(re.escape(w) for w in words))
        nearest = min(abs(m.start() - near) for m in pattern.finditer(source))
        assert abs(start - near) == nearest


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    prefix, chunk, suffix = _text(fdp, 200), _text(fdp, 600), _text(fdp, 200)
    quotation = _text(fdp, 200)
    if fdp.ConsumeBool() and chunk:  # a quotation taken from the chunk, then reflowed
        a = fdp.ConsumeIntInRange(0, len(chunk))
        b = fdp.ConsumeIntInRange(a, len(chunk))
        quotation = " ".join(chunk[a:b].split()) if fdp.ConsumeBool() else chunk[a:b]
    subject = _text(fdp, 40)
    near = fdp.ConsumeIntInRange(0, len(chunk)) if fdp.ConsumeBool() else None
    _check_span(chunk, quotation, near)

    item = prefix + chunk + suffix
    base = len(prefix)
    row = {
        "subject": subject,
        "statement": f"{subject} is said to {quotation}"[:900],
        "nature": "fact",
        "quotation": quotation,
    }
    for claim in judge_claims(json.dumps({"claims": [row]}), chunk, [subject]).claims:
        assert chunk[claim.start : claim.end] == claim.quotation
        assert item[base + claim.start : base + claim.end] == claim.quotation

    at = item.find(subject) if subject else -1

    def resolve(name: str) -> Subject | None:
        if at < 0:
            return None
        return Subject(subject, " ".join(subject.split()).casefold(), at, at + len(subject))

    for located in validate_model_claims(item, [row], resolve).accepted:
        assert item[located.start : located.end] == located.quotation
        draft = draft_of("item", located, model="fuzz")
        assert item[draft.start : draft.end] == draft.quotation
