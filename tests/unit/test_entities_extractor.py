"""The deterministic extractor: spaCy's small NER with rules around it (ADR 15).

These tests run the real model (loaded once for the module, about two seconds).
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relata.chunking import chunk_document
from relata.domain.errors import ValidationError
from relata.domain.models import EntityType
from relata.entities.aliases import AliasReason, NamedEntity, propose_aliases
from relata.entities.deterministic import EXTRACTOR_VERSION, MAX_CHUNKS, DeterministicExtractor
from relata.entities.mentions import ChunkText, Extraction, Extractor, Mention
from relata.entities.spacy_ner import MAX_WINDOW_CHARS, windows
from relata.parsing import parse, sniff
from relata.seed import demo_documents

ORG, PER, LOC, TERM = (
    EntityType.ORGANISATION,
    EntityType.PERSON,
    EntityType.LOCATION,
    EntityType.TERM,
)
extractor = DeterministicExtractor()


def _extract(text: str) -> Extraction:
    return extractor.extract([ChunkText("c1", text, 0)])


def _found(text: str) -> set[tuple[str, EntityType]]:
    return {(m.quotation, m.entity_type) for m in _extract(text).mentions}


def _demo_items() -> list[tuple[str, str, list[ChunkText]]]:
    """(filename, item text, chunks) of the demo corpus, parsed and chunked as ingestion
    does with the default chunk settings."""
    items = []
    for doc in demo_documents():
        parsed = parse(doc.data, sniff(doc.data, filename=doc.filename))
        drafts = chunk_document(parsed, target_chars=1000, overlap_chars=200)
        chunks = [ChunkText(f"{doc.filename}#{d.sequence}", d.text, d.start) for d in drafts]
        items.append((doc.filename, parsed.text, chunks))
    return items


def test_demo_corpus_names_are_found_at_their_offsets() -> None:
    found: dict[str, set[EntityType]] = {}
    for _, text, chunks in _demo_items():
        for m in extractor.extract(chunks).mentions:
            assert text[m.start : m.end] == m.quotation
            found.setdefault(m.name, set()).add(m.entity_type)
    assert ORG in found["Kestrel Marine Systems"]
    assert ORG in found["Meridian Tidal Institute"]
    assert PER in found["Ines Vaughan"]
    assert "Sabrewing Array" in found
    assert found["Tomas Reyes"] == {PER}
    assert LOC in found["Port Halloran"]


def test_demo_corpus_gives_kestrel_as_an_alias_candidate() -> None:
    names: dict[tuple[EntityType, str], NamedEntity] = {}
    for _, _, chunks in _demo_items():
        for m in extractor.extract(chunks).mentions:
            key = (m.entity_type, m.normalised_key)
            names.setdefault(key, NamedEntity(f"{key[0]}:{key[1]}", m.name, m.entity_type))
    candidates = propose_aliases(list(names.values()))
    pairs = {(c.entity_id, c.alias_id): c.reason for c in candidates}
    kestrel = ("organisation:kestrel", "organisation:kestrel marine systems")
    assert pairs[kestrel] is AliasReason.PREFIX


def test_every_mention_carries_chunk_extractor_and_version() -> None:
    text = "Dr. Ines Vaughan founded the Meridian Tidal Institute in Port Halloran."
    [chunk] = [ChunkText("chunk-7", text, 0)]
    mentions = extractor.extract([chunk]).mentions
    assert mentions
    for m in mentions:
        assert m.chunk_id == "chunk-7"
        assert m.extractor is Extractor.DETERMINISTIC
        assert m.extractor_version == EXTRACTOR_VERSION == extractor.version
        assert "spacy-3.8" in m.extractor_version


def test_span_edges_leave_out_articles_possessives_and_titles() -> None:
    found = _found(
        "The European Commission said on Monday that Councillor Aileen Marsh and "
        "Dr. Ines Vaughan's team had met the Harbour Master Ruth Lindqvist."
    )
    assert ("European Commission", ORG) in found
    assert ("Aileen Marsh", PER) in found
    assert ("Ines Vaughan", PER) in found
    assert ("Ruth Lindqvist", PER) in found


def test_a_possessive_joins_only_a_name_building_word() -> None:
    found = _found(
        "Britain's Prince Charles met Alphabet's Google staff at St Mary's Hall. "
        "The Oakfield Residents' Association wrote to them."
    )
    assert ("Britain", LOC) in found
    assert ("Charles", PER) in found
    assert ("Alphabet", ORG) in found
    assert ("Google", ORG) in found
    assert ("St Mary's Hall", LOC) in found
    assert ("Oakfield Residents' Association", ORG) in found


def test_shapes_type_names() -> None:
    found = _found(
        "Shares of Ostrander Mining Ltd rose. The Ministry of Health met officials from "
        "the University of Edinburgh on Oldham Street near Mount Rainier."
    )
    assert ("Ostrander Mining Ltd", ORG) in found
    assert ("Ministry of Health", ORG) in found
    assert ("University of Edinburgh", ORG) in found
    assert ("Oldham Street", LOC) in found
    assert ("Mount Rainier", LOC) in found


def test_a_defined_acronym_gives_the_name_and_its_acronym() -> None:
    text = (
        "The Meridian Tidal Institute (MTI) monitors the array. MTI staff logged 2,300 "
        "hours. Interleukin-6 (IL-6) rose."
    )
    extraction = _extract(text)
    found = {(m.quotation, m.entity_type) for m in extraction.mentions}
    assert ("Meridian Tidal Institute", ORG) in found
    assert [m.entity_type for m in extraction.mentions if m.quotation == "MTI"] == [ORG, ORG]
    definitions = {(a.acronym, a.expansion, a.entity_type) for a in extraction.acronyms}
    assert ("MTI", "Meridian Tidal Institute", ORG) in definitions
    assert ("IL-6", "Interleukin-6", TERM) in definitions


def test_tokenised_newswire_text() -> None:
    text = (
        "NEW DELHI ( Reuters ) - India 's main opposition party said on Monday that the "
        "Meridian Tidal Institute ( MTI ) had no say . MTI staff agreed ."
    )
    extraction = _extract(text)
    found = {(m.quotation, m.entity_type) for m in extraction.mentions}
    assert {("NEW DELHI", LOC), ("India", LOC), ("Meridian Tidal Institute", ORG)} <= found
    assert [m.entity_type for m in extraction.mentions if m.quotation == "MTI"] == [ORG, ORG]
    assert [(a.acronym, a.expansion) for a in extraction.acronyms] == [
        ("MTI", "Meridian Tidal Institute")
    ]


@pytest.mark.parametrize(
    "term", ["IL-6", "BRCA1", "TP53", "SARS-CoV-2", "SB-04", "HEK293T", "p53", "metformin"]
)
def test_technical_terms(term: str) -> None:
    found = _found(f"The study measured {term} in 412 participants recruited in 2019.")
    assert (term, TERM) in found


def test_dates_numbers_and_money_are_never_entities() -> None:
    text = (
        "On 14 March 2019, at 20:15, the company paid $1.3 billion (about 9,000 euros "
        "each) for 12.5 percent, the second time since June 2021 and last year."
    )
    assert [m.quotation for m in _extract(text).mentions] == []


def test_section_headings_in_capitals_are_structure_not_names() -> None:
    text = (
        "BACKGROUND Microarrays were tested at the Mayo Clinic. MAIN OUTCOME MEASURES The "
        "odds were 4.69 (95% CI, 1.99-11.07) in Boston. RESULTS AND DISCUSSION NASA agreed. "
        "CONCLUSIONS The BBC reported it."
    )
    found = _found(text)
    assert {("Mayo Clinic", ORG), ("Boston", LOC), ("NASA", ORG), ("BBC", ORG)} <= found
    headings = {"BACKGROUND", "MAIN", "MAIN OUTCOME MEASURES", "CI", "RESULTS", "CONCLUSIONS"}
    assert not {q for q, _ in found} & headings


def test_a_heading_is_cut_from_the_name_after_it() -> None:
    # spaCy runs a heading into the sentence after it.
    found = _found("RESULTS Detection rates fell. BACKGROUND The DATA PROTECTION BOARD agreed.")
    assert {q for q, _ in found} == {"DATA PROTECTION BOARD"}


def test_a_heading_word_in_a_name_keeps_the_name() -> None:
    # Only a span made of heading words alone is structure: these are names.
    found = _found("The MAIN STREET TRUST met the RESULTS CONSORTIUM and the DESIGN COUNCIL.")
    assert {
        ("MAIN STREET TRUST", ORG),
        ("RESULTS CONSORTIUM", ORG),
        ("DESIGN COUNCIL", ORG),
    } <= found


def test_a_surname_after_the_full_name_is_the_same_person() -> None:
    text = (
        "Tomas Reyes, chief executive of Kestrel Marine Systems, presented the report. "
        "Reyes said the turbines were quiet. Later, Mr Reyes left. Kestrel has no say."
    )
    mentions = _extract(text).mentions
    assert [m.entity_type for m in mentions if m.quotation == "Reyes"] == [PER, PER]
    assert [m.entity_type for m in mentions if m.quotation == "Kestrel"] == [ORG]


def test_a_capitals_headline_keeps_names_the_story_confirms() -> None:
    text = (
        "GOLF - MCILROY LEADS BY TWO IN DUBAI\n\nDUBAI 2024-01-19\n\n"
        "Rory McIlroy shot a seven-under-par 65 on Friday."
    )
    found = _found(text)
    assert ("MCILROY", PER) in found
    assert ("DUBAI", LOC) in found
    assert not any(q in ("GOLF", "LEADS", "TWO") for q, _ in found)


def test_offsets_map_chunks_into_the_item_text() -> None:
    item = (
        "Kestrel Marine Systems operates the Sabrewing Array.\n\n"
        "Dr. Ines Vaughan of the Meridian Tidal Institute counts seals."
    )
    cut = item.index("Dr.")
    # Overlapping chunks, as the chunker makes them: the overlap is read twice.
    chunks = [ChunkText("a", item[: cut + 20], 0), ChunkText("b", item[cut - 10 :], cut - 10)]
    mentions = extractor.extract(chunks).mentions
    for m in mentions:
        assert item[m.start : m.end] == m.quotation
    spans = [(m.start, m.end) for m in mentions]
    assert spans == sorted(set(spans))
    assert not any(a[1] > b[0] for a, b in pairwise(spans))
    by_quote = {m.quotation: m.chunk_id for m in mentions}
    assert by_quote["Kestrel Marine Systems"] == "a"
    assert by_quote["Meridian Tidal Institute"] == "b"
    assert by_quote["Ines Vaughan"] == "a"  # in both chunks: the first chunk's is kept


def test_extraction_is_deterministic_and_safe_from_threads() -> None:
    texts = [
        f"Dr. Ines Vaughan met Tomas Reyes of Kestrel Marine Systems in Port Halloran {i}."
        for i in range(12)
    ]
    sequential = [_extract(t) for t in texts]
    with ThreadPoolExecutor(max_workers=4) as pool:
        threaded = list(pool.map(_extract, texts))
    assert threaded == sequential


def test_bad_chunks_are_refused_with_a_reason() -> None:
    with pytest.raises(ValidationError, match="negative base offset"):
        ChunkText("c", "text", -1)
    with pytest.raises(ValidationError, match="at most"):
        extractor.extract([ChunkText(str(i), "", i) for i in range(MAX_CHUNKS + 1)])


def test_empty_input_gives_no_mentions() -> None:
    assert extractor.extract([]) == Extraction(())
    assert extractor.extract([ChunkText("c", "", 0), ChunkText("d", "   \n", 0)]) == Extraction(())


def test_importing_the_extractor_does_not_import_spacy() -> None:
    code = (
        "import sys, relata, relata.entities, relata.entities.deterministic, "
        "relata.entities.bench, relata.entities.aliases; "
        "sys.exit(1 if 'spacy' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False, timeout=60).returncode == 0


_VOCABULARY = """the Dr. Mr Kestrel Marine Systems Ines Vaughan's of University Edinburgh
(MTI) IL-6 BRCA1 said on Monday 2019 $1.3 “Sabrewing Array” Port Halloran SOCCER - LONDON &
Ltd , . Zürich ＫＥＳＴＲＥＬ O’Brien e\u0301 🙂"""
_WORDS = st.sampled_from([*_VOCABULARY.split(), "\n", "\n\n"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_WORDS, max_size=40), st.integers(min_value=0, max_value=500))
def test_every_quotation_is_the_text_at_its_offsets(words: list[str], base: int) -> None:
    text = " ".join(words)
    mentions: tuple[Mention, ...] = extractor.extract([ChunkText("c", text, base)]).mentions
    item = " " * base + text
    previous_end = -1
    for m in mentions:
        assert item[m.start : m.end] == m.quotation
        assert m.quotation and m.quotation == m.quotation.strip()
        assert m.normalised_key
        assert m.start >= previous_end
        previous_end = m.end


def test_long_texts_are_read_in_windows_that_cover_them() -> None:
    text = ("word " * 9 + "\n") * 500 + "tail without a break " * 300
    pieces = list(windows(text, limit=1000))
    assert "".join(piece for _, piece in pieces) == text
    assert all(len(piece) <= 1000 for _, piece in pieces)
    assert all(text[offset : offset + len(piece)] == piece for offset, piece in pieces)
    assert all(piece.endswith(("\n", " ")) for _, piece in pieces[:-1])


def test_a_name_beyond_the_first_window_keeps_its_offsets() -> None:
    filler = "The turbines were inspected and the results were recorded.\n" * 400
    text = filler + "Dr. Ines Vaughan founded the Meridian Tidal Institute."
    assert len(filler) > MAX_WINDOW_CHARS
    mentions = _extract(text).mentions
    by_quote = {m.quotation: m for m in mentions}
    assert by_quote["Ines Vaughan"].start == len(filler) + 4
    assert by_quote["Meridian Tidal Institute"].entity_type is ORG
