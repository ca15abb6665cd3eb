"""``relata related`` and ``relata review`` against a real database: one line per related item
with why, the queue listed without a terminal (never waiting for an answer), an interactive
review on a terminal driven by its input, the non-interactive decisions, and ``--json``."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator

import pytest

from relata.bootstrap import Container
from relata.cli.main import main
from relata.config.settings import Settings
from relata.domain.models import ReviewStatus
from relata.domain.vocabulary import RelationshipType
from tests.support.ingest import built, workspace_id
from tests.support.relationships import Corpus, corpus


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def c(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Container]:
    with built(settings, embedding_provider="none") as container:
        for key in [k for k in os.environ if k.startswith("RELATA_")]:
            monkeypatch.delenv(key)
        monkeypatch.setenv("RELATA_DATA_DIR", container.settings.data_dir)
        monkeypatch.setenv("RELATA_DATABASE_URL", container.settings.resolved_database_url)
        monkeypatch.setenv("RELATA_EMBEDDING_PROVIDER", "none")
        yield container


@pytest.fixture
def mine(c: Container) -> Corpus:
    return corpus(c, workspace_id(c))


def _status(c: Container, rel_id: str) -> ReviewStatus:
    return c.repos.relationships.get(workspace_id(c), rel_id).review_status


def test_related_prints_one_line_per_related_item_with_why(
    c: Container, mine: Corpus, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["related", mine.press.item.id]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    top, second = lines
    assert top.startswith(f"{mine.contradiction.id}  contradicts ")
    assert f"{mine.contradiction.score:.3f}" in top and "unreviewed" in top
    assert f"Harbour council minutes ({mine.minutes.item.id}): they disagree about" in top
    assert "“began operating on 14 March 2019”" in top
    assert f"Seal survey ({mine.survey.item.id})" in second and " similar " in second

    c.relationships.review(workspace_id(c), mine.contradiction.id, "reject", by="tester")
    assert main(["related", mine.press.item.id]) == 0
    assert mine.contradiction.id not in capsys.readouterr().out
    assert main(["related", mine.press.item.id, "--all", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in shown] == [mine.contradiction.id, mine.press_survey.id]
    first = shown[0]
    assert first["other"] == {"id": mine.minutes.item.id, "title": "Harbour council minutes"}
    assert first["review_status"] == "rejected" and first["reviewed_by"] == "tester"
    assert "rejected by a reviewer" in first["why"]
    assert {p["name"] for p in first["contributions"]} >= {"contradicting_claims", "model"}
    assert first["evidence"][0]["kind"] == "contradicting_claims"

    assert main(["related", mine.survey.item.id, "--limit", "1"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1
    assert main(["related", "no-such-item"]) == 1
    assert "no item 'no-such-item'" in capsys.readouterr().err


def test_review_without_a_terminal_lists_the_queue_and_never_asks(
    c: Container, mine: Corpus, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Answers are waiting on standard input, but it is not a terminal: nothing reads them.
    answers = io.StringIO("c\nc\nc\n")
    monkeypatch.setattr("sys.stdin", answers)
    assert main(["review"]) == 0
    assert answers.read() == "c\nc\nc\n"
    out = capsys.readouterr().out
    listed = [line.split("  ", 1)[0] for line in out.splitlines() if line[:1].isalnum()]
    assert listed[:3] == [mine.contradiction.id, mine.press_survey.id, mine.minutes_survey.id]
    first, second = sorted((mine.press, mine.minutes), key=lambda t: t.item.id)
    assert f"{first.item.title} ~ {second.item.title}: they disagree about" in out
    assert "[c]onfirm" not in out and "relata review --confirm ID" in out
    assert main(["review", "--list", "--limit", "1"]) == 0
    assert capsys.readouterr().out.startswith(f"{mine.contradiction.id}  contradicts")

    assert main(["review", "--list", "--json"]) == 0
    queue = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in queue] == [
        mine.contradiction.id,
        mine.press_survey.id,
        mine.minutes_survey.id,
    ]
    top = queue[0]
    assert {top["source"]["title"], top["target"]["title"]} == {
        "Sabrewing press release",
        "Harbour council minutes",
    }
    assert top["why"] and top["evidence"] and top["review_status"] == "unreviewed"
    assert "other" not in top
    assert all(_status(c, r["id"]) is ReviewStatus.UNREVIEWED for r in queue)


def test_an_interactive_review_confirms_one_rejects_another_and_edits_a_third(
    c: Container,
    mine: Corpus,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # An unknown answer is asked again; the edit is given by number (shares_subject is the
    # fifth type), then a note.
    monkeypatch.setattr("sys.stdin", _Tty("c\nwhat\nr\ne\n5\nsame array, not similar\n"))
    assert main(["review"]) == 0
    out = capsys.readouterr().out
    assert "[1/3] contradicts" in out and "[3/3] similar" in out
    assert "Sabrewing press release" in out and "Harbour council minutes" in out
    assert "why: they disagree about Sabrewing Array" in out
    # The evidence quotations of both sides, at their offsets.
    assert "“began operating on 14 March 2019”" in out and "“entered service in June 2021”" in out
    assert "both name Kestrel Marine Systems (rarity" in out
    assert out.count("[c]onfirm [r]eject [e]dit type [s]kip [q]uit") == 4
    assert "answer c, r, e, s or q (not 'what')" in out
    assert "confirmed 1, rejected 1, edited 1, skipped 0" in out

    ws = workspace_id(c)
    confirmed = c.repos.relationships.get(ws, mine.contradiction.id)
    assert confirmed.review_status is ReviewStatus.CONFIRMED and confirmed.reviewed_by == "cli"
    assert confirmed.decision is not None and confirmed.review_note is None
    assert _status(c, mine.press_survey.id) is ReviewStatus.REJECTED
    edited = c.repos.relationships.get(ws, mine.minutes_survey.id)
    assert edited.review_status is ReviewStatus.EDITED
    assert edited.relationship_type is RelationshipType.SHARES_SUBJECT
    assert edited.review_note == "same array, not similar" and edited.reviewed_by == "cli"


def test_an_interactive_review_skips_and_quits_and_ends_with_its_input(
    c: Container,
    mine: Corpus,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr("sys.stdin", _Tty("s\nq\n"))
    assert main(["review"]) == 0
    assert "confirmed 0, rejected 0, edited 0, skipped 1" in capsys.readouterr().out
    # The end of the input is a quit, never a decision.
    monkeypatch.setattr("sys.stdin", _Tty("e\n"))
    assert main(["review"]) == 0
    capsys.readouterr()
    for rel in (mine.contradiction, mine.press_survey, mine.minutes_survey):
        assert _status(c, rel.id) is ReviewStatus.UNREVIEWED


def test_the_non_interactive_decisions(
    c: Container, mine: Corpus, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = workspace_id(c)
    assert main(["review", "--confirm", mine.contradiction.id, "--note", "checked"]) == 0
    assert capsys.readouterr().out.startswith(f"confirmed: {mine.contradiction.id}  ")
    done = c.repos.relationships.get(ws, mine.contradiction.id)
    assert done.review_status is ReviewStatus.CONFIRMED
    assert done.reviewed_by == "cli" and done.review_note == "checked"

    assert main(["review", "--reject", mine.press_survey.id]) == 0
    assert _status(c, mine.press_survey.id) is ReviewStatus.REJECTED
    capsys.readouterr()

    argv = ["review", "--edit", mine.minutes_survey.id, "--type", "supports", "--json"]
    assert main([*argv, "--note", "the minutes cite the survey"]) == 0
    edited = json.loads(capsys.readouterr().out)
    assert edited["id"] == mine.minutes_survey.id and edited["type"] == "supports"
    assert edited["review_status"] == "edited" and edited["note"] == "the minutes cite the survey"
    stored = c.repos.relationships.get(ws, mine.minutes_survey.id)
    assert stored.relationship_type is RelationshipType.SUPPORTS

    assert main(["review", "--list"]) == 0
    assert "nothing to review" in capsys.readouterr().out

    assert main(["review", "--edit", mine.contradiction.id]) == 2
    assert "--edit needs --type" in capsys.readouterr().err
    assert main(["review", "--confirm", mine.contradiction.id, "--type", "supports"]) == 2
    assert "--type goes with --edit" in capsys.readouterr().err
    assert main(["review", "--note", "why"]) == 2
    assert "--note goes with" in capsys.readouterr().err
    assert main(["review", "--reject", "no-such-relationship"]) == 1
    assert "no relationship 'no-such-relationship'" in capsys.readouterr().err
    assert main(["review", "--list", "--limit", "0"]) == 1
    assert "limit must be 1-200" in capsys.readouterr().err
    # Decided ones stay decided.
    assert _status(c, mine.contradiction.id) is ReviewStatus.CONFIRMED


def test_another_workspaces_relationships_are_not_reviewed_here(
    c: Container, mine: Corpus, capsys: pytest.CaptureFixture[str]
) -> None:
    other = c.workspaces.ensure("other")[0].id
    theirs = corpus(c, other)
    assert main(["review", "--reject", theirs.contradiction.id]) == 1
    assert "no relationship" in capsys.readouterr().err
    assert main(["review", "--list", "--json"]) == 0
    assert theirs.contradiction.id not in {r["id"] for r in json.loads(capsys.readouterr().out)}
    assert main(["review", "--list", "--workspace", "other", "--json"]) == 0
    assert theirs.contradiction.id in {r["id"] for r in json.loads(capsys.readouterr().out)}
    assert c.repos.relationships.get(other, theirs.contradiction.id).review_status is (
        ReviewStatus.UNREVIEWED
    )
