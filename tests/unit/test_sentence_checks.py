"""Answer sentences checked against the excerpts they cite (relata.claims.support and
relata.search.sentence_checks), with the real deterministic entity extractor.

Table-driven: each row is a sentence, the excerpt it cites and the verdict a careful reader
would give. Restating the excerpt (same numbers, dates, names, polarity) is supported, with
the span of the supporting sentence; a different number, date, name or polarity is not, and
the facet is named.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from relata.analysis.answer import find_markers
from relata.claims.support import SupportFacet
from relata.domain.errors import ValidationError
from relata.entities.deterministic import DeterministicExtractor
from relata.search.sentence_checks import (
    Evidence,
    SentenceCheck,
    SentenceChecker,
    SentenceVerdict,
    counts,
)

checker = SentenceChecker(DeterministicExtractor())

REGISTER = "The Sabrewing array at Halloran Sound has twelve turbines, installed in 2019."
RELEASE = (
    "PORT HALLORAN, 14 March 2019. Halloran Tidal Energy announced today that the Sabrewing "
    "Array has entered commercial operation. The array has twelve turbines with a capacity "
    "of 30 MW."
)
MINUTES = (
    "The Sabrewing Array was first connected to the grid in June 2021. The council did not "
    "approve the expansion of the array."
)
SEALS = "A survey in 2020 counted 143 grey seals on the sandbanks of Halloran Sound."
TRIAL = "In the trial the drug reduced the risk of stroke, and the mean ratio was 3.5."
TWO_DATES = "The array began operating in March 2019. The array was inspected in June 2021."


def check_one(sentence: str, excerpt: str, title: str = "Source") -> SentenceCheck:
    """Check ``sentence [S1]`` against ``excerpt`` supplied as S1."""
    answer = f"{sentence.removesuffix('.')} [S1]."
    markers, _ = find_markers(answer, ["S1"])
    [check] = checker.check(answer, markers, {"S1": Evidence("S1", excerpt, title)})
    assert answer[check.start : check.end] == check.text == answer
    assert check.citations == ("S1",)
    return check


# (sentence, excerpt, the supporting sentence of the excerpt)
SUPPORTED = [
    pytest.param(REGISTER, REGISTER, REGISTER, id="verbatim"),
    pytest.param(
        "The Sabrewing array has 12 turbines, installed in 2019.", REGISTER, REGISTER,
        id="digits-for-number-words",
    ),
    pytest.param(
        "The Sabrewing Array entered commercial operation in March 2019.", RELEASE,
        RELEASE[: RELEASE.index(" The array")], id="less-precise-date-than-the-dateline",
    ),
    pytest.param(
        "Halloran Tidal Energy Ltd announced on 14 March 2019 that the array had entered "
        "commercial operation.", RELEASE, RELEASE[: RELEASE.index(" The array")],
        id="same-day-and-company-suffix-forgiven",
    ),
    pytest.param(
        "The array has twelve turbines with a capacity of 30 megawatts.", RELEASE,
        RELEASE[RELEASE.index("The array") :], id="unit-spelled-out",
    ),
    pytest.param(
        "The array has twelve turbines, each rated at 2.5 MW, for a total of 30 MW.",
        "The array has twelve turbines, each rated at 2.5 MW, for a total capacity of 30 MW.",
        "The array has twelve turbines, each rated at 2.5 MW, for a total capacity of 30 MW.",
        id="a-unit-is-no-name",
    ),
    pytest.param(
        "Power reaches the grid through one export cable.",
        "Power reaches the grid through a single export cable.",
        "Power reaches the grid through a single export cable.", id="one-is-no-count",
    ),
    pytest.param(
        "The seal colony has grown since the array was built.",
        "The seal colony has grown since the array was built, and no seal injuries have "
        "been linked to the turbines.",
        "The seal colony has grown since the array was built, and no seal injuries have "
        "been linked to the turbines.", id="a-negation-of-something-else",
    ),
    pytest.param(
        "The 2020 survey counted more than 100 seals at Halloran Sound.", SEALS, SEALS,
        id="a-bound-implied-by-the-count",
    ),
    pytest.param(
        "The survey counted about 140 grey seals at Halloran Sound in 2020.", SEALS, SEALS,
        id="about-a-rounded-count",
    ),
    pytest.param(
        "In the trial the mean ratio was 3.5.", TRIAL, TRIAL, id="bare-number-restated",
    ),
    pytest.param(
        "The drug did not increase the risk of stroke in the trial.", TRIAL, TRIAL,
        id="a-denial-that-agrees-with-a-reversal",
    ),
    pytest.param(
        "The council did not approve the expansion of the array.", MINUTES,
        MINUTES[MINUTES.index("The council") :], id="negation-restated",
    ),
    pytest.param(
        "The array has twelve turbines and began operating in March 2019.",
        "The array began operating in March 2019. The array has twelve turbines.",
        "The array began operating in March 2019.", id="two-facts-from-two-sentences",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("sentence", "excerpt", "span"), SUPPORTED)
def test_a_restatement_is_supported_with_the_span_of_its_sentence(
    sentence: str, excerpt: str, span: str
) -> None:
    check = check_one(sentence, excerpt)
    assert check.verdict is SentenceVerdict.SUPPORTED, check.reason
    assert check.facet is None and check.reason is None and check.claimed is None
    assert check.span is not None and check.span.ref == "S1"
    assert excerpt[check.span.start : check.span.end] == check.span.text == span


# (sentence, excerpt, facet, the sentence's words without support)
UNSUPPORTED = [
    pytest.param(
        "The Sabrewing array at Halloran Sound has six turbines, installed in 2019.", REGISTER,
        SupportFacet.QUANTITY, "six turbines", id="another-count",
    ),
    pytest.param(
        "The Sabrewing array at Halloran Sound has twelve turbines, installed in 2018.",
        REGISTER, SupportFacet.DATE, "in 2018", id="another-year",
    ),
    pytest.param(
        "The Sabrewing Array entered commercial operation in June 2021.", RELEASE,
        SupportFacet.DATE, "June 2021", id="another-month-and-year",
    ),
    pytest.param(
        "The Sabrewing Array was first connected to the grid on 3 June 2021.", MINUTES,
        SupportFacet.DATE, "3 June 2021", id="a-day-the-source-does-not-give",
    ),
    pytest.param(
        "The array began operating in June 2021.", TWO_DATES, SupportFacet.DATE, "June 2021",
        id="a-date-borrowed-from-another-sentence",
    ),
    pytest.param(
        "The array has twelve turbines with a capacity of 40 MW.", RELEASE,
        SupportFacet.QUANTITY, "40 MW", id="another-capacity",
    ),
    pytest.param(
        "The array has twelve turbines with a capacity of 30 GW.", RELEASE,
        SupportFacet.QUANTITY, "30 GW", id="another-unit",
    ),
    pytest.param(
        "The survey counted 143 grey seals in 2020.", "A survey in 2020 counted more than 100 "
        "grey seals.", SupportFacet.QUANTITY, "143 grey seals", id="more-precise-than-a-bound",
    ),
    pytest.param(
        "In the trial the mean ratio was 4.5.", TRIAL, SupportFacet.NUMBER, "4.5",
        id="another-bare-number",
    ),
    pytest.param(
        "Kestrel Energy runs the Sabrewing Array, which has twelve turbines.", RELEASE,
        SupportFacet.ENTITY, "Kestrel Energy", id="a-name-the-source-does-not-give",
    ),
    pytest.param(
        "The council approved the expansion of the array.", MINUTES, SupportFacet.POLARITY,
        "approved", id="affirms-what-the-source-denies",
    ),
    pytest.param(
        "The Sabrewing Array was not connected to the grid in June 2021.", MINUTES,
        SupportFacet.POLARITY, "not", id="denies-what-the-source-states",
    ),
    pytest.param(
        "In the trial the drug increased the risk of stroke.", TRIAL, SupportFacet.DIRECTION,
        "increased", id="the-opposite-direction",
    ),
    pytest.param(
        "The moon is made of green cheese.", REGISTER, SupportFacet.CONTENT, None,
        id="about-something-else",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("sentence", "excerpt", "facet", "claimed"), UNSUPPORTED)
def test_a_sentence_the_excerpt_does_not_state_is_unsupported_naming_the_facet(
    sentence: str, excerpt: str, facet: SupportFacet, claimed: str | None
) -> None:
    check = check_one(sentence, excerpt)
    assert check.verdict is SentenceVerdict.UNSUPPORTED
    assert check.facet is facet, check.reason
    assert check.reason
    if claimed is None:
        assert check.claimed is None
    else:
        assert check.claimed is not None
        assert check.text[check.claimed[0] : check.claimed[1]] == claimed
    if check.span is not None:
        assert excerpt[check.span.start : check.span.end] == check.span.text


def test_the_sentence_that_says_otherwise_is_the_span_of_an_unsupported_date() -> None:
    check = check_one("The array began operating in June 2021.", TWO_DATES)
    assert check.span is not None and check.span.text == "The array began operating in March 2019."
    assert "another date" in (check.reason or "")


def test_a_name_in_the_source_title_is_supported() -> None:
    check = check_one(
        "Kestrel Energy has twelve turbines at the array.",
        "The array has twelve turbines.",
        title="Kestrel Energy annual report",
    )
    assert check.verdict is SentenceVerdict.SUPPORTED, check.reason


# ------------------------------------------------------------------ citations per sentence
EVIDENCE = {
    "S1": Evidence("S1", REGISTER, "Turbine register"),
    "S2": Evidence("S2", MINUTES, "Council minutes"),
}


def check(answer: str, fallback: tuple[str, ...] = ()) -> tuple[SentenceCheck, ...]:
    markers, _ = find_markers(answer, EVIDENCE)
    checks = checker.check(answer, markers, EVIDENCE, fallback)
    for c in checks:
        assert answer[c.start : c.end] == c.text
    return checks


def test_each_sentence_is_checked_against_its_own_citations_and_one_without_is_uncited() -> None:
    answer = (
        "The Sabrewing array has twelve turbines [S1]. It was connected to the grid in June 2021 "
        "[S2]. It was connected to the grid in June 2021 [S1]. Nobody knows why."
    )
    checks = check(answer)
    assert [c.verdict for c in checks] == [
        SentenceVerdict.SUPPORTED,
        SentenceVerdict.SUPPORTED,
        SentenceVerdict.UNSUPPORTED,
        SentenceVerdict.UNCITED,
    ]
    assert [c.citations for c in checks] == [("S1",), ("S2",), ("S1",), ()]
    assert checks[1].span is not None and checks[1].span.ref == "S2"
    assert checks[2].facet is SupportFacet.DATE  # true, but not in the excerpt it cites
    assert checks[3].text == "Nobody knows why." and checks[3].span is None
    assert counts(checks) == {
        SentenceVerdict.SUPPORTED: 2,
        SentenceVerdict.UNSUPPORTED: 1,
        SentenceVerdict.UNCITED: 1,
    }


def test_a_marker_after_the_full_stop_belongs_to_the_sentence_before_it() -> None:
    answer = "The array has twelve turbines. [S1] The council did not approve the expansion. [S2]"
    first, second = check(answer)
    assert first.text == "The array has twelve turbines. [S1]" and first.citations == ("S1",)
    assert second.citations == ("S2",) and second.verdict is SentenceVerdict.SUPPORTED


def test_a_sentence_reporting_two_sources_that_disagree_is_supported_by_both() -> None:
    [c] = check(
        "The register says the array was installed in 2019 [S1], while the minutes say it "
        "was first connected to the grid in June 2021 [S2]."
    )
    assert c.citations == ("S1", "S2") and c.verdict is SentenceVerdict.SUPPORTED, c.reason


def test_one_marker_may_cite_two_sources() -> None:
    [c] = check("The array has twelve turbines and joined the grid in June 2021 [S1, S2].")
    assert c.citations == ("S1", "S2") and c.verdict is SentenceVerdict.SUPPORTED, c.reason


def test_without_markers_a_single_sentence_has_the_answer_citations() -> None:
    [c] = check("The Sabrewing array at Halloran Sound has twelve turbines.", ("S1",))
    assert c.citations == ("S1",) and c.verdict is SentenceVerdict.SUPPORTED


def test_without_markers_one_cited_source_covers_every_sentence() -> None:
    checks = check("The array has twelve turbines. They were installed in 2018.", ("S1",))
    assert [c.verdict for c in checks] == [SentenceVerdict.SUPPORTED, SentenceVerdict.UNSUPPORTED]
    assert checks[1].facet is SupportFacet.DATE


def test_without_markers_several_sentences_citing_several_sources_are_uncited() -> None:
    checks = check("The array has twelve turbines. It joined the grid in 2021.", ("S1", "S2"))
    assert [c.verdict for c in checks] == [SentenceVerdict.UNCITED, SentenceVerdict.UNCITED]


def test_a_marker_naming_only_an_unsupplied_ref_cites_nothing() -> None:
    [c] = check("The array has twelve turbines [S9].")
    assert c.verdict is SentenceVerdict.UNCITED and c.citations == ()


def test_a_ref_no_excerpt_was_supplied_for_is_refused() -> None:
    [marker] = find_markers("x [S3].", ["S3"])[0]
    with pytest.raises(ValidationError, match="'S3'") as info:
        checker.check("x [S3].", [marker], EVIDENCE)
    assert info.value.field == "ref"


PARTS = st.sampled_from(
    [
        "The array has twelve turbines",
        "It joined the grid in June 2021",
        "The council did not approve it",
        "Seals: 143",
        " [S1]",
        " [S2]",
        "[S1, S2]",
        " [S9]",
        ". ",
        "\n\n",
        " ",
    ]
)


@settings(max_examples=60, deadline=None)
@given(st.lists(PARTS, min_size=1, max_size=12))
def test_every_sentence_gets_one_verdict_at_offsets_that_slice_the_answer(
    parts: list[str],
) -> None:
    answer = "".join(parts).strip()
    assume(any(ch.isalnum() for ch in re.sub(r"\[[^\]]*\]", "", answer)))
    checks = check(answer, ("S1", "S2"))
    assert sum(counts(checks).values()) == len(checks) >= 1
    previous_end = 0
    for c in checks:
        assert previous_end <= c.start < c.end
        previous_end = c.end
        assert (c.verdict is SentenceVerdict.UNCITED) == (not c.citations)
        assert (c.facet is not None) == (c.verdict is SentenceVerdict.UNSUPPORTED)
        if c.span is not None:
            excerpt = EVIDENCE[c.span.ref].text
            assert c.span.ref in c.citations
            assert excerpt[c.span.start : c.span.end] == c.span.text
        if c.claimed is not None:
            assert c.start <= c.claimed[0] < c.claimed[1] <= c.end
