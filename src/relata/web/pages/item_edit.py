"""Editing an item's title and metadata from its page (``POST /w/{slug}/items/{id}/edit``,
editors and owners; docs/decisions/0048-library-editing-and-attachments.md).

The form holds the title and the metadata as text, one ``key: value`` per line (the page
shows the current map that way); both go to ``c.items.edit`` as ``PATCH /api/v1/items/{id}``
sends them, so the rules, the audit event and the messages are the same. A line without
``:`` is refused naming the field and the line's number. The answer is a redirect to the
item page with a notice.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import RedirectResponse, Response

from relata.api.deps import container
from relata.domain.errors import ValidationError
from relata.domain.vocabulary import Role
from relata.ingest.validation import (
    MAX_METADATA_KEY_CHARS,
    MAX_METADATA_KEYS,
    MAX_METADATA_VALUE_CHARS,
    MAX_TITLE_CHARS,
)
from relata.web.context import field, form
from relata.web.templating import NOTICES

router = APIRouter()

#: The longest metadata text the form takes: every key and value at its longest.
MAX_METADATA_TEXT = MAX_METADATA_KEYS * (MAX_METADATA_KEY_CHARS + MAX_METADATA_VALUE_CHARS + 4)

NOTICES.update({"item_edited": "The title and metadata were saved."})


def metadata_text(metadata: dict[str, str]) -> str:
    """The map as the form shows it: ``key: value`` lines, sorted by key."""
    return "\n".join(f"{k}: {v}" for k, v in sorted(metadata.items()))


def parse_metadata(text: str) -> dict[str, str]:
    """``key: value`` lines as a map (blank lines skipped; a repeated key keeps its last
    value); the keys and values are checked by the catalog as any metadata is."""
    out: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise ValidationError(f"metadata line {number} must be 'key: value'", field="metadata")
        out[key.strip()] = value.strip()
    return out


@router.post("/w/{slug}/items/{item_id}/edit", name="web_item_edit")
async def edit(request: Request, item_id: str) -> Response:
    who, data = await form(request)
    who.principal.require(Role.EDITOR, "edit items")
    title = field(data, "title", max_length=MAX_TITLE_CHARS + 100)
    metadata = parse_metadata(field(data, "metadata", max_length=MAX_METADATA_TEXT))
    c = container(request)
    await run_in_threadpool(
        lambda: c.items.edit(
            who.workspace_id,
            item_id,
            title=title,
            metadata=metadata,
            actor=who.principal.actor,
        )
    )
    return RedirectResponse(who.url(f"items/{item_id}?done=item_edited"), status_code=303)
