"""Names the model missed, found by rules: shaped capitalised runs, datelines, score lines,
defined acronyms and technical terms.

A capitalised run alone is a poor guess (capitals start sentences and headings), so a run
becomes a name only when something types it: its shape ("... Partnership", "Mount ..."),
an honorific or title ("Mr Reyes"), its place (a newswire dateline, "NAIROBI, Aug 2 -";
a score line, "Everton 1 Burnley 0") or a definition ("Meridian Tidal Institute (MTI)").
Technical terms are identifiers ("IL-6", "BRCA1", "SARS-CoV-2", "SB-04") and drug names by
their international nonproprietary stems ("metformin", "dexamethasone").
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from relata.domain.models import EntityType
from relata.entities.gazetteer import GIVEN_NAMES, PLACES
from relata.entities.lexicon import HONORIFICS, ORG_HEADS_OF, TITLES
from relata.entities.rules import (
    Passage,
    Span,
    clean,
    connector_joins,
    is_identifier,
    name_like,
    plain_name_word,
)
from relata.entities.tokens import is_connector, is_number_like, sentence_initial

_DATELINE: Final = re.compile(
    r"^[ \t]*(?P<place>[A-Z][A-Z.'\-]+(?:[ \t][A-Z][A-Z.'\-]+){0,3})"
    r"(?=,?[ \t]\d{4}-\d{2}-\d{2}"  # LONDON 1996-08-22
    r"|,[ \t](?:\d{1,2}[ \t])?[A-Z][a-z]{2,}\.?[ \t]\d"  # NAIROBI, Aug 2 / PORT X, 14 March
    r"|,?[ \t]\([ \t]?[A-Za-z]"  # LONDON (Reuters), tokenised: LONDON ( Reuters )
    r"|,?[ \t]-{1,2}[ \t][^\n]*[a-z])",  # TOKYO - Japanese ...
    re.MULTILINE,
)
_SCORE_LINE: Final = re.compile(
    r"^[ \t]*(?P<a>[A-Z][^\W\d_][\w.'\- ]*?)[ \t]+\d{1,3}[ \t]+"
    r"(?P<b>[A-Z][^\W\d_][\w.'\- ]*?)[ \t]+\d{1,3}[ \t]*$",
    re.MULTILINE,
)
_ACRONYM: Final = re.compile(r"\([ \t]?(?P<acronym>[A-Za-z][A-Za-z0-9&\-]{1,9})[ \t]?\)")
_DRUG_STEMS: Final = re.compile(
    r"[a-z]{3,}(?:mab|tinib|anib|vir|mycin|cillin|statin|olol|pril|sartan|prazole|formin"
    r"|tidine|citabine|parin|dronate|oxacin|cycline|asone|olone|azepam|oxetine|triptan"
    r"|lukast|gliptin|glitazone|setron|tecan|platin|taxel|rubicin)",
)
_MAX_ACRONYM_WORDS: Final = 10
_MAX_PLACE_WORDS: Final = 5
_PLACE_FIRST_WORDS: Final = frozenset(name.split(" ")[0] for name in PLACES)


def _runs(p: Passage) -> Iterator[tuple[int, int]]:
    """Maximal runs of capitalised words joined by spaces, with connectors inside."""
    ws, n, i = p.words, len(p.words), 0
    while i < n:
        if not name_like(ws[i].text):
            i += 1
            continue
        j = i + 1
        while j < n and p.joined(j) and (name_like(ws[j].text) or _connects(p, i, j)):
            j += 1
        while j > i + 1 and not name_like(ws[j - 1].text):
            j -= 1
        yield i, j
        i = j


def _connects(p: Passage, i: int, j: int) -> bool:
    """Whether the connector at ``j`` continues the run that starts at ``i``."""
    ws = p.words
    if not (is_connector(ws[j].text) or ws[j].folded == "the"):
        return False
    k = j + 1
    while k < len(ws) and (is_connector(ws[k].text) or ws[k].folded == "the"):
        k += 1
    if k >= len(ws) or not all(p.joined(m) for m in range(j + 1, k + 1)):
        return False
    return name_like(ws[k].text) and connector_joins(p, i, j)


def shaped_runs(p: Passage, found: list[Span]) -> list[Span]:
    """Runs typed by shape, honorific or title (never a bare run). A sentence's first word
    before a name already ``found`` is not part of it ("Ask Kestrel Marine Systems")."""
    starts = {s.start for s in found}
    out: list[Span] = []
    for i, j in _runs(p):
        if p.in_caps_line(i):
            continue  # a headline in capitals: every word is capitalised
        ws = p.words
        if (
            j - i > 2
            and ws[i + 1].folded == "of"
            and ws[i].folded not in ORG_HEADS_OF
            and sentence_initial(p.text, ws[i].start)
        ):
            i += 2  # "Shares of Ostrander Mining Ltd": the sentence's first word is not a name
        elif (
            j - i > 1
            and ws[i + 1].start in starts
            and ws[i].folded not in HONORIFICS
            and ws[i].folded not in TITLES
            and sentence_initial(p.text, ws[i].start)
        ):
            i += 1
        out.extend(clean(p, p.words[i].start, p.words[j - 1].end, None))
    return out


def datelines(p: Passage) -> list[Span]:
    """The place that opens a newswire story ("BRUSSELS 2024-03-11", "TOKYO - ...")."""
    out: list[Span] = []
    for match in _DATELINE.finditer(p.text):
        line_start = match.start()
        previous = p.text[max(0, line_start - 2) : line_start]
        if line_start > 0 and previous != "\n\n" and p.text[:line_start].strip():
            continue  # a dateline starts the text or a paragraph
        start, end = match.span("place")
        out.append(Span(start, end, EntityType.LOCATION, strong=True))
    return out


def score_lines(p: Passage) -> list[Span]:
    """The two sides of a results line ("Aston Villa 3 Brentford 3"): teams."""
    out: list[Span] = []
    for match in _SCORE_LINE.finditer(p.text):
        for group in ("a", "b"):
            start, end = match.span(group)
            out.extend(
                Span(s.start, s.end, EntityType.ORGANISATION, strong=True)
                for s in clean(p, start, end, EntityType.ORGANISATION)
            )
    return out


@dataclass(frozen=True, slots=True)
class AcronymSpan:
    acronym: Span
    expansion: Span


def _long_form_start(short: str, long: str) -> int | None:
    """Schwartz & Hearst (2003): where in ``long`` the expansion of ``short`` starts, its
    characters matched right to left, the first at the start of a word."""
    s, lp = len(short) - 1, len(long) - 1
    while s >= 0:
        c = short[s].lower()
        if not c.isalnum():
            s -= 1
            continue
        while lp >= 0 and (long[lp].lower() != c or (s == 0 and lp > 0 and long[lp - 1].isalnum())):
            lp -= 1
        if lp < 0:
            return None
        lp -= 1
        s -= 1
    return long.rfind(" ", 0, lp + 1) + 1


def acronyms(p: Passage, spans: list[Span]) -> list[AcronymSpan]:
    """ "Long Form (LF)" definitions. The expansion takes the type of the span it matches
    (or its shape); a lower-case or identifier-like expansion is a term ("C-reactive
    protein (CRP)", "Interleukin-6 (IL-6)")."""
    out: list[AcronymSpan] = []
    for match in _ACRONYM.finditer(p.text):
        short = match.group("acronym")
        if sum(c.isupper() for c in short) < 2:
            continue
        i, _ = p.word_range(match.start(), match.end())
        first = max(0, i - min(len(short) + 5, 2 * len(short), _MAX_ACRONYM_WORDS))
        window_start = p.words[first].start if i > 0 else match.start()
        window = p.text[window_start : match.start()].rstrip()
        offset = _long_form_start(short, window)
        if not window or offset is None or "\n\n" in window[offset:]:
            continue
        start, end = window_start + offset, window_start + len(window)
        expansion = _expansion(p, start, end, spans, short)
        if expansion is None:
            continue
        a_start, a_end = match.span("acronym")
        out.append(AcronymSpan(Span(a_start, a_end, expansion.type, True), expansion))
    return out


def _expansion(p: Passage, start: int, end: int, spans: list[Span], short: str) -> Span | None:
    i, j = p.word_range(start, end)
    if i >= j:
        return None
    ws = p.words[i:j]
    if all(name_like(w.text) or is_connector(w.text) or w.folded == "the" for w in ws):
        if ws[0].folded == "the":
            i += 1
        if i >= j:
            return None
        shaped = clean(p, p.words[i].start, p.words[j - 1].end, None)
        if len(shaped) == 1 and shaped[0].end == p.words[j - 1].end:
            return Span(shaped[0].start, shaped[0].end, shaped[0].type, True)
        for s in spans:
            if s.start <= p.words[i].start < s.end and s.type is not EntityType.TERM:
                kind = EntityType.TERM if any(c.isdigit() for c in short) else s.type
                return Span(p.words[i].start, p.words[j - 1].end, kind, True)
    return Span(p.words[i].start, p.words[j - 1].end, EntityType.TERM, True)


def terms(p: Passage) -> list[Span]:
    """Identifiers and drug names, as terms."""
    out: list[Span] = []
    for w in p.words:
        token = w.text
        identifier = is_identifier(token) and not is_number_like(token)
        drug = len(token) >= 7 and _DRUG_STEMS.fullmatch(token.casefold()) is not None
        if identifier or drug:
            out.append(Span(w.start, w.end, EntityType.TERM, strong=True))
    return out


def _alone(p: Passage, i: int, j: int) -> bool:
    """Whether words ``[i, j)`` are not part of a longer capitalised run."""
    ws = p.words
    before = i > 0 and p.joined(i) and name_like(ws[i - 1].text)
    after = j < len(ws) and p.joined(j) and name_like(ws[j].text)
    return not before and not after


def places(p: Passage) -> list[Span]:
    """Countries, continents and states standing alone ("Malawi", "New Zealand")."""
    out: list[Span] = []
    ws, n, i = p.words, len(p.words), 0
    while i < n:
        if ws[i].text in _PLACE_FIRST_WORDS and not p.in_caps_line(i):
            for length in range(min(_MAX_PLACE_WORDS, n - i), 0, -1):
                j = i + length
                if not all(p.joined(k) for k in range(i + 1, j)):
                    continue
                if " ".join(w.text for w in ws[i:j]) in PLACES and _alone(p, i, j):
                    out.append(p.span(i, j, EntityType.LOCATION, strong=True))
                    i = j - 1
                    break
        i += 1
    return out


def given_names(p: Passage) -> list[Span]:
    """People by a common given name: "Cameron Young", or "Sam" inside a sentence."""
    out: list[Span] = []
    ws = p.words
    for i, j in _runs(p):
        if p.in_caps_line(i) or ws[i].text not in GIVEN_NAMES:
            continue
        if j - i == 1 and sentence_initial(p.text, ws[i].start):
            continue
        rest = ws[i + 1 : j]
        plain = j - i <= 3 and all(plain_name_word(w.text) for w in rest)
        if plain and " ".join(w.text for w in ws[i:j]) not in PLACES:
            out.append(p.span(i, j, EntityType.PERSON))
    return out
