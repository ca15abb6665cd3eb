"""What ``POST /api/v1/items`` accepts: the JSON body model and the OpenAPI description of
both request forms (multipart upload, JSON text). The responses are in ``relata.schemas.items``,
but for the item detail with its related items (``ItemDetailOut`` here), which needs the
relationship schemas."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from relata.api.v1.params import INSTANT_SCHEMA, Instant
from relata.ingest.validation import MAX_METADATA_KEYS, MAX_METADATA_VALUE_CHARS
from relata.schemas import items as item_responses
from relata.schemas.relationships import RelatedBriefOut

#: How many related items an item's detail lists (``/items/{id}/related`` lists them all).
DETAIL_RELATED = 10

# The shape the service enforces (``relata.ingest.validation.validate_metadata``), for the
# schema; the service checks it, so its messages name what was wrong.
Metadata = Annotated[
    dict[str, Any],
    WithJsonSchema(
        {
            "type": "object",
            "maxProperties": MAX_METADATA_KEYS,
            "propertyNames": {"pattern": "^[A-Za-z0-9_.-]{1,64}$"},
            "additionalProperties": {"type": "string", "maxLength": MAX_METADATA_VALUE_CHARS},
        }
    ),
]


class ItemIn(BaseModel):
    """Inline text to ingest (``POST /items`` with ``application/json``)."""

    # Strict: ``"allow_duplicate": 0`` is an error, not False.
    model_config = ConfigDict(extra="forbid", strict=True)

    # Documented, not enforced here: the service refuses blank text with its own message.
    text: str = Field(
        description="the document text (plain, Markdown or JSON); not blank",
        json_schema_extra={"minLength": 1, "pattern": r"\S"},
    )
    title: str | None = Field(None, description="1-500 characters; default: found in the text")
    metadata: Metadata | None = Field(
        None, description="flat map of at most 32 keys ([A-Za-z0-9_.-]) to strings"
    )
    created_at: Instant | None = Field(
        None, description="ISO 8601; without a timezone it is UTC; at most a day ahead"
    )
    allow_duplicate: bool = Field(False, description="keep a deliberate copy of existing text")


class ItemEditIn(BaseModel):
    """``PATCH /items/{id}``: a new title and/or metadata (a field left out is unchanged)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    title: str | None = Field(
        None,
        description="1-500 characters, no control characters",
        json_schema_extra={"minLength": 1, "maxLength": 500, "pattern": r"\S"},
    )
    metadata: Metadata | None = Field(
        None,
        description="replaces the whole map: at most 32 keys ([A-Za-z0-9_.-]) to strings of "
        "at most 1024 characters; `{}` clears it",
    )


def _or_empty(schema: dict[str, Any]) -> dict[str, Any]:
    """A form field's schema, or null: a multipart body cannot tell an empty field from a
    missing value, and an empty field means "not given" (a browser sends empty inputs)."""
    return {"anyOf": [schema, {"type": "null"}]}


_MULTIPART_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["file"],
    "additionalProperties": False,
    "properties": {
        "file": {"type": "string", "format": "binary", "description": "the document"},
        "title": {**_or_empty({"type": "string"}), "description": "1-500 characters"},
        "metadata": {
            **_or_empty({"type": "string"}),
            "description": "a JSON object of string values",
        },
        "created_at": {
            **_or_empty(INSTANT_SCHEMA),
            "description": "ISO 8601 date or date-time; without an offset it is UTC",
        },
        "allow_duplicate": {**_or_empty({"type": "boolean"}), "default": False},
    },
}

#: The request body of ``POST /items``: a file upload or inline text.
CREATE_ITEM_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {"schema": _MULTIPART_SCHEMA},
            "application/json": {"schema": ItemIn.model_json_schema()},
        },
    }
}


class AttachmentOut(BaseModel):
    """One attachment of an e-mail item (docs/decisions/0048)."""

    number: int = Field(description="its place in the message, from 1")
    name: str = Field(description="its file name in the message (display only)")
    item_id: str | None = Field(
        description="the item it became; null when it was not read or that item was deleted"
    )
    reason: str | None = Field(description="why it was not read, when it was not")


class ItemDetailOut(item_responses.ItemDetailOut):
    """``GET /items/{id}``: the item, its runs and entities, and its best related items. It
    keeps the name of the detail it extends, so the OpenAPI schema keeps its name too (the
    base is not served on its own)."""

    related: list[RelatedBriefOut] = Field(
        default_factory=list,
        description=f"up to {DETAIL_RELATED} related items, best first, rejected ones left "
        "out, each with why in one line",
    )
    attachments: list[AttachmentOut] = Field(
        default_factory=list, description="an e-mail item's attachments, in order"
    )
