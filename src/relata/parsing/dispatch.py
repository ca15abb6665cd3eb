"""``parse``: bytes of a sniffed type -> ``Document``, within ``ParseLimits``.

The one promise callers rely on: ``parse`` raises ``UnsupportedContent`` or
``ValidationError`` (both with ``field="content"`` and a message that says what is wrong),
or returns a document with at least one block. Anything else a parser library throws is
wrapped here, so a hostile upload can fail its job but never crash a worker with an
unexpected exception type.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version

from relata.domain.errors import RelataError, ValidationError
from relata.domain.models import SourceType
from relata.parsing.delimited import parse_csv, parse_tsv
from relata.parsing.docx import parse_docx
from relata.parsing.eml import parse_email
from relata.parsing.htmldoc import parse_html
from relata.parsing.jsondoc import parse_json
from relata.parsing.markdown import parse_markdown
from relata.parsing.model import Deadline, Document, ParseLimits, unparseable
from relata.parsing.pdf import parse_pdf
from relata.parsing.sheets import parse_xlsx
from relata.parsing.slides import parse_pptx
from relata.parsing.text import parse_text


def _library_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:  # pragma: no cover - they are declared dependencies
        return "unknown"


#: Recorded on every processing run; it changes when the output of ``parse`` may change,
#: including upgrades of the libraries whose output it passes through.
PARSER_VERSION = (
    f"3+pypdf-{_library_version('pypdf')}+markdown-it-{_library_version('markdown-it-py')}"
    f"+openpyxl-{_library_version('openpyxl')}+python-pptx-{_library_version('python-pptx')}"
)

_Parser = Callable[[bytes, ParseLimits, Deadline], Document]
_PARSERS: dict[SourceType, _Parser] = {
    SourceType.TEXT: parse_text,
    SourceType.MARKDOWN: parse_markdown,
    SourceType.JSON: parse_json,
    SourceType.PDF: parse_pdf,
    SourceType.DOCX: parse_docx,
    SourceType.HTML: parse_html,
    SourceType.CSV: parse_csv,
    SourceType.TSV: parse_tsv,
    SourceType.XLSX: parse_xlsx,
    SourceType.PPTX: parse_pptx,
}


_PARSERS[SourceType.EMAIL] = parse_email


def parse(
    data: bytes,
    source_type: SourceType,
    *,
    limits: ParseLimits | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Document:
    """Parse ``data`` as ``source_type``. ``clock`` (monotonic seconds) is for tests."""
    limits = limits or ParseLimits()
    parser = _PARSERS.get(SourceType(source_type))
    if parser is None:  # pragma: no cover - every SourceType has a parser
        raise ValidationError(f"no parser for {source_type}", field="source_type")
    if not data:
        raise unparseable("the content is empty")
    return _checked(data, source_type, parser, limits, Deadline(limits.max_seconds, clock))


def _checked(
    data: bytes,
    source_type: SourceType,
    parser: _Parser,
    limits: ParseLimits,
    deadline: Deadline,
) -> Document:
    try:
        document = parser(data, limits, deadline)
    except RelataError:
        raise
    except RecursionError as exc:
        raise unparseable(f"the {source_type.value} content is nested too deeply") from exc
    except Exception as exc:  # the promise above: never a library exception
        raise unparseable(
            f"the {source_type.value} content cannot be parsed ({type(exc).__name__})"
        ) from exc
    if not document.blocks:
        what = (
            "scanned pages need OCR, which Relata does not do"
            if (source_type is SourceType.PDF)
            else "it is empty once markup is removed"
        )
        raise unparseable(f"the {source_type.value} content has no extractable text ({what})")
    return document
