"""A small typed Python client of Relata's REST API (``/api/v1``), over httpx.

    with RelataClient("http://127.0.0.1:8000", token="rl_...") as relata:
        found = relata.search("slipway repairs", limit=5)
        for result in found.results:
            print(result.title, result.why)

Each method is one endpoint and returns the same pydantic model the server answers with
(``relata.schemas``), so a field the server documents is a typed attribute here. An API
token (``relata token create``) names the workspace and the role; the server scopes every
call by it.

Bounded and explicit:

- every request has a timeout (``timeout``; asking a question has its own, longer,
  ``answer_timeout``: a language model may be slow);
- a response body is read as it streams and refused past ``max_response_bytes``;
- an error answer becomes the domain error of its status (``relata.domain.errors``: 404
  ``NotFound``, 403 ``Forbidden``, 401 ``Unauthenticated``, 400 ``ValidationError`` naming
  the field, 409 ``Conflict``, 413 ``TooLarge``, 503 ``Unavailable``...), carrying the
  server's code and message; a server that cannot be reached, or that answers too slowly, is
  ``Unavailable``. Nothing is retried: the caller decides.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, TypeAdapter
from pydantic import ValidationError as PydanticValidationError

import relata
from relata.api.v1.auth import MeOut
from relata.api.v1.exchange import ImportOut
from relata.api.v1.item_schemas import ItemDetailOut
from relata.domain.errors import (
    Conflict,
    Forbidden,
    NotFound,
    Permanent,
    RateLimited,
    RelataError,
    TooLarge,
    Unauthenticated,
    Unavailable,
    ValidationError,
)
from relata.domain.models import SourceType
from relata.domain.vocabulary import (
    ContradictionStatus,
    EntityType,
    ExportFormat,
    RelationshipType,
    Resolution,
)
from relata.schemas.answers import AnswerOut
from relata.schemas.claims import ContradictionOut, ContradictionPage
from relata.schemas.entities import EntityDetailOut, EntityPage
from relata.schemas.items import ChunkPage, ItemOut, ItemTextOut
from relata.schemas.relationships import RelatedOut, RelationshipOut
from relata.schemas.search import SearchOut

__all__ = ["DEFAULT_MAX_RESPONSE_BYTES", "RelataClient"]

#: The largest response body read by default (a text window of a million characters fits).
DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024
DEFAULT_TIMEOUT = 30.0
DEFAULT_ANSWER_TIMEOUT = 180.0

_T = TypeVar("_T")
_M = TypeVar("_M", bound=BaseModel)

# By status, most statuses the API documents (relata.api.errors chooses them).
_ERRORS: dict[int, type[RelataError]] = {
    400: ValidationError,
    401: Unauthenticated,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: TooLarge,
    429: RateLimited,
    503: Unavailable,
}


def _error(status: int, body: bytes) -> RelataError:
    """The domain error of an error answer (the API's one error shape, if it is that)."""
    code: str | None = None
    message = f"the server answered {status}"
    field: str | None = None
    try:
        shape = json.loads(body)["error"]
        code = str(shape["code"])
        message = str(shape["message"])
        field = shape.get("field")
    except (ValueError, KeyError, TypeError):
        pass
    cls = _ERRORS.get(status)
    if cls is None:
        return Permanent(f"{message} (HTTP {status})") if status < 500 else Unavailable(message)
    if issubclass(cls, ValidationError):
        return cls(message, field=field, code=code)
    if cls is RateLimited:
        return RateLimited(message)
    return cls(message, code=code)


class RelataClient:
    """One connection pool to one Relata server, authenticated with one API token."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        answer_timeout: float = DEFAULT_ANSWER_TIMEOUT,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not token.strip():
            raise ValidationError("an API token is required", field="token")
        url = httpx.URL(base_url)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValidationError(
                f"the server URL must be http(s)://host[:port], not {base_url!r}", field="server"
            )
        self.base_url = str(url).rstrip("/")
        self.answer_timeout = answer_timeout
        self.max_response_bytes = max_response_bytes
        self._http = httpx.Client(
            base_url=self.base_url + "/api/v1",
            headers={
                "Authorization": f"Bearer {token.strip()}",
                "User-Agent": f"relata-client/{relata.__version__}",
                "Accept": "application/json",
            },
            timeout=httpx.Timeout(timeout),
            follow_redirects=False,
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RelataClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- plumbing -------------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> bytes:
        query = {k: v for k, v in (params or {}).items() if v is not None}
        extra: dict[str, Any] = {}
        if timeout is not None:
            extra["timeout"] = httpx.Timeout(timeout)
        try:
            with self._http.stream(method, path, params=query, json=body, **extra) as resp:
                data = bytearray()
                for piece in resp.iter_bytes():
                    data.extend(piece)
                    if len(data) > self.max_response_bytes:
                        raise Permanent(
                            f"the answer to {method} {path} was over {self.max_response_bytes} "
                            "bytes (max_response_bytes); ask for a smaller page or window"
                        )
                status = resp.status_code
        except httpx.TimeoutException:
            raise Unavailable(f"{self.base_url} did not answer {method} {path} in time") from None
        except httpx.TransportError as exc:
            raise Unavailable(
                f"cannot reach Relata at {self.base_url} ({type(exc).__name__})"
            ) from None
        if status >= 400:
            raise _error(status, bytes(data))
        return bytes(data)

    @staticmethod
    def _parse(adapter: TypeAdapter[_T], data: bytes) -> _T:
        try:
            return adapter.validate_json(data)
        except PydanticValidationError as exc:
            raise Permanent(
                "the server's answer is not the shape this client expects "
                "(client and server versions differ?)",
                cause=exc,
            ) from None

    def _get(self, model: type[_M], path: str, **params: Any) -> _M:
        return self._parse(TypeAdapter(model), self._request("GET", path, params=params))

    def _post(self, model: type[_M], path: str, body: dict[str, Any], **kw: Any) -> _M:
        return self._parse(TypeAdapter(model), self._request("POST", path, body=body, **kw))

    # -- the API --------------------------------------------------------------------------

    def me(self) -> MeOut:
        """``GET /auth/me``: the token's user, workspace and role there."""
        return self._get(MeOut, "/auth/me")

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        offset: int = 0,
        source_type: SourceType | str | None = None,
        created_from: str | None = None,
        created_to: str | None = None,
        legs: list[str] | None = None,
    ) -> SearchOut:
        """``GET /search``: results with why each was found."""
        return self._get(
            SearchOut,
            "/search",
            q=query,
            limit=limit,
            offset=offset,
            type=str(source_type) if source_type else None,
            **{"from": created_from},
            to=created_to,
            legs=",".join(legs) if legs else None,
        )

    def answer(self, question: str, *, limit: int | None = None) -> AnswerOut:
        """``POST /answers``: a cited answer, or the sources and why there is none."""
        body: dict[str, Any] = {"question": question}
        if limit is not None:
            body["limit"] = limit
        return self._post(AnswerOut, "/answers", body, timeout=self.answer_timeout)

    def item(self, item_id: str) -> ItemDetailOut:
        """``GET /items/{id}``: metadata, runs, entities and the best related items."""
        return self._get(ItemDetailOut, f"/items/{_seg(item_id)}")

    def item_text(self, item_id: str, *, offset: int = 0, limit: int = 100_000) -> ItemTextOut:
        """``GET /items/{id}/text``: a window of the extracted text."""
        return self._get(ItemTextOut, f"/items/{_seg(item_id)}/text", offset=offset, limit=limit)

    def item_chunks(self, item_id: str, *, offset: int = 0, limit: int = 50) -> ChunkPage:
        """``GET /items/{id}/chunks``: a page of the item's chunks, in order."""
        return self._get(ChunkPage, f"/items/{_seg(item_id)}/chunks", offset=offset, limit=limit)

    def related(
        self, item_id: str, *, limit: int = 20, include_rejected: bool = False
    ) -> list[RelatedOut]:
        """``GET /items/{id}/related``: its relationships, best first, with evidence."""
        data = self._request(
            "GET",
            f"/items/{_seg(item_id)}/related",
            params={"limit": limit, "include_rejected": str(include_rejected).lower()},
        )
        return self._parse(TypeAdapter(list[RelatedOut]), data)

    def add_text(
        self,
        text: str,
        *,
        title: str | None = None,
        metadata: dict[str, str] | None = None,
        created_at: str | None = None,
        allow_duplicate: bool = False,
    ) -> ItemOut:
        """``POST /items`` with JSON: add a text document (processed in the background)."""
        body: dict[str, Any] = {"text": text, "allow_duplicate": allow_duplicate}
        for key, value in (("title", title), ("metadata", metadata), ("created_at", created_at)):
            if value is not None:
                body[key] = value
        return self._post(ItemOut, "/items", body)

    def contradictions(
        self,
        *,
        status: ContradictionStatus | str | None = None,
        subject: str | None = None,
        item_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> ContradictionPage:
        """``GET /contradictions``: where sources disagree, both sides quoted."""
        return self._get(
            ContradictionPage,
            "/contradictions",
            status=str(status) if status else None,
            subject=subject,
            item=item_id,
            limit=limit,
            offset=offset,
        )

    def contradiction(self, contradiction_id: str) -> ContradictionOut:
        return self._get(ContradictionOut, f"/contradictions/{_seg(contradiction_id)}")

    def resolve(
        self, contradiction_id: str, resolution: Resolution | str, *, note: str | None = None
    ) -> ContradictionOut:
        """``POST /contradictions/{id}/resolution`` (an editor's or owner's token)."""
        return self._post(
            ContradictionOut,
            f"/contradictions/{_seg(contradiction_id)}/resolution",
            {"resolution": str(resolution), "note": note},
        )

    def entities(
        self,
        *,
        query: str | None = None,
        entity_type: EntityType | str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> EntityPage:
        """``GET /entities``: entities whose normalised name contains ``query``."""
        return self._get(
            EntityPage,
            "/entities",
            q=query,
            type=str(entity_type) if entity_type else None,
            limit=limit,
            offset=offset,
        )

    def entity(self, entity_id: str) -> EntityDetailOut:
        """``GET /entities/{id}``: mentions, aliases and what it is named with."""
        return self._get(EntityDetailOut, f"/entities/{_seg(entity_id)}")

    def review(
        self,
        relationship_id: str,
        decision: str,
        *,
        relationship_type: RelationshipType | str | None = None,
        note: str | None = None,
    ) -> RelationshipOut:
        """``POST /relationships/{id}/review``: confirm, reject or edit (an editor's token)."""
        body: dict[str, Any] = {"decision": decision, "note": note}
        if relationship_type is not None:
            body["relationship_type"] = str(relationship_type)
        return self._post(RelationshipOut, f"/relationships/{_seg(relationship_id)}/review", body)

    def export(self, fmt: ExportFormat | str, out: Path, *, with_originals: bool = False) -> int:
        """``GET /export``: the workspace's export (``jsonl``, ``csv`` or ``graphml``) streamed
        into the file ``out`` (written beside it, renamed into place when complete; not
        bounded by ``max_response_bytes``: it goes to disk). Returns the bytes written."""
        try:
            chosen = ExportFormat(fmt)
        except ValueError:
            allowed = ", ".join(f.value for f in ExportFormat)
            raise ValidationError(f"format must be one of: {allowed}", field="format") from None
        params = {"format": chosen.value}
        if with_originals:
            params["with_originals"] = "true"
        partial = out.with_name(out.name + ".part")
        written = 0
        try:
            with self._http.stream("GET", "/export", params=params) as resp:
                if resp.status_code >= 400:
                    raise _error(resp.status_code, _head(resp, self.max_response_bytes))
                with partial.open("wb") as sink:
                    for piece in resp.iter_bytes():
                        sink.write(piece)
                        written += len(piece)
            partial.replace(out)
        except httpx.TimeoutException:
            raise Unavailable(f"{self.base_url} did not answer GET /export in time") from None
        except httpx.TransportError as exc:
            raise Unavailable(
                f"cannot reach Relata at {self.base_url} ({type(exc).__name__})"
            ) from None
        finally:
            partial.unlink(missing_ok=True)
        return written

    def import_jsonl(self, path: Path) -> ImportOut:
        """``POST /import``: the JSON Lines export ``path`` into the token's workspace, which
        must be empty (an owner's token); the file is sent as it is read, never whole."""
        try:
            with (
                path.open("rb") as source,
                self._http.stream(
                    "POST",
                    "/import",
                    content=_read_in_pieces(source),
                    headers={"Content-Type": "application/x-ndjson"},
                ) as resp,
            ):
                data = _head(resp, self.max_response_bytes)
                status = resp.status_code
        except httpx.TimeoutException:
            raise Unavailable(f"{self.base_url} did not answer POST /import in time") from None
        except httpx.TransportError as exc:
            raise Unavailable(
                f"cannot reach Relata at {self.base_url} ({type(exc).__name__})"
            ) from None
        if status >= 400:
            raise _error(status, data)
        return self._parse(TypeAdapter(ImportOut), data)


def _head(resp: httpx.Response, limit: int) -> bytes:
    """At most ``limit`` bytes of a response body (an error's, or a small answer)."""
    data = bytearray()
    for piece in resp.iter_bytes():
        data.extend(piece)
        if len(data) > limit:
            break
    return bytes(data[:limit])


def _read_in_pieces(source: BinaryIO, size: int = 256 * 1024) -> Iterator[bytes]:
    while piece := source.read(size):
        yield piece


def _seg(value: str) -> str:
    """An id as one path segment: anything else is refused before a request is made."""
    if not value or "/" in value or value in (".", "..") or len(value) > 128:
        raise NotFound(f"no such id: {value[:64]!r}")
    return quote(value, safe="")
