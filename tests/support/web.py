"""A signed-in browser-like client for the web pages (TestClient with the web plugged in).

``web_client(c)`` signs a new user in through the sign-in form (Argon2 and all; the form's
pre-session token read from the sign-in page, as a browser sends it), so it holds the session
cookie; ``csrf(client, path)`` reads the CSRF token from a page's form, as a
browser submitting that form would send it.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from fastapi.testclient import TestClient

from relata.api.app import create_app
from relata.bootstrap import Container
from relata.domain.models import Workspace
from relata.domain.vocabulary import Role
from relata.web import web_routes
from tests.support.api import BASE_URL, PASSWORD, make_user

_serial = itertools.count(1)
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def web_app_client(c: Container, **kwargs: Any) -> TestClient:
    """An anonymous client of the app with the web interface, on an allowed host."""
    kwargs.setdefault("follow_redirects", False)
    return TestClient(create_app(c, web=web_routes(c)), base_url=BASE_URL, **kwargs)


def web_client(
    c: Container,
    *,
    role: Role = Role.OWNER,
    workspace: Workspace | None = None,
    username: str | None = None,
    **kwargs: Any,
) -> TestClient:
    """A client signed in (session cookie) as a new member of ``workspace`` with ``role``."""
    name = username or f"web-{next(_serial)}"
    make_user(c, workspace=workspace, role=role, username=name)
    client = web_app_client(c, **kwargs)
    r = sign_in(client, name)
    assert r.status_code == 303, r.text
    return client


def sign_in(client: TestClient, username: str, password: str = PASSWORD, **fields: str) -> Any:
    """Post the sign-in form as a browser does: with the token of the page it was shown on."""
    data = {"username": username, "password": password, "csrf_token": csrf(client, "/sign-in")}
    return client.post("/sign-in", data={**data, **fields})


def csrf(client: TestClient, path: str) -> str:
    """The CSRF token in the first form of the page at ``path``."""
    r = client.get(path)
    assert r.status_code == 200, r.text
    found = _CSRF.search(r.text)
    assert found, f"no csrf_token in {path}"
    return found.group(1)


def seed_demo(c: Container) -> dict[str, str]:
    """The demo corpus ingested into the default workspace and processed (no embedder or
    model needed: build the container with ``embedding_provider="none"`` for speed); returns
    item ids by file name."""
    from relata.ingest.service import IngestRequest
    from relata.seed import demo_documents
    from tests.support.ingest import drain

    ws = c.workspaces.resolve().id
    ids = {}
    for doc in demo_documents():
        item = c.ingest.ingest(
            ws, IngestRequest(data=doc.data, filename=doc.filename, created_at=doc.created_at)
        )
        ids[doc.filename] = item.id
    drain(c)
    return ids
