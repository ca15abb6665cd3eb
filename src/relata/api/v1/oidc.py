"""Federated sign-in (OpenID Connect): ``GET /auth/oidc/start`` and ``GET /auth/oidc/callback``.

Both are public and are browser navigations, not API calls: ``start`` answers 302 to the
provider with the flow cookie (``relata.auth.oidc``: state, nonce and PKCE verifier, signed,
HttpOnly, SameSite=Lax, 10 minutes); the provider sends the browser back to ``callback``,
which answers 303 to ``/`` with the session cookie, set exactly as a password sign-in sets it
(``relata.api.v1.auth``), or an error in the API's shape: 400 for the attempt (no flow
cookie, state or ``iss`` mismatch, no code), 401 for what the provider said or signed (code
refused, ID token refused), 503 when the provider does not answer, 404 when
``RELATA_OIDC_ISSUER`` is empty. The flow cookie is cleared either way: an attempt is used
once.

They are left out of the OpenAPI document for now: its public operations are listed in
``relata.api.openapi.PUBLIC_OPERATIONS`` (and the route sweep of tests/integration/
test_auth.py), which this module does not own (docs/decisions/0023-federated-sign-in.md).
"""

from __future__ import annotations

import json

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse
from starlette.concurrency import run_in_threadpool

from relata.api.deps import ContainerDep, secure_cookies, set_session_cookie
from relata.api.errors import domain_error_response
from relata.api.openapi import errors
from relata.auth.oidc import FLOW_COOKIE, SECURE_FLOW_COOKIE, OidcService
from relata.domain.errors import NotFound, RelataError

router = APIRouter(prefix="/auth/oidc", tags=["auth"])
_OFF = "federated sign-in is off (RELATA_OIDC_ISSUER is empty)"


def _service(c: ContainerDep) -> OidcService:
    service: OidcService | None = c.oidc
    if service is None:
        raise NotFound(_OFF)
    return service


def _clear_flow(response: Response) -> None:
    for name in (FLOW_COOKIE, SECURE_FLOW_COOKIE):
        response.delete_cookie(name, path="/", secure=name == SECURE_FLOW_COOKIE, httponly=True)


@router.get(
    "/start",
    name="oidc_start",
    status_code=302,
    responses={302: {"description": "to the provider"}, **errors(404, 503)},
)
async def start(request: Request, c: ContainerDep) -> Response:
    """Send the browser to the OpenID provider, with a new attempt's flow cookie."""
    service = _service(c)
    redirect_uri = service.config.redirect_url or str(request.url_for("oidc_callback"))
    begun = await run_in_threadpool(service.begin, redirect_uri)
    secure = secure_cookies(request, c.settings.cookie_secure)
    response = RedirectResponse(begun.url, status_code=302)
    response.headers["Cache-Control"] = "no-store"
    response.set_cookie(
        SECURE_FLOW_COOKIE if secure else FLOW_COOKIE,
        begun.cookie,
        max_age=begun.max_age,
        path="/",
        secure=secure,
        httponly=True,
        samesite="lax",
    )
    return response


@router.get(
    "/callback",
    name="oidc_callback",
    responses={303: {"description": "signed in: to /"}, **errors(400, 401, 404, 503)},
)
async def callback(request: Request, c: ContainerDep) -> Response:
    """Where the provider sends the browser back: sign in, or say why not."""
    service = _service(c)
    q = request.query_params
    flow = request.cookies.get(SECURE_FLOW_COOKIE) or request.cookies.get(FLOW_COOKIE)
    try:
        signed = await run_in_threadpool(
            lambda: service.complete(
                flow_cookie=flow,
                state=q.get("state"),
                code=q.get("code"),
                iss=q.get("iss"),
                error=q.get("error"),
            )
        )
    except RelataError as exc:
        failed: Response = domain_error_response(exc)
        web = getattr(request.app.state, "web", None)
        if web is not None:  # a person's browser: the web's page in the layout, not JSON
            body = json.loads(bytes(failed.body))["error"]
            failed = web.error_page(request, failed.status_code, body["code"], body["message"])
        failed.headers["Cache-Control"] = "no-store"
        _clear_flow(failed)
        return failed
    response = RedirectResponse("/", status_code=303)
    response.headers["Cache-Control"] = "no-store"
    _clear_flow(response)
    set_session_cookie(response, request, c, signed.token)
    return response
