"""Who is looking at a page, and the forms they post.

``page(request)`` is every page's dependency: the principal from the session cookie (the same
``resolve_principal`` as the API, so the ``slug`` path parameter picks the workspace, and a
workspace the user is not a member of is 404), the user, their workspaces for the switcher,
and the CSRF token each form carries. Without a session, ``Unauthenticated`` becomes a
redirect to the sign-in page (``relata.web.ui.WebUI.error_page``).

``form(request)`` is every form post's: it reads the form (URL-encoded or multipart, bounded),
checks its ``csrf_token`` against the session and returns both; a form without its token
changes nothing (403). A viewer may post only where ``viewer_may_write`` says so (asking,
their own tokens, signing out).

The sign-in form, posted before there is a session, carries the same kind of token derived
from the pre-session cookie (``presession``, ``presession_ok``; ``relata.auth.sessions``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi import Request, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException

from relata.api.deps import (
    CSRF_FIELD,
    Principal,
    container,
    resolve_principal,
    secure_cookies,
    session_cookie,
)
from relata.auth.sessions import (
    PRESESSION_COOKIE,
    PRESESSION_MAX_AGE,
    SECURE_PRESESSION_COOKIE,
    csrf_ok,
    csrf_token_for,
)
from relata.domain.errors import Forbidden, Unauthenticated, ValidationError
from relata.domain.models import Membership, User
from relata.domain.vocabulary import Role
from relata.ids import new_token

if TYPE_CHECKING:
    from relata.bootstrap import Container

E = TypeVar("E", bound=enum.Enum)

#: Bounds on a posted form (files are bounded by the upload route itself).
MAX_FORM_FIELDS = 64
MAX_FORM_FILES = 20
MAX_FIELD_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Page:
    """What every page template gets as ``page``."""

    principal: Principal
    user: User
    memberships: list[Membership]
    csrf_token: str

    @property
    def slug(self) -> str:
        return self.principal.workspace_slug

    @property
    def workspace_id(self) -> str:
        return self.principal.workspace_id

    @property
    def role(self) -> Role:
        return self.principal.role

    def can(self, role: Role) -> bool:
        """Whether the viewer's role is at least ``role`` (to show a form or not)."""
        return self.principal.role.at_least(role)

    @property
    def workspace_name(self) -> str:
        for m in self.memberships:
            if m.workspace.id == self.principal.workspace_id:
                return m.workspace.name
        return self.principal.workspace_slug

    def url(self, path: str = "") -> str:
        """``/w/{slug}/`` + ``path``: a page of this workspace."""
        return f"/w/{self.slug}/{path.lstrip('/')}"


def _page(request: Request, form_csrf: str | None, viewer_may_write: bool | None) -> Page:
    c: Container = container(request)
    p = resolve_principal(request, form_csrf, viewer_may_write=viewer_may_write)
    if p.kind != "session" or p.user_id is None or p.session_token is None:
        raise Unauthenticated("sign in to use the web interface")
    return Page(
        principal=p,
        user=c.accounts.get(p.user_id),
        memberships=c.accounts.memberships(p.user_id),
        csrf_token=csrf_token_for(p.session_token),
    )


async def page(request: Request) -> Page:
    """The signed-in viewer of a page (a GET)."""
    return await run_in_threadpool(_page, request, None, None)


async def form(
    request: Request, *, viewer_may_write: bool = False, max_files: int = 0
) -> tuple[Page, FormData]:
    """The posted form with its CSRF token checked, and who posted it."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype not in ("application/x-www-form-urlencoded", "multipart/form-data"):
        raise ValidationError("post the page's form", field="content-type")
    data = await read_form(
        request, max_files=max_files, max_fields=MAX_FORM_FIELDS, max_part_size=MAX_FIELD_BYTES
    )
    token = data.get(CSRF_FIELD)
    cookie = session_cookie(request)
    if cookie is not None and not csrf_ok(cookie, token if isinstance(token, str) else None):
        raise Forbidden(
            "this form has expired or did not come from this page (its CSRF token does not "
            "match): reload the page and submit it again"
        )
    who = await run_in_threadpool(
        _page, request, token if isinstance(token, str) else None, viewer_may_write
    )
    return who, data


def _presession_cookie(request: Request) -> str | None:
    value = request.cookies.get(SECURE_PRESESSION_COOKIE) or request.cookies.get(PRESESSION_COOKIE)
    return value if value and 16 <= len(value) <= 128 else None


def presession(request: Request) -> tuple[str, str | None]:
    """The sign-in form's CSRF token, and the new pre-session cookie to set with the page
    when the browser holds none yet (``set_presession_cookie``)."""
    current = _presession_cookie(request)
    if current is not None:
        return csrf_token_for(current), None
    fresh = new_token("rp")
    return csrf_token_for(fresh), fresh


def presession_ok(request: Request, presented: object) -> bool:
    """Whether a posted sign-in form carries the token of this browser's pre-session cookie
    (compared in constant time)."""
    current = _presession_cookie(request)
    return current is not None and isinstance(presented, str) and csrf_ok(current, presented)


def set_presession_cookie(response: Response, request: Request, value: str) -> None:
    """The pre-session cookie: HttpOnly, SameSite=Strict (no other site's page sends it),
    for ``PRESESSION_MAX_AGE``; Secure and ``__Host-`` prefixed like the session cookie."""
    secure = secure_cookies(request, container(request).settings.cookie_secure)
    response.set_cookie(
        SECURE_PRESESSION_COOKIE if secure else PRESESSION_COOKIE,
        value,
        max_age=int(PRESESSION_MAX_AGE.total_seconds()),
        path="/",
        secure=secure,
        httponly=True,
        samesite="strict",
    )


def clear_presession_cookie(response: Response) -> None:
    for name in (PRESESSION_COOKIE, SECURE_PRESESSION_COOKIE):
        response.delete_cookie(
            name, path="/", secure=name == SECURE_PRESESSION_COOKIE, httponly=True
        )


async def read_form(
    request: Request, *, max_files: int, max_fields: int, max_part_size: int
) -> FormData:
    """The request's form within these bounds; a form beyond them is a ValidationError in
    words (not the parser's)."""
    try:
        return await request.form(
            max_files=max_files, max_fields=max_fields, max_part_size=max_part_size
        )
    except MultiPartException as exc:
        raise ValidationError(_form_problem(exc.message, max_part_size), field="form") from None
    except HTTPException as exc:  # Starlette turns a MultiPartException into a 400
        if exc.status_code != 400:
            raise
        raise ValidationError(_form_problem(str(exc.detail), max_part_size), field="form") from None


def _form_problem(message: str, max_part_size: int = MAX_FIELD_BYTES) -> str:
    """Starlette's words for a form it refused, as a person reads them."""
    if "maximum size" in message or "exceeded" in message:
        return f"a field of the form is longer than {max_part_size // 1024} KB: shorten it"
    if "Too many files" in message:
        return f"at most {MAX_FORM_FILES} files at once"
    if "Too many fields" in message:
        return "the form has too many fields"
    return "the form could not be read: reload the page and submit it again"


def field(data: FormData, name: str, *, default: str = "", max_length: int = 10_000) -> str:
    """A text field of a posted form, stripped; ValidationError naming it when too long."""
    value: Any = data.get(name, default)
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be text", field=name)
    if len(value) > max_length:
        raise ValidationError(f"{name} is longer than {max_length} characters", field=name)
    return value.strip()


def choice(enum: type[E], value: str | None, name: str) -> E | None:
    """``value`` (a query parameter) as a member of ``enum``, None when empty; else a
    ValidationError naming ``name`` and the choices."""
    if not value:
        return None
    try:
        return enum(value)
    except ValueError:
        allowed = ", ".join(e.value for e in enum)
        raise ValidationError(f"{name} must be one of {allowed}", field=name) from None
