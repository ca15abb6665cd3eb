"""Request bodies are bounded while they stream in: before they are parsed and before the
caller is authenticated (docs/decisions/0027-request-limits-and-origins.md).

Every request with a body is of one class, by the route it is for:

- **sign-in** (the API's ``POST /auth/sign-in``, the web's ``POST /sign-in``):
  ``SIGN_IN_MAX_BYTES``, fixed; the only class a caller without credentials may send;
- **upload** (``POST /api/v1/items`` as multipart or JSON, the web library's upload form):
  ``RELATA_MAX_UPLOAD_BYTES`` per file plus ``UPLOAD_FORM_ALLOWANCE`` for the form's fields;
- **import** (``POST /api/v1/import``, a JSON Lines export): ``RELATA_MAX_IMPORT_BYTES``;
- **form** (any other path of the web): ``RELATA_MAX_FORM_BYTES``;
- **JSON** (any other path of the API): ``RELATA_MAX_JSON_BYTES``.

``BodyLimitMiddleware`` applies them, in this order:

1. a declared ``Content-Length`` over the limit is refused (413) before one byte is read;
2. an unsafe request with a body, of any class but sign-in, that carries neither an
   ``Authorization`` header nor a session cookie is refused (401) before one byte is read:
   an anonymous caller can make the server read a sign-in body and nothing more;
3. otherwise the body is counted as the app pulls it: the chunk that passes the limit is the
   last one read, the app's next ``receive`` raises, whatever it answers is dropped and the
   answer is 413;
4. and it must keep coming: once the client has kept the app waiting ``BODY_RATE_GRACE``
   seconds, it must have sent ``RELATA_MIN_BODY_RATE`` bytes for every further second it
   kept it waiting, else the body is cut off the same way with 408. A body trickled a few
   bytes a second cannot hold a connection, or an upload's ingestion slot, for long.

A refusal that leaves a body unread says ``Connection: close``, so the server stops reading
rather than discarding what the client goes on sending. The answer is the JSON error shape,
or the web's error page on its paths (``render``, given by ``relata.api.app.create_app``).
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from fastapi.routing import RouteContext, iter_route_contexts
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from relata.auth.sessions import COOKIE_NAME, SECURE_COOKIE_NAME
from relata.config.settings import Settings
from relata.domain.errors import RelataError, TooLarge, TooSlow, Unauthenticated

#: The most a sign-in body may carry: a username (128 characters) and a password (1024) of
#: four-byte characters, the page to go on to (2000 ASCII) and the form's token, each
#: percent-encoded or JSON-escaped (about 20 KB at worst).
SIGN_IN_MAX_BYTES = 32 * 1024
#: Room for the multipart boundaries, part headers and small fields around an upload's files.
UPLOAD_FORM_ALLOWANCE = 64 * 1024
#: The media types an upload route takes as an upload; any other is bounded as its layer's
#: default class (and refused by the route).
UPLOAD_MEDIA = frozenset({"multipart/form-data", "application/json"})
#: Seconds a client may keep the app waiting for a body before ``RELATA_MIN_BODY_RATE``
#: applies (a slow start, a client's pause).
BODY_RATE_GRACE = 10.0
_UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class BodyKind(enum.StrEnum):
    JSON = "JSON"
    FORM = "form"
    SIGN_IN = "sign-in"
    UPLOAD = "upload"
    IMPORT = "import"


@dataclass(frozen=True, slots=True)
class BodyRule:
    """The bound of one class of request bodies, and the words that explain a refusal."""

    kind: BodyKind
    limit: int
    message: str
    field: str | None = None

    @property
    def public(self) -> bool:
        """Whether a caller without credentials may send such a body."""
        return self.kind is BodyKind.SIGN_IN


@dataclass(frozen=True, slots=True)
class BodyLimits:
    """The limits of every class, from the settings."""

    json: int
    form: int
    upload_file: int
    import_file: int = 1 << 30

    @classmethod
    def from_settings(cls, settings: Settings) -> BodyLimits:
        return cls(
            json=settings.max_json_bytes,
            form=settings.max_form_bytes,
            upload_file=settings.max_upload_bytes,
            import_file=settings.max_import_bytes,
        )

    def upload_limit(self, files: int = 1) -> int:
        """The most bytes an upload's body may carry: ``files`` files and the form's fields."""
        return files * self.upload_file + UPLOAD_FORM_ALLOWANCE

    def rule(self, kind: BodyKind, *, files: int = 1, field: str = "file") -> BodyRule:
        """The rule of ``kind``; an upload's carries ``files`` files in the form field
        ``field``."""
        if kind is BodyKind.UPLOAD:
            limit = self.upload_limit(files)
            if files == 1:
                parts = f"one file of at most {self.upload_file} bytes"
            else:
                parts = f"at most {files} files of {self.upload_file} bytes each"
            message = (
                f"the upload is over the limit of {limit} bytes: {parts} "
                f"(RELATA_MAX_UPLOAD_BYTES) in one request, with up to "
                f"{UPLOAD_FORM_ALLOWANCE} bytes of form fields"
            )
            return BodyRule(kind, limit, message, field=field)
        if kind is BodyKind.IMPORT:
            return BodyRule(
                kind,
                self.import_file,
                f"the import is over the limit of {self.import_file} bytes "
                "(RELATA_MAX_IMPORT_BYTES)",
                field="body",
            )
        if kind is BodyKind.SIGN_IN:
            return BodyRule(
                kind,
                SIGN_IN_MAX_BYTES,
                f"the sign-in request is over the limit of {SIGN_IN_MAX_BYTES} bytes "
                "(a fixed bound: a username, a password and the page to go on to)",
            )
        if kind is BodyKind.FORM:
            return BodyRule(
                kind,
                self.form,
                f"the form is over the limit of {self.form} bytes (RELATA_MAX_FORM_BYTES)",
            )
        return BodyRule(
            kind,
            self.json,
            f"the request body is over the limit of {self.json} bytes for an API request "
            "(RELATA_MAX_JSON_BYTES); send documents as uploads (POST /api/v1/items)",
        )


class RouteKinds:
    """The class of a request's body by the route it matches: the named routes of
    ``kinds``, else ``default``. An upload route takes only ``UPLOAD_MEDIA`` as an upload."""

    def __init__(
        self, routes: Iterable[BaseRoute], kinds: Mapping[str, BodyKind], default: BodyKind
    ) -> None:
        found: list[tuple[RouteContext, BodyKind]] = []
        for route in iter_route_contexts(list(routes)):  # included routers' routes too
            kind = kinds.get(route.name or "")
            if kind is not None:
                found.append((route, kind))
        missing = set(kinds) - {r.name for r, _ in found}
        if missing:  # a renamed route must not silently fall back to the default class
            raise RuntimeError(f"no route named {sorted(missing)} to bound the body of")
        self._found = found
        self.default = default

    def kind(self, scope: Scope) -> BodyKind:
        for route, kind in self._found:
            if route.matches(scope)[0] is Match.FULL:
                if kind is BodyKind.UPLOAD and _media(scope) not in UPLOAD_MEDIA:
                    return self.default
                return kind
        return self.default


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def _media(scope: Scope) -> str:
    return (_header(scope, b"content-type") or "").split(";", 1)[0].strip().lower()


def declared_length(scope: Scope) -> int | None:
    """The request's ``Content-Length`` as a number, None when absent or not a number."""
    value = (_header(scope, b"content-length") or "").strip()
    return int(value) if value.isdigit() else None


def has_body(scope: Scope) -> bool:
    declared = declared_length(scope)
    return (declared is not None and declared > 0) or _header(
        scope, b"transfer-encoding"
    ) is not None


def has_credentials(scope: Scope) -> bool:
    """Whether the headers carry an API token or a session cookie (valid or not: that is
    for the route to decide once the body is bounded)."""
    if _header(scope, b"authorization") is not None:
        return True
    cookies = Request(scope).cookies
    return COOKIE_NAME in cookies or SECURE_COOKIE_NAME in cookies


class _CutOff(Exception):
    """Raised into the app by ``receive`` when its body is cut off."""


#: Given the request's scope and the refusal, the response (JSON, or the web's page).
Render = Callable[[Scope, RelataError], Response]


class BodyLimitMiddleware:
    """Applies the body rule of each request, and the least rate (the module docstring).
    ``min_rate`` 0 turns the rate off."""

    def __init__(
        self,
        app: ASGIApp,
        rule_for: Callable[[Scope], BodyRule],
        render: Render,
        min_rate: int = 0,
        grace: float = BODY_RATE_GRACE,
    ) -> None:
        self.app = app
        self.rule_for = rule_for
        self.render = render
        self.min_rate = min_rate
        self.grace = grace

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, error: RelataError) -> None:
        response = self.render(scope, error)
        response.headers["connection"] = "close"  # the body is left unread
        await response(scope, receive, send)

    def _too_slow(self) -> TooSlow:
        return TooSlow(
            f"the request body came slower than {self.min_rate} bytes a second "
            "(RELATA_MIN_BODY_RATE), so it was cut off: send it again over a faster connection"
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not has_body(scope):
            await self.app(scope, receive, send)
            return
        rule = self.rule_for(scope)
        declared = declared_length(scope)
        if declared is not None and declared > rule.limit:
            await self._refuse(scope, receive, send, TooLarge(rule.message, field=rule.field))
            return
        if scope.get("method") in _UNSAFE and not rule.public and not has_credentials(scope):
            error = Unauthenticated(
                "sign in, or send Authorization: Bearer <API token>: a request body is read "
                "only from a caller with credentials"
            )
            await self._refuse(scope, receive, send, error)
            return

        received = 0
        waited = 0.0  # seconds the app spent waiting for the client's bytes
        complete = False
        cut: RelataError | None = None
        app_started = False

        async def limited_receive() -> Message:
            nonlocal received, waited, complete, cut
            if cut is not None:
                return {"type": "http.disconnect"}
            if complete or not self.min_rate:
                message = await receive()
            else:
                allowed = self.grace + received / self.min_rate - waited
                started = time.monotonic()
                try:
                    message = await asyncio.wait_for(receive(), timeout=max(allowed, 0.0))
                except TimeoutError:
                    cut = self._too_slow()
                    raise _CutOff from None
                waited += time.monotonic() - started
            if message["type"] == "http.request" and not complete:
                received += len(message.get("body", b""))
                complete = not message.get("more_body", False)
                if received > rule.limit:
                    cut = TooLarge(rule.message, field=rule.field)
                    raise _CutOff
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal app_started
            if cut is not None and not app_started:
                return  # the app's answer to a cut-off body is replaced by ours
            if message["type"] == "http.response.start":
                app_started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except Exception:
            if cut is None:
                raise
            # Whatever the cut-off body made the app raise (our exception, or the parser's
            # error about it) is answered below.
        if cut is not None and not app_started:
            await self._refuse(scope, receive, send, cut)
