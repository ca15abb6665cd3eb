"""E-mail parser (``.eml``, RFC 5322 / MIME) with the standard library's ``email`` package.

The message becomes one document: a ``field`` block of its headers (From, To, Cc, Date,
Subject), then its body, then one section per readable attachment. Sender, recipients, date
and subject are also metadata, and the subject is the title. The body is the text/plain part
when there is one, else the text/html one read like an HTML upload (``htmldoc.read_html``).

Attachments are sections of the message, not items of their own (see
docs/decisions/0035-more-formats.md): each attachment whose content ``sniff`` accepts is
parsed by the parser of its type (passed in as ``parse_part``, so this module does not import
the dispatcher) under the same limits and deadline, and its blocks are added under the
heading ``Attachment: NAME``. An attachment that is refused (unsupported, over a bound,
damaged) or is itself a message is skipped with a warning naming it; the message is still
read. Parts are bounded: at most ``max_mime_parts`` of them, nested at most
``_MAX_DEPTH`` deep, walked iteratively.
"""

from __future__ import annotations

import email
import email.policy
from collections.abc import Callable
from email.message import EmailMessage, Message
from email.utils import parsedate_to_datetime

from relata.domain.errors import UnsupportedContent, ValidationError
from relata.domain.models import SourceType
from relata.parsing.htmldoc import read_html
from relata.parsing.model import (
    Deadline,
    Document,
    DocumentBuilder,
    ParseLimits,
    check_source_bytes,
    clean_text,
    one_line,
    path_label,
    too_big,
)
from relata.parsing.sniff import sniff
from relata.parsing.text import paragraphs_of

#: Parses an attachment of a sniffed type: ``parse_part(data, source_type, limits, deadline)``.
PartParser = Callable[[bytes, SourceType, ParseLimits, Deadline], Document]

_MAX_DEPTH = 16
_HEADERS = (("From", "sender"), ("To", "recipients"), ("Cc", "cc"), ("Date", "date"))
_MAX_HEADER_CHARS = 2000


def _header(message: Message, name: str) -> str:
    try:
        value = message.get(name)
    except Exception:  # a malformed header is left out, not fatal: the policy parses lazily
        return ""
    return one_line(clean_text(str(value)), _MAX_HEADER_CHARS) if value is not None else ""


def _iso_date(value: str) -> str:
    try:
        return parsedate_to_datetime(value).isoformat()
    except (TypeError, ValueError, IndexError):
        return value


def _leaves(message: Message, limits: ParseLimits) -> list[Message]:
    """The non-multipart parts in order, bounded in number and depth (no recursion)."""
    leaves: list[Message] = []
    stack: list[tuple[Message, int]] = [(message, 0)]
    seen = 0
    while stack:
        part, depth = stack.pop()
        seen += 1
        if seen > limits.max_mime_parts:
            raise too_big(
                f"the message has more than {limits.max_mime_parts} MIME parts, the limit"
            )
        if depth > _MAX_DEPTH:
            raise too_big(f"the message nests MIME parts more than {_MAX_DEPTH} deep, the limit")
        if part.is_multipart():
            children = part.get_payload()
            if isinstance(children, list):
                stack.extend(
                    (child, depth + 1) for child in reversed(children) if isinstance(child, Message)
                )
        else:
            leaves.append(part)
    return leaves


def _text_of(part: Message, builder: DocumentBuilder) -> str:
    try:
        content = part.get_content() if isinstance(part, EmailMessage) else None
    except (LookupError, UnicodeError, ValueError, AssertionError, KeyError):
        content = None
    if isinstance(content, str):
        return content
    raw = part.get_payload(decode=True)
    if not isinstance(raw, bytes):
        return ""
    builder.warnings.append("a body part's charset is unknown or wrong; decoded as UTF-8")
    return raw.decode("utf-8", errors="replace")


def _body(leaves: list[Message]) -> tuple[Message | None, list[Message]]:
    """The body part (text/plain first, else text/html) and the attachments."""
    attachments = [
        p for p in leaves if p.get_content_disposition() == "attachment" or p.get_filename()
    ]
    texts = [p for p in leaves if p not in attachments]
    for subtype in ("plain", "html"):
        for part in texts:
            if part.get_content_type() == f"text/{subtype}":
                return part, attachments
    return None, attachments


class _Reader:
    def __init__(
        self,
        builder: DocumentBuilder,
        limits: ParseLimits,
        deadline: Deadline,
        parse_part: PartParser,
    ) -> None:
        self.builder = builder
        self.limits = limits
        self.deadline = deadline
        self.parse_part = parse_part

    def headers(self, message: Message) -> None:
        lines: list[str] = []
        for name, key in _HEADERS:
            value = _header(message, name)
            if value:
                lines.append(f"{name}: {value}")
                self.builder.set_metadata(key, _iso_date(value) if key == "date" else value)
        subject = _header(message, "Subject")
        if subject:
            lines.append(f"Subject: {subject}")
            self.builder.set_metadata("subject", subject)
            self.builder.title = subject
        self.builder.add("\n".join(lines), kind="field")

    def body(self, part: Message) -> None:
        text = _text_of(part, self.builder)
        if part.get_content_type() == "text/html":
            read_html(text, self.builder, self.deadline, self.limits)
            return
        for paragraph in paragraphs_of(text):
            self.builder.add(paragraph, clean=False)

    def attachment(self, number: int, part: Message) -> None:
        name = one_line(clean_text(part.get_filename() or ""), 200) or f"attachment {number}"
        data = part.get_payload(decode=True)
        if part.get_content_maintype() == "message" or not isinstance(data, bytes):
            self.builder.warnings.append(f"attachment {name!r} is a message; it was not read")
            return
        try:
            source_type = sniff(
                data, filename=name, content_type=part.get_content_type(), limits=self.limits
            )
            if source_type is SourceType.EMAIL:
                raise UnsupportedContent("an attached message is not read", field="content")
            document = self.parse_part(data, source_type, self.limits, self.deadline)
        except (UnsupportedContent, ValidationError) as exc:
            self.deadline.check()  # out of time is the message's refusal, not the attachment's
            self.builder.warnings.append(f"attachment {name!r} was not read: {exc.message}")
            return
        label = path_label(f"Attachment: {name}")
        self.builder.add(label, kind="heading", heading_path=(label,), level=1, clean=False)
        for block in document.blocks:
            self.builder.add(
                block.text,
                kind=block.kind,
                heading_path=(label, *block.heading_path),
                level=block.level + 1 if block.kind in ("heading", "title") else 0,
                page=block.page,
                clean=False,
            )


def parse_email(
    data: bytes, limits: ParseLimits, deadline: Deadline, *, parse_part: PartParser
) -> Document:
    check_source_bytes(data, limits)
    message = email.message_from_bytes(data, policy=email.policy.default)
    builder = DocumentBuilder(SourceType.EMAIL, limits)
    reader = _Reader(builder, limits, deadline, parse_part)
    leaves = _leaves(message, limits)
    body, attachments = _body(leaves)
    reader.headers(message)
    if body is not None:
        reader.body(body)
    for number, part in enumerate(attachments, start=1):
        deadline.check()
        reader.attachment(number, part)
    return builder.build()
