"""Request-scoped dependencies: the container and the principal.

Every ``/api/v1`` route but the public ones (sign-in, the version) depends on ``principal``
(``relata.api.v1`` adds it to each router), which resolves, in order:

1. ``Authorization: Bearer <token>``: an API token (``relata.auth.tokens``), in its workspace
   with its role; exempt from CSRF (a browser never adds the header by itself);
2. the session cookie (``relata.auth.sessions``): on an unsafe method it must carry the
   synchronizer token, header ``X-CSRF-Token`` or, in an urlencoded form, ``csrf_token``;
3. else 401 ``unauthorized`` with ``WWW-Authenticate: Bearer``.

The workspace is the session's or the token's; a ``{slug}`` path parameter (the routes under
``/workspaces/{slug}``) or else ``X-Relata-Workspace: <slug>`` picks another the user is a
member of (a token is bound to its own). A workspace the principal is not a
member of answers 404 ``not_found`` exactly like one that does not exist, never 403. On an
unsafe method a viewer is refused with 403 ``forbidden`` (they are a member, nothing leaks),
except on the routes of ``VIEWER_MAY_WRITE`` (asking, their own tokens, signing out).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request, Response
from starlette.concurrency import run_in_threadpool

from relata.auth.sessions import COOKIE_NAME, SECURE_COOKIE_NAME, csrf_ok
from relata.domain.errors import Forbidden, NotFound, Unauthenticated
from relata.domain.models import CLI_ACTOR, Actor
from relata.domain.vocabulary import ActorKind, Role

if TYPE_CHECKING:
    from relata.bootstrap import Container

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
WORKSPACE_HEADER = "x-relata-workspace"
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf_token"
#: Unsafe endpoints (by route name) a viewer may call: none changes the workspace's knowledge
#: (asking a question, their own tokens, signing out).
#: Creating a workspace, and accepting or declining an invitation, are open to every
#: signed-in user: they change no workspace the user is already a member of.
VIEWER_MAY_WRITE = frozenset(
    {
        "answers",
        "create_token",
        "revoke_token",
        "sign_out",
        "create_workspace",
        "accept_invitation",
        "decline_invitation",
    }
)
#: A path parameter of this name is always a workspace's slug, and names the request's
#: workspace (it wins over the header).
WORKSPACE_PATH_PARAM = "slug"
_NO_CREDENTIALS = "sign in, or send Authorization: Bearer <API token>"


@dataclass(frozen=True, slots=True)
class Principal:
    workspace_id: str
    workspace_slug: str
    user_id: str | None
    kind: str  # "session", "token", or "cli" (``relata mcp`` on the local database)
    role: Role = Role.VIEWER
    token_id: str | None = None
    #: The session token of a cookie-authenticated request (to derive its CSRF token).
    session_token: str | None = None

    @property
    def actor(self) -> Actor:
        """Who the audit log records for this request's actions (``relata.audit``)."""
        if self.kind == "token":
            return Actor(ActorKind.TOKEN, user_id=self.user_id, token_id=self.token_id)
        if self.kind == "cli":
            return CLI_ACTOR
        return Actor(ActorKind.USER, user_id=self.user_id)

    def require(self, role: Role, action: str) -> None:
        """Forbidden unless the principal's role is at least ``role``."""
        if not self.role.at_least(role):
            who = self.role.value
            article = "an" if who[:1] in "aeiou" else "a"
            raise Forbidden(f"{article} {who} cannot {action}; it takes {role.value}")


def container(request: Request) -> Container:
    c: Container = request.app.state.container
    return c


def session_cookie(request: Request) -> str | None:
    return request.cookies.get(SECURE_COOKIE_NAME) or request.cookies.get(COOKIE_NAME)


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise Unauthenticated(_NO_CREDENTIALS)
    return value.strip()


def token_principal(c: Container, secret: str, asked: str | None = None) -> Principal:
    """The principal of an API token: its workspace (``asked``, a slug, must be that one, else
    404) and its role; ``Unauthenticated`` for a token that is unknown, expired or revoked.
    Reads the database: call it in a thread. Also the MCP endpoint's (``relata.mcp.http``)."""
    found = c.tokens.authenticate(secret)
    if found is None:
        raise Unauthenticated("the API token is not valid")
    ws = c.repos.workspaces.get(found.token.workspace_id)
    if asked is not None and asked != ws.slug:
        raise NotFound(f"workspace {asked!r} not found")
    return Principal(
        workspace_id=ws.id,
        workspace_slug=ws.slug,
        user_id=found.token.user_id,
        kind="token",
        role=found.role,
        token_id=found.token.id,
    )


def resolve_principal(
    request: Request, form_csrf: str | None, *, viewer_may_write: bool | None = None
) -> Principal:
    """The caller of ``request`` (the module docstring), reading the database: call it in a
    thread. ``form_csrf`` is the CSRF token of a posted form; ``viewer_may_write`` overrides
    the ``VIEWER_MAY_WRITE`` table for the web's own routes."""
    c = container(request)
    in_path = request.path_params.get(WORKSPACE_PATH_PARAM)
    asked = (
        in_path if isinstance(in_path, str) else request.headers.get(WORKSPACE_HEADER, "")
    ).strip().lower() or None
    secret = _bearer(request)
    if secret is not None:
        p = token_principal(c, secret, asked)
    else:
        token = session_cookie(request)
        session = c.accounts.sessions.resolve(token) if token else None
        if token is None or session is None:
            raise Unauthenticated(_NO_CREDENTIALS)
        if request.method not in SAFE_METHODS and not csrf_ok(
            token, request.headers.get(CSRF_HEADER) or form_csrf
        ):
            raise Forbidden("missing or wrong CSRF token (header X-CSRF-Token)")
        workspace_id = session.workspace_id
        if asked is not None:
            try:
                workspace_id = c.repos.workspaces.get_by_slug(asked).id
            except NotFound:
                raise NotFound(f"workspace {asked!r} not found") from None
        role = c.accounts.role_in(session.user_id, workspace_id)
        if role is None:
            raise NotFound(f"workspace {asked or ''!r} not found")
        ws = c.repos.workspaces.get(workspace_id)
        p = Principal(
            workspace_id=ws.id,
            workspace_slug=ws.slug,
            user_id=session.user_id,
            kind="session",
            role=role,
            session_token=token,
        )
    route = getattr(request.scope.get("route"), "name", "")
    may_write = route in VIEWER_MAY_WRITE if viewer_may_write is None else viewer_may_write
    if request.method not in SAFE_METHODS and p.role is Role.VIEWER and not may_write:
        raise Forbidden("a viewer cannot change this workspace (upload, review, reprocess, delete)")
    return p


async def principal(request: Request) -> Principal:
    """The caller (see the module docstring). The urlencoded form is read only when a
    cookie-authenticated unsafe request lacks the CSRF header; the rest runs in a thread
    (it reads the database)."""
    form_csrf: str | None = None
    if (
        request.method not in SAFE_METHODS
        and "authorization" not in request.headers
        and CSRF_HEADER not in request.headers
        and request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded")
    ):
        value = (await request.form()).get(CSRF_FIELD)
        form_csrf = value if isinstance(value, str) else None
    return await run_in_threadpool(resolve_principal, request, form_csrf)


def secure_cookies(request: Request, setting: str) -> bool:
    """Whether the session cookie is Secure (``RELATA_COOKIE_SECURE``: auto = over HTTPS)."""
    if setting == "auto":
        return request.url.scheme == "https"
    return setting == "true"


def set_session_cookie(response: Response, request: Request, c: Container, token: str) -> None:
    """The session cookie: HttpOnly, SameSite=Lax, for the session's absolute lifetime;
    Secure and ``__Host-`` prefixed when ``secure_cookies``."""
    secure = secure_cookies(request, c.settings.cookie_secure)
    response.set_cookie(
        SECURE_COOKIE_NAME if secure else COOKIE_NAME,
        token,
        max_age=int(c.accounts.sessions.absolute.total_seconds()),
        path="/",
        secure=secure,
        httponly=True,
        samesite="lax",
    )


def clear_session_cookies(response: Response) -> None:
    for name in (COOKIE_NAME, SECURE_COOKIE_NAME):
        response.delete_cookie(name, path="/", secure=name == SECURE_COOKIE_NAME, httponly=True)


ContainerDep = Annotated["Container", Depends(container)]
PrincipalDep = Annotated[Principal, Depends(principal)]
