"""``relata bench conflicts``'s planting (pure): the shipped texts load, cover four genres,
every plant changes exactly one value of its sentence to another of the same kind, every
control repeats its sentence, and every kind is planted."""

from __future__ import annotations

from collections import Counter

from relata.cli.benchmarks.planted import KINDS, changed, load, planted, values


def _repeated(text: str) -> str:
    return " ".join(text.split("\n\n")[1].split())


def test_the_texts_ship_with_the_package_in_four_genres() -> None:
    data = load()
    assert {d["genre"] for d in data["documents"]} == {"news", "reports", "technical", "minutes"}
    assert len(data["frames"]) >= 4


def test_each_plant_changes_one_value_and_each_control_repeats_it() -> None:
    plants, controls = planted(load())
    assert len(plants) == len(controls) >= 80
    assert set(Counter(p.kind for p in plants)) == set(KINDS)
    for p in plants:
        assert p.old != p.new and p.kind is not None
        repeated = _repeated(p.text)
        words = " ".join(p.sentence.split())
        assert repeated != words.replace(",", "")
        assert repeated.replace(p.new, p.old, 1) in {words, words.replace(", ", " ")}
    for c in controls:
        assert _repeated(c.text) in {" ".join(c.sentence.split()), c.sentence.replace(", ", " ")}


def test_values_and_changes_keep_their_kind_and_form() -> None:
    assert [k for k, _, _ in values("On Monday 3 June 2024 about 1,200 people, 40% of them")] == [
        "weekday",
        "day",
        "month",
        "year",
        "quantity",
        "percentage",
    ]
    assert changed("quantity", "1,200") == "1,500"
    assert changed("quantity", "4.2") == "5.2"
    assert changed("year", "2019") == "2021"
    assert changed("day", "28") == "21"
    assert changed("weekday", "Monday") == "Wednesday"
