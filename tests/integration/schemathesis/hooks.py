"""Schemathesis hooks of the bounded run (loaded through ``SCHEMATHESIS_HOOKS``): a JSON Lines
body (``POST /api/v1/import``, application/x-ndjson) is sent as the bytes generated, as a
binary body is; schemathesis has no serializer of its own for that media type."""

from schemathesis.transport.requests import REQUESTS_TRANSPORT, binary_serializer

REQUESTS_TRANSPORT.serializer("application/x-ndjson")(binary_serializer)
