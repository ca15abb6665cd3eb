"""The deterministic extractor: spaCy's small NER with rules around it, no language model.

For one item (its chunks), in order:

1. spaCy's entities of every chunk (``spacy_ner``), mapped to Relata's types: PERSON ->
   person; ORG -> organisation; GPE, LOC, FAC -> location; PRODUCT, EVENT, WORK_OF_ART,
   LAW -> term; NORP, LANGUAGE and the numeric labels (DATE, TIME, MONEY, PERCENT,
   QUANTITY, ORDINAL, CARDINAL) -> nothing;
2. each span cut and typed by ``rules.clean`` (articles, titles, possessives, shapes);
3. names the model missed (``candidates``): datelines, score lines, defined acronyms,
   shaped capitalised runs, technical terms;
4. adjacent person or organisation spans joined by one space are merged;
5. the document-level rules (``consistency.harmonise``);
6. mentions in item offsets; where overlapping chunks found overlapping mentions, the
   longest is kept (the other was cut by the chunk's edge).

``EXTRACTOR_VERSION`` names the rules' version and the spaCy and model versions, and is
recorded on every mention: it changes whenever the output may.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from relata.domain.errors import ValidationError
from relata.domain.models import EntityType
from relata.entities import candidates, spacy_ner
from relata.entities.consistency import harmonise
from relata.entities.mentions import (
    AcronymDefinition,
    ChunkText,
    Extraction,
    Extractor,
    Mention,
)
from relata.entities.normalise import clean_name, normalise_name
from relata.entities.rules import Passage, Span, clean
from relata.entities.units import is_unit

RULES_VERSION: Final = "4"
EXTRACTOR_VERSION: Final = f"rules-{RULES_VERSION}+{spacy_ner.library_versions()}"
MAX_CHUNKS: Final = 10_000

SPACY_TYPES: Final[dict[str, EntityType]] = {
    "PERSON": EntityType.PERSON,
    "ORG": EntityType.ORGANISATION,
    "GPE": EntityType.LOCATION,
    "LOC": EntityType.LOCATION,
    "FAC": EntityType.LOCATION,
    "PRODUCT": EntityType.TERM,
    "EVENT": EntityType.TERM,
    "WORK_OF_ART": EntityType.TERM,
    "LAW": EntityType.TERM,
}
_MERGED: Final = (EntityType.PERSON, EntityType.ORGANISATION)


def _add(spans: list[Span], candidate: Span, *, override: bool = False) -> None:
    """Add a rule's span: it retypes a model span of the same extent and replaces the spans it
    contains; otherwise the spans already there win (unless ``override``)."""
    overlapping = [s for s in spans if s.start < candidate.end and candidate.start < s.end]
    if not overlapping:
        spans.append(candidate)
        return
    same = [s for s in overlapping if (s.start, s.end) == (candidate.start, candidate.end)]
    if same and len(overlapping) == 1:
        if candidate.strong and (override or not same[0].strong):
            same[0].type, same[0].strong = candidate.type, True
        return
    contains = all(candidate.start <= s.start and s.end <= candidate.end for s in overlapping)
    if override or (candidate.strong and contains):
        spans[:] = [s for s in spans if s not in overlapping]
        spans.append(candidate)


def _merge_adjacent(p: Passage, spans: list[Span]) -> list[Span]:
    spans.sort(key=lambda s: s.start)
    out: list[Span] = []
    for s in spans:
        last = out[-1] if out else None
        if (
            last is not None
            and last.type is s.type
            and s.type in _MERGED
            and p.text[last.end : s.start] == " "
        ):
            last.end, last.strong = s.end, last.strong or s.strong
        else:
            out.append(s)
    return out


def _chunk_spans(
    p: Passage, raw: list[spacy_ner.RawSpan], chunk_id: str
) -> tuple[list[Span], list[AcronymDefinition]]:
    spans: list[Span] = []
    for start, end, label in raw:
        entity_type = SPACY_TYPES.get(label)
        if entity_type is not None:
            for s in clean(p, start, end, entity_type):
                _add(spans, s)
    for s in candidates.datelines(p):
        _add(spans, s, override=True)
    for s in candidates.score_lines(p):
        _add(spans, s, override=True)
    definitions: list[AcronymDefinition] = []
    for found in candidates.acronyms(p, spans):
        _add(spans, found.expansion)
        _add(spans, found.acronym, override=True)
        definitions.append(
            AcronymDefinition(
                chunk_id,
                p.text[found.acronym.start : found.acronym.end],
                clean_name(p.text[found.expansion.start : found.expansion.end]),
                found.expansion.type,
            )
        )
    for s in candidates.shaped_runs(p, spans):
        _add(spans, s)
    for s in candidates.places(p):
        _add(spans, s)
    for s in candidates.given_names(p):
        _add(spans, s)
    for s in candidates.terms(p):
        _add(spans, s)
    # A unit, a currency or a measurement abbreviation is never a name (entities.units).
    merged = [s for s in _merge_adjacent(p, spans) if not is_unit(p.text, s.start, s.end)]
    return merged, definitions


class DeterministicExtractor:
    """Entities without a language model (see the module docstring). Stateless: the spaCy
    pipeline is loaded on first use, once per process, and shared."""

    @property
    def extractor(self) -> Extractor:
        return Extractor.DETERMINISTIC

    @property
    def version(self) -> str:
        return EXTRACTOR_VERSION

    def extract(self, chunks: Sequence[ChunkText]) -> Extraction:
        if len(chunks) > MAX_CHUNKS:
            raise ValidationError(
                f"an item has at most {MAX_CHUNKS} chunks to extract from, not {len(chunks)}",
                field="chunks",
            )
        raw = spacy_ner.entity_spans([c.text for c in chunks])
        passages = [Passage(c.text) for c in chunks]
        spans: list[list[Span]] = []
        definitions: list[AcronymDefinition] = []
        for chunk, p, found in zip(chunks, passages, raw, strict=True):
            chunk_spans, defined = _chunk_spans(p, found, chunk.chunk_id)
            spans.append(chunk_spans)
            definitions.extend(defined)
        harmonise(passages, spans)
        mentions = [
            m
            for chunk, ss in zip(chunks, spans, strict=True)
            for m in (_mention(chunk, s) for s in ss)
            if m is not None
        ]
        return Extraction(_without_overlaps(mentions), tuple(dict.fromkeys(definitions)))


def _mention(chunk: ChunkText, s: Span) -> Mention | None:
    quotation = chunk.text[s.start : s.end]
    name = clean_name(quotation)
    key = normalise_name(name)
    if not key or not any(c.isalpha() for c in key):
        return None
    return Mention(
        chunk_id=chunk.chunk_id,
        start=chunk.base_offset + s.start,
        end=chunk.base_offset + s.end,
        quotation=quotation,
        entity_type=s.type,
        name=name,
        normalised_key=key,
        extractor=Extractor.DETERMINISTIC,
        extractor_version=EXTRACTOR_VERSION,
    )


def _without_overlaps(mentions: list[Mention]) -> tuple[Mention, ...]:
    """Overlapping chunks report a name twice, or cut at one chunk's edge: of overlapping
    mentions keep the longest (the earlier chunk's on a tie)."""
    ordered = sorted(mentions, key=lambda m: m.start)  # stable: chunk order on a tie
    kept: list[Mention] = []
    cluster: list[Mention] = []
    cluster_end = -1
    for m in [*ordered, None]:
        if m is not None and m.start < cluster_end:
            cluster.append(m)
            cluster_end = max(cluster_end, m.end)
            continue
        kept.extend(_longest_first(cluster))
        if m is not None:
            cluster, cluster_end = [m], m.end
    return tuple(sorted(kept, key=lambda m: (m.start, m.end)))


def _longest_first(cluster: list[Mention]) -> list[Mention]:
    if len(cluster) <= 1:
        return cluster
    kept: list[Mention] = []
    for m in sorted(cluster, key=lambda m: -(m.end - m.start)):
        if all(m.end <= k.start or k.end <= m.start for k in kept):
            kept.append(m)
    return kept
