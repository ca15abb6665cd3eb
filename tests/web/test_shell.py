"""The web shell: sign-in and out, the layout, error pages, static files, CSRF on forms."""

from __future__ import annotations

import pytest

from relata.bootstrap import Container
from relata.domain.models import CLI_ACTOR
from relata.domain.vocabulary import Role
from tests.support.api import make_user
from tests.support.web import csrf, sign_in, web_app_client, web_client


def test_a_page_without_a_session_sends_the_browser_to_sign_in(container: Container) -> None:
    client = web_app_client(container)
    r = client.get("/w/default/library?type=pdf")
    assert r.status_code == 303
    assert r.headers["location"] == "/sign-in?next=%2Fw%2Fdefault%2Flibrary%3Ftype%3Dpdf"
    assert client.get("/").headers["location"] == "/sign-in"


def test_sign_in_goes_to_next_or_the_library_and_a_wrong_password_says_so(
    container: Container,
) -> None:
    make_user(container, username="ann")
    client = web_app_client(container)
    page = client.get("/sign-in")
    assert page.status_code == 200 and 'name="password"' in page.text
    bad = sign_in(client, "ann", "nope")
    assert bad.status_code == 401
    assert 'role="alert"' in bad.text and 'value="ann"' in bad.text
    ok = sign_in(client, "ann", next="/w/default/library?x=1")
    assert ok.status_code == 303 and ok.headers["location"] == "/w/default/library?x=1"
    assert client.get("/").headers["location"] == "/w/default/library"
    library = client.get("/w/default/library")
    assert library.status_code == 200
    assert "<h1>Library</h1>" in library.text and "ann" in library.text


@pytest.mark.parametrize(
    "target", ["//evil.example/x", "https://evil.example/", "/\\evil.example", "javascript:x"]
)
def test_sign_in_never_redirects_off_site(container: Container, target: str) -> None:
    make_user(container, username="ann")
    client = web_app_client(container)
    r = sign_in(client, "ann", next=target)
    assert r.status_code == 303 and r.headers["location"] == "/w/default/library"


def test_sign_out_needs_the_form_token_and_ends_the_session(container: Container) -> None:
    client = web_client(container)
    forged = client.post("/sign-out", data={"csrf_token": "forged"})
    assert forged.status_code == 403
    assert "Not allowed" in forged.text  # an HTML page in the layout, not JSON
    assert client.get("/w/default/library").status_code == 200  # still signed in
    token = csrf(client, "/w/default/library")
    out = client.post("/sign-out", data={"csrf_token": token})
    assert out.status_code == 303 and out.headers["location"].startswith("/sign-in")
    assert client.get("/w/default/library").status_code == 303


def test_another_workspace_is_not_found_and_the_page_keeps_the_layout(
    container: Container,
) -> None:
    container.workspaces.ensure("secret")
    client = web_client(container)
    r = client.get("/w/secret/library")
    assert r.status_code == 404
    assert r.headers["content-type"].startswith("text/html")
    assert "Not found" in r.text and 'href="/static/relata.css"' in r.text
    assert client.get("/w/nowhere/library").status_code == 404


def test_a_bad_filter_is_a_page_naming_it(container: Container) -> None:
    client = web_client(container)
    r = client.get("/w/default/library?status=lost")
    assert r.status_code == 400 and "status must be one of" in r.text


def test_the_workspace_switcher_lists_the_users_workspaces(container: Container) -> None:
    team, _ = container.workspaces.ensure("team")
    client = web_client(container, username="bo")
    container.members.add(team.id, "bo", Role.VIEWER, actor=CLI_ACTOR)
    text = client.get("/w/default/library").text
    assert 'href="/w/default/library"' in text and 'href="/w/team/library"' in text
    assert "viewer" in text
    assert client.get("/w/team/library").status_code == 200


def test_static_files_are_served_and_nothing_else(container: Container) -> None:
    client = web_app_client(container)
    css = client.get("/static/relata.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert client.get("/static/relata.js").headers["content-type"].startswith("text/javascript")
    for name in ("..%2Fui.py", "ui.py", "missing.css"):
        assert client.get(f"/static/{name}").status_code == 404


def test_pages_carry_the_strict_csp_and_are_never_cached(container: Container) -> None:
    client = web_client(container)
    r = client.get("/w/default/library")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert r.headers["cache-control"] == "no-store"
    assert "<script>" not in r.text and " style=" not in r.text


def test_unknown_paths_are_a_page_and_the_apis_stay_json(container: Container) -> None:
    client = web_client(container)
    for path in ("/nope", "/favicon.ico", "/w", "/sign-up"):
        r = client.get(path)
        assert r.status_code == 404 and r.headers["content-type"].startswith("text/html"), path
        assert "Check the address" in r.text
    api = client.get("/api/v1/nope")
    assert api.status_code == 404 and api.json()["error"]["code"] == "not_found"
    assert client.get("/docs/assets/nope").headers["content-type"].startswith("application/json")


def test_a_workspaces_own_address_and_sign_in_when_signed_in_go_to_the_library(
    container: Container,
) -> None:
    client = web_client(container)
    for path in ("/w/default", "/w/default/"):
        r = client.get(path)
        assert r.status_code == 303 and r.headers["location"] == "/w/default/library", path
    assert client.get("/w/other/").status_code == 404
    r = client.get("/sign-in")
    assert r.status_code == 303 and r.headers["location"] == "/w/default/library"
    r = client.get("/sign-in?next=/w/default/jobs")
    assert r.headers["location"] == "/w/default/jobs"


def test_the_brand_links_to_the_workspace_in_use(container: Container) -> None:
    team, _ = container.workspaces.ensure("team")
    client = web_client(container, username="cy")
    container.members.add(team.id, "cy", Role.VIEWER, actor=CLI_ACTOR)
    assert '<a class="brand" href="/w/team/library">' in client.get("/w/team/library").text


def test_a_form_posted_after_the_session_ended_goes_to_sign_in(container: Container) -> None:
    client = web_client(container)
    token = csrf(client, "/w/default/library")
    container.accounts.sign_out(client.cookies["relata_session"])
    r = client.post("/sign-out", data={"csrf_token": token})
    assert r.status_code == 303 and r.headers["location"] == "/sign-in?expired=1"
    assert "Your session has ended" in client.get("/sign-in?expired=1").text


def test_form_problems_are_said_in_words(container: Container) -> None:
    client = web_client(container)
    forged = client.post("/sign-out", data={"csrf_token": "forged"})
    assert forged.status_code == 403 and "this form has expired" in forged.text
    token = csrf(client, "/w/default/library")
    huge = client.post(
        "/sign-out",
        files={"csrf_token": (None, token), "note": (None, "x" * 70_000)},
    )
    assert huge.status_code == 400 and "longer than 64 KB" in huge.text
    assert client.get("/w/default/library").status_code == 200  # still signed in
