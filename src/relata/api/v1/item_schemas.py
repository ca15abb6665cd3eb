"""What ``POST /api/v1/items`` accepts: the JSON body model and the OpenAPI description of
both request forms (multipart upload, JSON text). The responses are in ``relata.schemas.items``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from relata.api.v1.params import INSTANT_SCHEMA, Instant


class ItemIn(BaseModel):
    """Inline text to ingest (``POST /items`` with ``application/json``)."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(description="the document text (plain, Markdown or JSON)")
    title: str | None = Field(None, description="1-500 characters; default: found in the text")
    metadata: dict[str, Any] | None = Field(
        None, description="flat map of at most 32 keys ([A-Za-z0-9_.-]) to strings"
    )
    created_at: Instant | None = Field(
        None, description="ISO 8601; without a timezone it is UTC; at most a day ahead"
    )
    allow_duplicate: bool = Field(False, description="keep a deliberate copy of existing text")


_MULTIPART_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["file"],
    "properties": {
        "file": {"type": "string", "format": "binary", "description": "the document"},
        "title": {"type": "string", "description": "1-500 characters"},
        "metadata": {"type": "string", "description": "a JSON object of string values"},
        "created_at": {**INSTANT_SCHEMA, "description": "ISO 8601 date or date-time"},
        "allow_duplicate": {"type": "boolean", "default": False},
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
