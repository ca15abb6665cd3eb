"""Search prefers the current statement (docs/decisions/0038): the newer source moves just
before the older one it supersedes and both say so; nothing is dropped."""

from __future__ import annotations

from datetime import UTC, datetime

from relata.domain.models import ClaimSide, Disagreement, DisagreementPosition
from relata.domain.vocabulary import DisagreementKind, DisagreementStatus
from relata.ranking.fusion import Explanation, FusedResult
from relata.search.supersession import prefer_current


def _result(item: str, rank: int) -> FusedResult:
    return FusedResult(item, 1.0 / rank, rank, Explanation((), (), None, ()))


def _side(item: str, text: str) -> ClaimSide:
    return ClaimSide(f"k-{item}", item, text, 0, len(text), text, 0, len(text))


def _supersession(old: str, new: str) -> Disagreement:
    return Disagreement(
        id="d",
        workspace_id="w",
        subject="s",
        subject_name="S",
        topic="quantity:day",
        facet="quantity",
        kind=DisagreementKind.SUPERSESSION,
        status=DisagreementStatus.SUPERSEDED,
        positions=(
            DisagreementPosition("180 days", (_side(old, "a notice period of 180 days"),)),
            DisagreementPosition("270 days", (_side(new, "a notice period of 270 days"),)),
        ),
        confidence=0.8,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        current=1,
    )


def test_the_current_statement_moves_before_the_older_and_both_say_so() -> None:
    results = [_result("x", 1), _result("old", 2), _result("y", 3), _result("new", 4)]
    out = prefer_current(results, [_supersession("old", "new")])
    assert [r.id for r in out] == ["x", "new", "old", "y"]
    assert [r.rank for r in out] == [1, 2, 3, 4]
    [note] = out[2].explanation.notes
    assert note.startswith("superseded:") and "“180 days”" in note and "270 days" in note
    [current] = out[1].explanation.notes
    assert current == "the current statement: it supersedes an older dated source"
    assert out[0].explanation.notes == () and out[3].explanation.notes == ()


def test_an_order_already_right_or_a_newer_source_absent_is_kept() -> None:
    right = [_result("new", 1), _result("old", 2)]
    assert [r.id for r in prefer_current(right, [_supersession("old", "new")])] == ["new", "old"]
    alone = [_result("old", 1), _result("z", 2)]
    out = prefer_current(alone, [_supersession("old", "new")])
    assert [r.id for r in out] == ["old", "z"]
    assert out[0].explanation.notes[0].startswith("superseded:")
    assert prefer_current(alone, []) == alone
