"""The atheris fuzz targets, one module each (run them with ``python -m tests.fuzz.run``).

Every module defines ``one_input(data: bytes) -> None``: it drives one target with the
bytes, accepts only the errors that target declares (the project's own classes, named in the
module's docstring) and checks the target's invariants; any other exception, or a broken
invariant (``AssertionError``), is a crash. ``TARGETS`` says, per target, which packages
besides ``relata`` are instrumented for coverage and the input size bound of a run.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Target:
    """A fuzz target: its module under ``tests.fuzz.targets``, the third-party packages
    whose coverage also guides it, and the longest input (``-max_len``) of a run."""

    module: str
    instrument: tuple[str, ...] = ()
    max_len: int = 8192


TARGETS: dict[str, Target] = {
    "sniff": Target("sniff"),
    "text": Target("text"),
    "markdown": Target("markdown", ("markdown_it",), max_len=4096),
    "json": Target("json_doc"),
    "pdf": Target("pdf", ("pypdf",), max_len=16384),
    "docx": Target("docx", max_len=16384),
    "html": Target("html"),
    "delimited": Target("delimited", max_len=4096),
    "xlsx": Target("xlsx", ("openpyxl",), max_len=16384),
    "pptx": Target("pptx", ("pptx",), max_len=65536),
    "email": Target("email", max_len=16384),
    "chunker": Target("chunker", max_len=4096),
    "decode_strict": Target("decode_strict"),
    "quotation": Target("quotation"),
    "multipart": Target("multipart", ("python_multipart", "starlette.formparsers")),
}
