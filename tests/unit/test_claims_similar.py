"""Statement claims and the subject-free rules between similar statements (ADR 52): a
paraphrase with the opposite direction is found without a shared entity; unrelated
statements, statements about different named subjects and pairs the subject index compares
are not paired."""

from __future__ import annotations

from relata.claims.contradict import ConflictFacet
from relata.claims.extract import ClaimDraft, Subject, claim_from_sentence
from relata.claims.facets import extract_facets
from relata.claims.sentences import split_sentences
from relata.claims.similar import (
    STATEMENT_SUBJECT_PREFIX,
    is_entity_subject,
    lookup_terms,
    pair_subject,
    similar_contradictions,
    statement_claims,
    statement_label,
    statement_subject,
)


def statements(item_id: str, text: str) -> list[ClaimDraft]:
    return statement_claims(item_id, text, taken=())


def about(item_id: str, text: str, name: str) -> ClaimDraft:
    """The claim one sentence makes about an entity named in it."""
    [sentence] = split_sentences(text)
    at = text.index(name)
    subject = Subject(name, name.casefold(), at, at + len(name))
    draft = claim_from_sentence(
        item_id, sentence, subject, facets=extract_facets(text, subject_end=at + len(name))
    )
    assert draft is not None
    return draft


LOWERS = "Regular exercise lowers the risk of heart disease in older adults."
RAISES = "In older adults, regular exercise raises the risk of heart disease."


def test_a_sentence_with_a_direction_or_a_negation_and_no_entity_is_a_statement_claim() -> None:
    text = (
        f"{LOWERS} The survey ran for two years. "
        "Smoking did not change the outcome of the trial. To determine whether diet matters."
    )
    drafts = statements("a", text)
    assert [d.statement for d in drafts] == [
        LOWERS,
        "Smoking did not change the outcome of the trial.",
    ]
    for d in drafts:
        assert d.subject.key.startswith(STATEMENT_SUBJECT_PREFIX)
        assert not is_entity_subject(d.subject.key)
        assert text[d.start : d.end] == d.quotation
    # A sentence that has a claim already (an entity's, a repeat's) gets no second one.
    taken = {(drafts[0].start, drafts[0].end)}
    assert [d.statement for d in statement_claims("a", text, taken)] == [drafts[1].statement]


def test_the_same_sentence_in_two_items_has_one_statement_subject() -> None:
    assert statement_subject(LOWERS) == statement_subject(
        "regular  exercise LOWERS the risk of heart disease in older adults"
    )
    assert statement_subject(LOWERS) != statement_subject(RAISES)
    assert statement_label("word " * 40).endswith("…") and len(statement_label("word " * 40)) <= 80


def test_a_paraphrase_with_the_opposite_direction_is_found_without_a_shared_entity() -> None:
    [mine] = statements("claim", RAISES)
    [theirs] = statements("abstract", LOWERS)
    [(subject, name, c)] = similar_contradictions([mine], [theirs], canonical={})
    assert c.facet is ConflictFacet.DIRECTION
    assert {c.first.item_id, c.second.item_id} == {"claim", "abstract"}
    spans = {RAISES[c.first_span[0] : c.first_span[1]], LOWERS[c.second_span[0] : c.second_span[1]]}
    assert spans == {"raises", "lowers"}
    # Whichever item comes second, the pair is recorded under the same subject.
    [(again, _, _)] = similar_contradictions([theirs], [mine], canonical={})
    assert subject == again == pair_subject(mine, theirs)[0]
    assert subject.startswith(STATEMENT_SUBJECT_PREFIX) and name


def test_a_denial_of_a_similar_statement_is_found() -> None:
    [mine] = statements("claim", "Vitamin supplements do not reduce the incidence of fractures.")
    [theirs] = statements(
        "abstract", "In this cohort vitamin supplements reduced the incidence of hip fractures."
    )
    [(_, _, c)] = similar_contradictions([mine], [theirs], canonical={})
    assert c.facet is ConflictFacet.POLARITY


def test_unrelated_statements_are_not_paired() -> None:
    [mine] = statements("claim", RAISES)
    others = statements(
        "other",
        "Heavy rainfall increases the flow of the river in spring. "
        "Regular exercise increases sleep quality in teenagers. "
        "Regular exercise lowers the risk of heart disease in older adults? ",
    )
    assert len(others) == 2  # the question asserts nothing: no claim
    assert similar_contradictions([mine], others, canonical={}) == []
    # Nor a statement with itself, or with the same item's other sentences.
    [same] = statements("claim", LOWERS)
    assert similar_contradictions([mine], [same], canonical={}) == []


def test_statements_about_different_named_subjects_are_not_compared() -> None:
    aspirin = about("a", "Aspirin raises the risk of bleeding in older patients.", "Aspirin")
    warfarin = about("b", "Warfarin lowers the risk of bleeding in older patients.", "Warfarin")
    assert similar_contradictions([aspirin], [warfarin], canonical={}) == []
    # Naming the other subject in one sentence is not enough: both must name both.
    unlike = about(
        "c", "Warfarin, unlike Aspirin, lowers the risk of bleeding in older patients.", "Warfarin"
    )
    assert similar_contradictions([aspirin], [unlike], canonical={}) == []
    # A statement claim (no entity found in it) is compared, and the entity names the pair.
    [plain] = statements("d", "In older patients aspirin lowers the risk of bleeding.")
    [(subject, name, c)] = similar_contradictions([aspirin], [plain], canonical={})
    assert (subject, name, c.facet) == ("aspirin", "Aspirin", ConflictFacet.DIRECTION)


def test_a_pair_about_one_subject_group_is_left_to_the_subject_index() -> None:
    one = about("a", "Aspirin raises the risk of bleeding in older patients.", "Aspirin")
    two = about("b", "Aspirin lowers the risk of bleeding in older patients.", "Aspirin")
    assert similar_contradictions([one], [two], canonical={}) == []
    # Two names of one thing, each sentence naming both: compared here, unless a person
    # confirmed the alias, which makes them one subject group (the subject index's pair).
    named = about("c", "Aspirin (ASA) raises the risk of bleeding in older patients.", "Aspirin")
    alias = about("d", "ASA, or aspirin, lowers the risk of bleeding in older patients.", "ASA")
    assert similar_contradictions([named], [alias], canonical={}) != []
    assert similar_contradictions([named], [alias], canonical={"asa": "aspirin"}) == []


def test_a_pair_recorded_by_another_rule_is_not_recorded_again() -> None:
    [mine] = statements("claim", RAISES)
    [theirs] = statements("abstract", LOWERS)
    known = [frozenset({mine.dedupe_key, theirs.dedupe_key})]
    assert similar_contradictions([mine], [theirs], canonical={}, known=known) == []


def test_the_lookup_takes_the_longest_words_of_comparable_claims() -> None:
    drafts = statements("a", f"{LOWERS} Smoking did not change the outcome of the trial.")
    plain = claim_from_sentence(
        "a",
        split_sentences("Cardiovascular epidemiology matters.")[0],
        Subject("x", "~s:x", 0, 0),
    )
    assert plain is not None
    terms = lookup_terms([*drafts, plain], n=5)
    assert terms == ["exercise", "regular", "disease", "smoking", "outcome"]
    assert "cardiovascular" not in lookup_terms([*drafts, plain])  # no cue: not looked up
    assert lookup_terms([plain]) == []
