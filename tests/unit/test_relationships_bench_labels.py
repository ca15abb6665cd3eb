"""How `relata bench relationships` judges a claim's `contradicts` link from SciFact's labels
(claim item -> cited abstract -> SUPPORT | CONTRADICT | NOINFO)."""

from __future__ import annotations

import pytest

from relata.cli.benchmarks.relationships import contradicts_kind

LABELS = {
    "c1": {"d1": "SUPPORT", "d2": "NOINFO"},
    "c2": {"d1": "CONTRADICT"},
    "c3": {"d1": "SUPPORT"},
    "c4": {"d2": "NOINFO"},
    "c5": {"d3": "CONTRADICT"},
}
CLAIMS = {*LABELS, "c6"}  # c6: a claim whose abstracts are not in the corpus


@pytest.mark.parametrize(
    ("claim", "other", "kind"),
    [
        ("c2", "d1", "contradict_pair"),
        ("c1", "d1", "wrong_pair"),
        ("c1", "d2", "wrong_pair"),  # NOINFO is a negative too
        ("c1", "d3", "uncited_abstract"),
        ("c6", "d1", "uncited_abstract"),
        ("c1", "c2", "claims_opposed"),
        ("c2", "c1", "claims_opposed"),
        ("c1", "c3", "claims_both_supported"),
        ("c1", "c4", "claims_unlabelled"),  # both NOINFO on d2: the labels do not say
        ("c2", "c5", "claims_unlabelled"),  # no abstract in common
        ("c1", "c6", "claims_unlabelled"),
    ],
)
def test_a_contradicts_link_is_judged_by_the_labels(claim: str, other: str, kind: str) -> None:
    assert contradicts_kind(LABELS, CLAIMS, claim, other) == kind
