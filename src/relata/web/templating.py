"""Jinja2 templates with autoescaping on for every template, and the one ``render``.

There is deliberately no filter or global that marks a string safe (``Markup``): a stored
string (a title, a file name, a document's text, an entity's name, a model's answer) always
reaches the page escaped. Highlighting is segments (``relata.web.text``) the template wraps in
``<mark>``.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

import relata

TEMPLATES = Path(__file__).parent / "templates"

env = Environment(
    loader=FileSystemLoader(TEMPLATES),
    autoescape=select_autoescape(default=True, default_for_string=True),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def _when(value: datetime | None) -> str:
    """A timestamp as people read it (UTC, to the minute)."""
    if value is None:
        return ""
    return value.strftime("%Y-%m-%d %H:%M")


def _size(n: int | None) -> str:
    if n is None:
        return ""
    size = float(n)
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size)} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return str(n)  # pragma: no cover


def _query(base: dict[str, Any], **changes: Any) -> str:
    """A query string from ``base`` with ``changes`` (None drops a key)."""
    merged = {**base, **changes}
    return urlencode({k: v for k, v in merged.items() if v not in (None, "")}, doseq=True)


#: The confirmations a page shows after a form's redirect (``?done=<code>``). Codes, not text
#: in the URL: a crafted link cannot put words on a Relata page.
NOTICES: dict[str, str] = {
    "uploaded": "Uploaded. Processing has started; the status updates as it goes.",
    "reprocessing": "Processing again from the start.",
    "version_uploaded": "New version uploaded. It is processed from the start; what the "
    "previous version contributed is replaced.",
    "version_unchanged": "Nothing changed: the file is the current version's content.",
    "deleted": "Deleted, with everything derived from it.",
    "confirmed": "Confirmed.",
    "rejected": "Rejected.",
    "edited": "Saved.",
    "resolved": "Resolved.",
    "retried": "Queued again.",
    "reembedding": "Re-embedding has started.",
    "token_revoked": "The token is revoked.",
    "member_changed": "Role changed.",
    "member_removed": "Member removed.",
}

env.globals["notices"] = NOTICES
env.filters["when"] = _when
env.filters["size"] = _size
env.globals["query"] = _query
env.globals["version"] = relata.__version__

#: Pages never go into a shared cache: they hold a workspace's data.
NO_STORE = {"Cache-Control": "no-store"}


def render(
    request: Request,
    template: str,
    *,
    status_code: int = 200,
    **context: Any,
) -> HTMLResponse:
    """``template`` rendered with ``context`` (and ``request``), never cached."""
    html = env.get_template(template).render(request=request, **context)
    return HTMLResponse(html, status_code=status_code, headers=NO_STORE)


def fragment(request: Request, template: str, **context: Any) -> str:
    """A part of a page (``template`` rendered with ``context``) as HTML text: what a streamed
    page's events carry, rendered and escaped exactly as the whole page would be."""
    return env.get_template(template).render(request=request, **context)
