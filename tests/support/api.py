"""An authenticated API client for tests: a user, a membership and an API token.

``api_client(c)`` is a ``TestClient`` on ``http://localhost`` (an allowed host) whose every
request carries ``Authorization: Bearer`` for a fresh user, owner of the default workspace
unless told otherwise. The user is created through the real services (Argon2 and all).
"""

from __future__ import annotations

import itertools
from typing import Any

from fastapi.testclient import TestClient

from relata.api.app import create_app
from relata.bootstrap import Container
from relata.domain.models import CLI_ACTOR, User, Workspace
from relata.domain.vocabulary import Role

PASSWORD = "correct horse battery staple"
BASE_URL = "http://localhost"
_serial = itertools.count(1)


def make_user(
    c: Container,
    *,
    workspace: Workspace | None = None,
    role: Role = Role.OWNER,
    username: str | None = None,
    password: str = PASSWORD,
) -> User:
    ws = workspace or c.workspaces.resolve()
    name = username or f"tester-{next(_serial)}"
    return c.accounts.create_user(name, password, workspace=ws, role=role)


def make_token(
    c: Container, user: User, *, workspace: Workspace | None = None, role: Role = Role.OWNER
) -> str:
    ws = workspace or c.workspaces.resolve()
    secret, _ = c.tokens.create(
        user_id=user.id,
        workspace_id=ws.id,
        name="tests",
        role=role,
        creator_role=Role.OWNER,
        actor=CLI_ACTOR,
    )
    return secret


def api_client(
    c: Container,
    *,
    role: Role = Role.OWNER,
    workspace: Workspace | None = None,
    **kwargs: Any,
) -> TestClient:
    """A client signed in by API token as a new member of ``workspace`` with ``role``."""
    user = make_user(c, workspace=workspace, role=role)
    secret = make_token(c, user, workspace=workspace, role=role)
    client = TestClient(create_app(c), base_url=BASE_URL, **kwargs)
    client.headers["Authorization"] = f"Bearer {secret}"
    return client


def anonymous_client(c: Container, **kwargs: Any) -> TestClient:
    """A client with no credentials, on an allowed host."""
    return TestClient(create_app(c), base_url=BASE_URL, **kwargs)
