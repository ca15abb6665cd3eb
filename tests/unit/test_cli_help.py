"""``relata`` help text: every command and option says what it does, shared options read the
same everywhere, deferred commands are listed with their module's own help, usage errors say
what was wrong, and counts are pluralised."""

from __future__ import annotations

import argparse
import importlib

import pytest

from relata.cli import main as cli_main
from relata.cli.common import plural
from relata.cli.main import Deferred, build_parser, main


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next((a for a in parser._actions if isinstance(a.choices, dict)), None)
    return dict(action.choices) if action is not None else {}  # type: ignore[arg-type]


def _all_commands() -> dict[str, argparse.ArgumentParser]:
    """Every command and sub-command, each with its deferred module registered."""
    found: dict[str, argparse.ArgumentParser] = {}
    names = list(_subparsers(build_parser()))
    for name in names:
        parser = _subparsers(build_parser([name]))[name]
        found[name] = parser
        for sub, p in _subparsers(parser).items():
            found[f"{name} {sub}"] = p
    return found


COMMANDS = _all_commands()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_a_description_and_every_option_a_help(name: str) -> None:
    parser = COMMANDS[name]
    assert parser.description and len(parser.description) > 20, f"`relata {name}` needs one"
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or isinstance(action.choices, dict):
            continue
        assert action.help, f"`relata {name}` {action.option_strings or action.dest} has no help"


def _workspace_option(parser: argparse.ArgumentParser) -> argparse.Action | None:
    return next((a for a in parser._actions if "--workspace" in a.option_strings), None)


def test_workspace_is_described_the_same_way_everywhere() -> None:
    """The same words wherever ``--workspace`` picks a workspace to use (default: the
    configured one); ``relata import`` requires it, naming the workspace to create."""
    options = {name: _workspace_option(p) for name, p in COMMANDS.items()}
    helps = {name: a.help for name, a in options.items() if a is not None and not a.required}
    assert {"search", "ask", "ingest", "items", "item", "delete", "jobs", "reembed"} <= set(helps)
    assert "watch" in helps
    assert {"export"} <= set(helps)
    assert len(set(helps.values())) == 1, helps
    required = {name for name, a in options.items() if a is not None and a.required}
    assert required == {"import"}


@pytest.mark.parametrize(
    "entry", [e for e in cli_main._COMMANDS if isinstance(e, Deferred)], ids=lambda e: e.name
)
def test_a_deferred_command_is_listed_with_its_modules_own_help(entry: Deferred) -> None:
    sub = argparse.ArgumentParser().add_subparsers()
    importlib.import_module(entry.module).register(sub)
    listed = {a.dest: a.help for a in sub._choices_actions}
    assert listed[entry.name] == entry.help


def test_bare_ingest_says_there_is_nothing_to_ingest(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ingest"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("relata: nothing to ingest: give files or folders (PATH...)")
    assert "not both" not in err


def test_ingest_refuses_paths_and_jsonl_together(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ingest", "a.md", "--jsonl", "b.jsonl"]) == 2
    assert "not both" in capsys.readouterr().err


def test_counts_are_pluralised() -> None:
    assert plural(1, "block") == "1 block"
    assert plural(0, "block") == "0 blocks"
    assert plural(2, "entry", "entries") == "2 entries"


def test_watch_help_says_what_it_does_to_files_and_which_settings_shape_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["watch", "--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for words in (
        "new version",
        "RELATA_WATCH_ON_DELETE",
        "RELATA_WATCH_IGNORE",
        "RELATA_MAX_UPLOAD_BYTES",
        "--ignore GLOB",
        "--once",
        "--no-process",
        "catches up",
    ):
        assert words in text, words
