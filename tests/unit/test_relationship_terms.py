"""Which words of an item the relationships stage looks up for its wording feature."""

from __future__ import annotations

from relata.relationships.stage import lexical_terms


def test_title_words_come_first_then_the_texts_longest() -> None:
    terms = lexical_terms(
        "Orexin and sleep",
        "The hypocretin neurons fire; orexin levels rise while mice sleep in cages.",
        6,
    )
    assert terms == ["orexin", "sleep", "hypocretin", "neurons", "levels", "while"]


def test_short_words_and_numbers_are_left_out_but_gene_like_names_kept() -> None:
    terms = lexical_terms("", "The p53 and IL6 genes, 2019 and 12345, in a cell of 3 mm.", 10)
    assert terms == ["genes", "cell", "p53", "il6"]


def test_words_are_distinct_case_aside_and_bounded() -> None:
    assert lexical_terms("Tidal TIDAL tidal", "tidal Tidal", 5) == ["tidal"]
    many = " ".join(f"word{i:03d}x" for i in range(300))
    assert len(lexical_terms("", many, 24)) == 24
    assert lexical_terms("", "", 24) == []
    assert lexical_terms("a b c", "x y z", 24) == []
