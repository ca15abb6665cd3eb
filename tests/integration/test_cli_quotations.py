"""The CLI's disagreement cards read well (issue 31): a long quotation is cut at word
boundaries around its whole conflicting value, and a quotation that is only the disputed value
is not printed a second time under it."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest

from relata.bootstrap import Container
from relata.cli import claims as cli_claims
from relata.cli.ask import print_answer
from relata.domain.models import ClaimSide, Contradiction, Disagreement, DisagreementPosition
from relata.domain.vocabulary import ContradictionStatus, DisagreementKind, DisagreementStatus
from relata.search.answers import Answer, Source
from tests.support.demo import DemoSnapshot

PRESS = "sabrewing-array-press-release.txt"
MINUTES = "harbour-council-minutes.md"
LONG = (
    "The Sabrewing Array, after years of surveys, tests, planning disputes, design changes "
    "and repairs to the cabling that runs along the bottom of the sound to the shore "
    "station, has entered commercial operation on the national grid on 2 June 2021 after "
    "two winters of storms."
)
VALUE = "2 June 2021"


def _side(item_id: str, quotation: str, conflict: str, at: int = 100) -> ClaimSide:
    lo = at + quotation.index(conflict)
    return ClaimSide(
        claim_key=f"k-{item_id}",
        item_id=item_id,
        quotation=quotation,
        start=at,
        end=at + len(quotation),
        statement=quotation,
        conflict_start=lo,
        conflict_end=lo + len(conflict),
    )


def test_the_cli_cuts_between_words_and_keeps_the_conflict_whole(
    demo_container: Container,
    demo_snapshot: DemoSnapshot,
    capsys: pytest.CaptureFixture[str],
) -> None:
    c, ids = demo_container, demo_snapshot.ids
    ws = c.workspaces.resolve().id
    d = Disagreement(
        id="d1",
        workspace_id=ws,
        subject="sabrewing array",
        subject_name="Sabrewing Array",
        topic="date:began_operating",
        facet="date",
        kind=DisagreementKind.CONTRADICTION,
        status=DisagreementStatus.OPEN,
        positions=(
            DisagreementPosition(VALUE, (_side(ids[PRESS], LONG, VALUE),)),
            DisagreementPosition("March 2019", (_side(ids[MINUTES], "March 2019", "March 2019"),)),
        ),
        confidence=0.9,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    capsys.readouterr()
    cli_claims._print_disagreement(c, ws, d)
    out = capsys.readouterr().out
    quoted = [ln.strip() for ln in out.splitlines() if ln.startswith("       “")]
    assert len(quoted) == 1, out  # "March 2019" is the value line already: not twice
    (line,) = quoted
    assert VALUE in line and line.startswith("“…")
    assert set(line.strip("“”").strip("…").split()) <= set(LONG.split())
    assert out.count("March 2019") == 1


def test_relata_ask_quotes_each_side_around_its_whole_conflicting_value() -> None:
    long = "Earlier reports and council papers disagree on many details. " * 4 + LONG
    x = Contradiction(
        id="x1",
        workspace_id="w",
        subject="sabrewing array",
        subject_name="Sabrewing Array",
        first=_side("a", long, VALUE),
        second=_side("b", "It began in March 2019.", "March 2019"),
        facet="date",
        reason="the dates differ",
        confidence=0.9,
        detector="facets",
        detector_version="1",
        status=ContradictionStatus.OPEN,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    source = Source("1", "a", "chunk", "Grid bulletin", "text", 0.5)
    ans = Answer("when?", "unavailable", None, "no_model", "no model", (), 0, (source,), (x,))
    out = io.StringIO()
    print_answer(ans, out)
    lines = [ln.strip() for ln in out.getvalue().splitlines() if "“" in ln]
    first = next(ln for ln in lines if ln.startswith("Grid bulletin"))
    assert VALUE in first and "“…" in first
    assert set(first.split("“", 1)[1].strip("”").strip("…").split()) <= set(long.split())
    assert any("“It began in March 2019.”" in ln for ln in lines)
