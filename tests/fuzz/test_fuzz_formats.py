"""Property tests of the HTML, CSV/TSV, XLSX, PPTX and e-mail parsers on mutated and generated
input, with the promise of ``test_fuzz_parsers``: a document that keeps the invariants, or
``UnsupportedContent``/``ValidationError``; nothing else escapes, no example takes long."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from relata.chunking import chunk_document
from relata.domain.errors import UnsupportedContent, ValidationError
from relata.domain.models import SourceType
from relata.parsing import sniff
from tests.fuzz.invariants import check_chunks
from tests.fuzz.officegen import HTML_PAGE, XLSX_TYPE, make_csv, make_eml, make_pptx, make_xlsx
from tests.fuzz.test_fuzz_parsers import FEW, FUZZ, LIMITS, mutations, parsed_or_refused

XLSX_SEED = make_xlsx({"Fleet": [["turbine", "MW"], ["SB-01", 1.5], ["SB-02", "=B2*2"]]}, title="T")
PPTX_SEED = make_pptx([("Results", "Revenue grew.", "Notes here.")], table=[["a", "b"], ["1", "2"]])
EML_SEED = make_eml(
    html="<p>Hello <b>there</b></p>",
    attachments=[("sites.csv", "text/csv", make_csv(3)), ("f.xlsx", XLSX_TYPE, XLSX_SEED)],
)

HTML_PIECES = st.sampled_from(
    [
        "<html>", "</html>", "<body>", "<main>", "</main>", "<article>", "<h1>", "</h1>", "<h3>",
        "<p>", "</p>", "<br>", "<ul>", "<li>", "</li>", "<table>", "<tr>", "<td>", "<th>",
        "</table>", "<pre>", "</pre>", "<script>", "</script>", "<style>", "<div hidden>",
        "</div>", "<blockquote>", "<!--", "-->", "&amp;", "&bogus;", "&#0;", "\x00", "text ",
        "<title>", "</title>", '<meta name="author" content="x">', "<!DOCTYPE html>", "\n",
    ]
)  # fmt: skip
CSV_ALPHABET = st.sampled_from([*list('ab1 ,\t"\n\r'), '""', "é", "\x00"])
EMAIL_PIECES = st.sampled_from(
    [
        "From: a@example.org\n", "To: b@example.org\n", "Subject: =?utf-8?q?caf=C3=A9?=\n",
        "Date: Tue, 01 Dec 2026 10:00:00 +0000\n", "MIME-Version: 1.0\n",
        'Content-Type: multipart/mixed; boundary="b"\n', "Content-Type: text/html\n",
        "Content-Type: text/plain; charset=bogus\n", "Content-Transfer-Encoding: base64\n",
        'Content-Disposition: attachment; filename="x.csv"\n', "\n", "--b\n", "--b--\n",
        "a,b,c\n1,2,3\n", "<p>hi</p>\n", "SGVsbG8=\n", "body text\n", " folded\n",
    ]
)  # fmt: skip


@FEW
@given(mutations(XLSX_SEED))
def test_xlsx_parser_on_mutated_workbooks(data: bytes) -> None:
    parsed_or_refused(data, SourceType.XLSX)


@FEW
@given(mutations(PPTX_SEED))
def test_pptx_parser_on_mutated_decks(data: bytes) -> None:
    parsed_or_refused(data, SourceType.PPTX)


@FEW
@given(mutations(EML_SEED))
def test_email_parser_on_mutated_messages(data: bytes) -> None:
    parsed_or_refused(data, SourceType.EMAIL)


@FUZZ
@given(st.lists(EMAIL_PIECES | st.text(max_size=20), max_size=60).map("".join))
def test_email_parser_on_generated_messages(text: str) -> None:
    data = text.encode("utf-8", "replace")
    parsed_or_refused(data, SourceType.EMAIL)
    _sniffed_and_parsed(data)


@FUZZ
@given(st.lists(HTML_PIECES | st.text(max_size=12), max_size=200).map("".join))
def test_html_parser_on_generated_markup(text: str) -> None:
    data = text.encode("utf-8", "replace")
    doc = parsed_or_refused(data, SourceType.HTML)
    if doc is not None:
        assert "<script>" not in doc.text
        check_chunks(doc, chunk_document(doc, target_chars=300, overlap_chars=50), 300)
    _sniffed_and_parsed(data, filename="page.html")


@FEW
@given(mutations(HTML_PAGE))
def test_html_parser_on_a_mutated_page(data: bytes) -> None:
    parsed_or_refused(data, SourceType.HTML)


@FUZZ
@given(st.lists(CSV_ALPHABET | st.text(max_size=8), max_size=400).map("".join), st.booleans())
def test_csv_and_tsv_parsers_on_generated_tables(text: str, tabs: bool) -> None:
    data = text.encode("utf-8", "replace")
    source_type = SourceType.TSV if tabs else SourceType.CSV
    doc = parsed_or_refused(data, source_type)
    if doc is not None:
        check_chunks(doc, chunk_document(doc, target_chars=400, overlap_chars=80), 400)
    _sniffed_and_parsed(data)


def _sniffed_and_parsed(data: bytes, filename: str | None = None) -> None:
    try:
        source_type = sniff(data, filename=filename, limits=LIMITS)
    except (UnsupportedContent, ValidationError):
        return
    parsed_or_refused(data, source_type)
