"""What the entity leg looks up for a query: its word n-grams' keys, never a run of function
words as the sentence writes them (they would match acronyms found in other documents)."""

from __future__ import annotations

from relata.search.legs import query_keys


def test_function_words_in_lower_case_are_not_looked_up() -> None:
    keys = query_keys("Patients are diagnosed with regional or distant spread of the disease")
    assert {"are", "or", "of", "with", "the", "of the"}.isdisjoint(keys)
    # An n-gram that holds a content word is looked up whole, function words and all.
    assert {"patients are", "regional or distant", "spread of the disease"} <= keys


def test_a_function_word_in_capitals_is_an_acronym_and_is_looked_up() -> None:
    keys = query_keys("NO synthase is inhibited; ARE binding is lost")
    assert {"no", "are", "no synthase", "are binding"} <= keys
    assert "is" not in keys  # "is" stays a function word in any case
    assert "I" not in query_keys("I ask") and "i" not in query_keys("I ask")


def test_names_and_terms_are_looked_up_in_any_case() -> None:
    keys = query_keys("ART reduces infectiveness of HIV-positive people in the UK")
    assert {"art", "hiv positive", "uk", "infectiveness"} <= keys
    assert query_keys("of the and") == set()
