"""People signed in through the API, for tests of members and invitations.

``Person(c, "olive")`` is a user with a workspace of their own (slug ``home``, default the
username), signed in with a session cookie whose CSRF token goes with every write, as a
browser's script sends it. ``join`` is the way into a workspace: its owner invites, the
person accepts. ``error_of`` is an error answer's status, code and message.
"""

from __future__ import annotations

from typing import Any

from relata.bootstrap import Container
from tests.support.api import PASSWORD, anonymous_client, make_user


class Person:
    """A signed-in browser: the session cookie and its CSRF token on every write."""

    def __init__(self, c: Container, username: str, *, home: str | None = None) -> None:
        ws, _ = c.workspaces.ensure(home or username)
        self.home = ws
        self.user = make_user(c, username=username, workspace=ws)
        self.client = anonymous_client(c, raise_server_exceptions=False)
        self.sign_in()

    def sign_in(self) -> None:
        """A new session (after the clock moved past the last one's expiry)."""
        self.client.cookies.clear()
        r = self.client.post(
            "/api/v1/auth/sign-in", json={"username": self.user.username, "password": PASSWORD}
        )
        assert r.status_code == 200, r.text
        self.client.headers["X-CSRF-Token"] = r.json()["csrf_token"]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


def join(owner: Person, who: Person, slug: str, role: str) -> str:
    """``owner`` invites, ``who`` accepts: the way in. Returns the invitation's id."""
    r = owner.post(f"/api/v1/workspaces/{slug}/invitations", json={"role": role})
    assert r.status_code == 201, r.text
    accepted = who.post("/api/v1/invitations/accept", json={"code": r.json()["code"]})
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["role"] == role and accepted.json()["slug"] == slug
    return str(r.json()["id"])


def error_of(r: Any) -> tuple[int, str, str]:
    e = r.json()["error"]
    return r.status_code, e["code"], e["message"]
