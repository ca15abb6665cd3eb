"""The OpenAPI document, made to say what the API really answers.

FastAPI documents a 422 with its own validation shape on every operation that takes input,
but Relata answers 400 in the one error shape (``relata.api.errors``). ``build_openapi``
therefore post-processes FastAPI's document by three rules, so no route can forget them:

- every operation that takes parameters or a body documents **400** (FastAPI's 422 is
  replaced, and its validation schemas dropped);
- every operation with a path parameter documents **404**: ids in paths are looked up in the
  caller's workspace, and a missing one (or another workspace's) is not found;
- every operation that takes a body documents **413**: bodies are bounded as they stream in
  (``relata.api.limits``);
- every ``/api/v1`` operation but ``PUBLIC_OPERATIONS`` requires the bearer token or the
  session cookie (``components.securitySchemes``) and documents **401**, and **403** when
  it is not a GET (a viewer's write, a missing CSRF token, a cross-origin request);
- the ``kind`` filter of ``GET /api/v1/jobs`` lists the job kinds registered in this process
  (they are only known once the container is built).

Statuses particular to an operation (409, 413, 415, 502) are declared on the route with
``errors(...)``; 503 is declared for whole routers in ``relata.api.v1`` (the database may be
busy for any of them). Every error response has the ``Error`` schema.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, Field


class ErrorBody(BaseModel):
    code: str = Field(description="machine-readable, e.g. invalid_request, not_found, busy")
    message: str = Field(description="for people; names what was wrong")
    request_id: str | None = Field(description="the X-Request-ID of the request")
    field: str | None = Field(None, description="the parameter or field that was wrong (400)")
    existing_id: str | None = Field(None, description="the item that already holds the bytes")


class ErrorOut(BaseModel):
    """The one error shape: ``{"error": {"code", "message", "request_id", ...}}``."""

    error: ErrorBody


_DESCRIPTIONS = {
    400: "invalid input; `error.field` names the parameter or field",
    401: "no valid credentials: sign in, or send `Authorization: Bearer <API token>`",
    403: "refused: a viewer's write, a cookie-authenticated write without its CSRF token, "
    "or a cross-origin request",
    404: "not found in the caller's workspace",
    409: "conflict; for a duplicate upload `error.existing_id` is the item that has the bytes",
    413: "the request body is over its limit (RELATA_MAX_JSON_BYTES; an upload's "
    "RELATA_MAX_UPLOAD_BYTES; an import's RELATA_MAX_IMPORT_BYTES; a sign-in's is fixed), or "
    "an upload over a parse limit; "
    "the message names the limit",
    415: "content of a type Relata does not accept",
    429: "too many failed sign-ins for this account or address; retry after `Retry-After`",
    502: "the model provider answered with an error",
    503: "busy or unavailable (database locked, provider down, too many uploads); retry "
    "after `Retry-After` seconds",
}
_RETRY_AFTER = {
    "Retry-After": {
        "description": "seconds to wait before retrying",
        "schema": {"type": "integer"},
    }
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` entries of these error statuses, in the one error shape."""
    out: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        entry: dict[str, Any] = {"model": ErrorOut, "description": _DESCRIPTIONS[status]}
        if status in (429, 503):
            entry["headers"] = _RETRY_AFTER
        out[status] = entry
    return out


def _error_response(status: int) -> dict[str, Any]:
    return {
        "description": _DESCRIPTIONS[status],
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}},
    }


def _operations(schema: dict[str, Any]) -> Iterable[tuple[str, dict[str, Any]]]:
    for path, item in schema.get("paths", {}).items():
        for method, op in item.items():
            if method in {"get", "put", "post", "delete", "patch", "head", "options"}:
                yield path, op


#: Operations anyone may call; every other one needs a session or an API token.
PUBLIC_OPERATIONS = frozenset(
    {
        ("post", "/api/v1/auth/sign-in"),
        ("get", "/api/v1/version"),
        ("get", "/api/v1/auth/oidc/start"),
        ("get", "/api/v1/auth/oidc/callback"),
    }
)
SECURITY_SCHEMES = {
    "bearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "an API token (`relata tokens create`, `POST /api/v1/tokens`)",
    },
    "session": {
        "type": "apiKey",
        "in": "cookie",
        "name": "relata_session",
        "description": "the session cookie set by sign-in (`__Host-relata_session` over "
        "HTTPS); writes also need the `X-CSRF-Token` header",
    },
}


def _operations_with_method(
    schema: dict[str, Any],
) -> Iterable[tuple[str, str, dict[str, Any]]]:
    for path, item in schema.get("paths", {}).items():
        for method, op in item.items():
            if method in {"get", "put", "post", "delete", "patch", "head", "options"}:
                yield path, method, op


def _apply_security(schema: dict[str, Any]) -> None:
    schema.setdefault("components", {})["securitySchemes"] = SECURITY_SCHEMES
    schema["security"] = [{"bearer": []}, {"session": []}]
    for path, method, op in _operations_with_method(schema):
        if not path.startswith("/api/v1"):
            continue
        if (method, path) in PUBLIC_OPERATIONS:
            op["security"] = []
            continue
        responses: dict[str, Any] = op.setdefault("responses", {})
        responses.setdefault("401", _error_response(401))
        if method != "get":
            responses.setdefault("403", _error_response(403))


def _apply_rules(schema: dict[str, Any], job_kinds: Iterable[str]) -> None:
    kinds = sorted(job_kinds)
    _apply_security(schema)
    for path, op in _operations(schema):
        responses: dict[str, Any] = op.setdefault("responses", {})
        if responses.pop("422", None) is not None or "requestBody" in op:
            responses.setdefault("400", _error_response(400))
        if "requestBody" in op:
            responses.setdefault("413", _error_response(413))
        if "{" in path:
            responses.setdefault("404", _error_response(404))
        if path == "/api/v1/jobs" and kinds:
            for param in op.get("parameters", []):
                if param.get("name") == "kind":
                    param["schema"] = {
                        "anyOf": [
                            {"type": "string", "enum": kinds},
                            {"type": "string", "maxLength": 0, "description": "blank: any kind"},
                            {"type": "null"},
                        ]
                    }
        op["responses"] = dict(sorted(responses.items()))
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        components.pop(name, None)
    if "ErrorOut" not in components:  # declared by the routers' errors(503)
        raise RuntimeError("no route declares the error shape: include errors(503)")


def build_openapi(app: FastAPI, job_kinds: Iterable[str]) -> dict[str, Any]:
    """FastAPI's document for ``app`` with the rules of the module docstring applied."""
    schema = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
    )
    _apply_rules(schema, job_kinds)
    return schema
