"""E-mail parser (``.eml``, RFC 5322 / MIME) with the standard library's ``email`` package.

The message becomes one document: a ``field`` block of its headers (From, To, Cc, Date,
Subject), then its body, then one section per readable attachment. Sender, recipients, date
and subject are also metadata, and the subject is the title. The body is the text/plain part
when there is one, else the text/html one read like an HTML upload (``htmldoc.read_html``).

Attachments are items of their own, linked to the message
(docs/decisions/0048-library-editing-and-attachments.md, replacing 0035's sections):
``attachments_of`` hands ingestion each attachment's name and bytes (or why it cannot be
read: an attached message, an undecodable part, one past the count bound), and the
message's text only lists them by name, in a ``field`` block ``Attachments: a.pdf, b.csv``,
so a search for a file name finds the message. Parts are bounded: at most
``max_mime_parts`` of them, nested at most ``_MAX_DEPTH`` deep, walked iteratively.
"""

from __future__ import annotations

import email
import email.policy
from dataclasses import dataclass
from email.message import EmailMessage, Message
from email.utils import parsedate_to_datetime

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
    too_big,
)
from relata.parsing.text import paragraphs_of

#: The longest attachment name kept (display only; it never names a path).
MAX_NAME_CHARS = 200


@dataclass(frozen=True, slots=True)
class EmailAttachment:
    """One attachment part, numbered from 1 in the message's order: its bytes, or why they
    are not handed on (``reason``)."""

    number: int
    name: str
    content_type: str
    data: bytes | None = None
    reason: str | None = None


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
    """The non-multipart parts in order, bounded in number and depth (no recursion); an
    attached message is one part, never walked into."""
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
        if part.is_multipart() and part.get_content_maintype() != "message":
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
        p
        for p in leaves
        if p.get_content_disposition() == "attachment"
        or p.get_filename()
        or p.get_content_maintype() == "message"  # a forwarded message is never the body
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
    ) -> None:
        self.builder = builder
        self.limits = limits
        self.deadline = deadline

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


def _name(number: int, part: Message) -> str:
    try:
        raw = part.get_filename() or ""
    except Exception:  # a malformed parameter: the part is still listed, by number
        raw = ""
    return one_line(clean_text(raw), MAX_NAME_CHARS) or f"attachment {number}"


def _message(data: bytes, limits: ParseLimits) -> tuple[Message, list[Message]]:
    check_source_bytes(data, limits)
    message = email.message_from_bytes(data, policy=email.policy.default)
    return message, _leaves(message, limits)


def attachments_of(
    data: bytes, limits: ParseLimits | None = None, *, max_count: int
) -> list[EmailAttachment]:
    """The message's attachments in order, at most ``max_count`` of them handed on with
    their bytes (the rest listed with the reason); an attached message is never read."""
    limits = limits or ParseLimits()
    _, leaves = _message(data, limits)
    _, parts = _body(leaves)
    out: list[EmailAttachment] = []
    handed = 0
    for number, part in enumerate(parts, start=1):
        name = _name(number, part)
        ctype = part.get_content_type()
        if part.get_content_maintype() == "message":
            out.append(
                EmailAttachment(number, name, ctype, reason="an attached message is not read")
            )
            continue
        if handed >= max_count:
            reason = f"the message has more than {max_count} attachments, the limit"
            out.append(EmailAttachment(number, name, ctype, reason=reason))
            continue
        try:
            payload = part.get_payload(decode=True)
        except Exception:  # a damaged transfer encoding: this part only
            payload = None
        if not isinstance(payload, bytes):
            reason = "its content could not be decoded"
            out.append(EmailAttachment(number, name, ctype, reason=reason))
            continue
        handed += 1
        out.append(EmailAttachment(number, name, ctype, data=payload))
    return out


def parse_email(data: bytes, limits: ParseLimits, deadline: Deadline) -> Document:
    message, leaves = _message(data, limits)
    builder = DocumentBuilder(SourceType.EMAIL, limits)
    reader = _Reader(builder, limits, deadline)
    body, attachments = _body(leaves)
    reader.headers(message)
    if body is not None:
        reader.body(body)
    deadline.check()
    if attachments:
        names = [_name(n, part) for n, part in enumerate(attachments, start=1)]
        builder.add("Attachments: " + ", ".join(names), kind="field")
    return builder.build()
