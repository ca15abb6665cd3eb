"""Run one atheris fuzz target (``tests/fuzz/targets``) with libFuzzer's options.

    .venv/bin/python -m tests.fuzz.run TARGET [CORPUS_DIR] [-runs=N] [-max_len=B] [...]

From the repository's root. Without a corpus directory the target's seeds are written to a
temporary one; an empty corpus directory is seeded first. ``-max_len`` (the target's input
bound, ``TARGETS``), ``-dict`` (``tests/fuzz/dicts/TARGET.dict`` when there is one),
``-timeout=120`` (one input running longer is a hang) and ``-print_final_stats=1`` are added
unless given. A crash (an exception the target does not declare, or a broken invariant)
stops the run with a non-zero exit and a ``crash-*`` file holding the input
(``-artifact_prefix=DIR/`` says where).
"""

from __future__ import annotations

import importlib
import logging
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import atheris

from tests.fuzz.targets import TARGETS

DICTS = Path(__file__).with_name("dicts")


def _options(target: str, given: list[str]) -> list[str]:
    spec = TARGETS[target]
    defaults = {
        "-max_len": str(spec.max_len),
        "-timeout": "120",
        "-print_final_stats": "1",
    }
    dictionary = DICTS / f"{target}.dict"
    if dictionary.is_file():
        defaults["-dict"] = str(dictionary)
    named = {arg.split("=", 1)[0] for arg in given if arg.startswith("-")}
    return [f"{k}={v}" for k, v in defaults.items() if k not in named]


def _load(target: str) -> Callable[[bytes], None]:
    spec = TARGETS[target]
    with atheris.instrument_imports(include=["relata", *spec.instrument]):
        module = importlib.import_module(f"tests.fuzz.targets.{spec.module}")
    one_input: Callable[[bytes], None] = module.one_input
    return one_input


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[1] not in TARGETS:
        sys.exit(f"usage: python -m tests.fuzz.run {{{','.join(TARGETS)}}} [CORPUS] [-flag=...]")
    target, rest = argv[1], argv[2:]
    flags = [a for a in rest if a.startswith("-")]
    corpora = [Path(a) for a in rest if not a.startswith("-")]
    if not corpora:
        corpora = [Path(tempfile.mkdtemp(prefix=f"relata-fuzz-{target}-"))]
    # Libraries log every malformed input they meet (pypdf: a line each); not a finding.
    logging.getLogger().addHandler(logging.NullHandler())
    one_input = _load(target)  # first: what it instruments must not be imported before
    if not any(corpora[0].glob("*")):
        from tests.fuzz.seeds import write_corpus

        write_corpus(target, corpora[0])
    atheris.Setup([argv[0], *flags, *_options(target, flags), *map(str, corpora)], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
