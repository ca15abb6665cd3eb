"""The tour a new user takes, in Chromium against the real ``relata serve`` (issue 16): sign in
through the form; upload three files by the file picker (one new, one a duplicate of a seeded
document, one refused) and watch the new one become ready; search and open a result's
explanation; ask with no language model (the answer is unavailable, the sources are shown);
confirm an alias; confirm and reject relationships in the review queue (by mouse and by
keyboard); resolve the demo contradiction; create an API token on the settings page and use
it from a script; sign out. A form posted without its CSRF token changes nothing. Every page
reached is checked (``check_page``: no CSP violation, no console or script error, no serious
or critical axe-core violation).

The tests share one server (the demo corpus seeded before it started) and run in file order;
each signs in on its own page, through the form. What a page did is checked through the API
as well, not only by what the next page shows.
"""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import Locator, Page, expect

from relata.seed import demo_documents
from tests.browser.checks import check_page
from tests.browser.server import ADMIN, PASSWORD, WORKSPACE, Server

# One worker under pytest-xdist: one Chromium and one `relata serve` for the session.
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser")]


def test_sign_in_through_the_form_lands_on_the_library(page: Page, relata_server: Server) -> None:
    page.goto(relata_server.url("/"))
    expect(page).to_have_url(re.compile(r"/sign-in$"))
    check_page(page)

    page.get_by_label("Username").fill(ADMIN)
    page.get_by_label("Password").fill("not-the-password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_be_visible()
    check_page(page, expected_console=(r"status of 401",))

    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(relata_server.workspace_url("library"))
    expect(page.get_by_role("heading", level=1, name="Library")).to_be_visible()
    # The demo corpus is there, processed.
    rows = page.locator("table.items tbody tr")
    expect(rows).to_have_count(5)
    expect(rows.locator(".status")).to_have_text(["ready"] * 5)
    check_page(page)


def test_a_page_asked_for_before_signing_in_comes_back_after(
    page: Page, relata_server: Server
) -> None:
    page.goto(relata_server.workspace_url("library?status=ready"))
    expect(page).to_have_url(re.compile(r"/sign-in\?next="))
    check_page(page)
    page.get_by_label("Username").fill(ADMIN)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(relata_server.workspace_url("library?status=ready"))
    expect(page.get_by_label("Status")).to_have_value("ready")
    check_page(page)


def test_sign_out_ends_the_session(signed_in: Page, relata_server: Server) -> None:
    page = signed_in
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/sign-in\?signed_out=1$"))
    expect(page.get_by_role("status")).to_have_text("You are signed out.")
    check_page(page)
    # The session is gone: a workspace page sends the browser to sign in again.
    page.goto(relata_server.workspace_url("library"))
    expect(page).to_have_url(re.compile(r"/sign-in\?next="))
    expect(page.get_by_role("heading", level=1, name="Sign in")).to_be_visible()
    check_page(page)
    assert not [c for c in page.context.cookies() if "session" in c["name"]], WORKSPACE


def remove_csrf_token(form: Locator) -> None:
    """Take the CSRF token out of ``form`` as a forged cross-site form would lack it."""
    removed = form.evaluate(
        """f => { const t = f.querySelector('input[name="csrf_token"]');
                  if (!t) return false; t.remove(); return true; }"""
    )
    assert removed, "the form has no csrf_token field"


def test_a_form_posted_without_its_csrf_token_changes_nothing(
    signed_in: Page, relata_server: Server, api: httpx.Client
) -> None:
    page = signed_in
    sign_out = page.locator("form[action='/sign-out']")
    remove_csrf_token(sign_out)
    sign_out.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", level=1, name="Not allowed")).to_be_visible()
    check_page(page, expected_console=(r"status of 403",))
    # Still signed in: the library opens without a sign-in.
    page.goto(relata_server.workspace_url("library"))
    expect(page.get_by_role("heading", level=1, name="Library")).to_be_visible()
    check_page(page)

    # A decision posted without its token is not taken.
    page.goto(relata_server.workspace_url("aliases"))
    check_page(page)
    card = page.locator("article.alias").first
    alias_id = _alias_id(card)
    decide = card.locator("form.decide")
    remove_csrf_token(decide)
    decide.get_by_role("button", name="Reject").click()
    expect(page.get_by_role("heading", level=1, name="Not allowed")).to_be_visible()
    check_page(page, expected_console=(r"status of 403",))
    candidates = api.get("/aliases", params={"status": "candidate", "limit": 200}).json()
    assert alias_id in [a["id"] for a in candidates["aliases"]]


# ---------------------------------------------------------------- library: upload
GOOD_NOTE = (
    b"# Tide gauge notes\n\nRuth Lindqvist read the tide gauge at Skerry Rock on 4 May 2024.\n"
    b"The Sabrewing Array turbines were idle during the spring tide survey.\n"
)
# Not a document type Relata reads (a PNG header and noise): refused with the reason.
NOT_A_DOCUMENT = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4


def test_upload_three_files_by_the_picker(
    signed_in: Page, relata_server: Server, api: httpx.Client
) -> None:
    page = signed_in
    seeded = next(d for d in demo_documents() if d.filename == "vaughan-field-notes.txt")
    existing = _item_titled(api, "field notes, skerry rock")
    page.get_by_label("Choose files").set_input_files(
        [
            {"name": "tide-gauge-notes.md", "mimeType": "text/markdown", "buffer": GOOD_NOTE},
            {"name": "copy-of-field-notes.txt", "mimeType": "text/plain", "buffer": seeded.data},
            {"name": "harbour-photo.png", "mimeType": "image/png", "buffer": NOT_A_DOCUMENT},
        ]
    )
    page.get_by_role("button", name="Upload", exact=True).click()
    uploads = page.get_by_role("list", name="Uploads").get_by_role("listitem")
    expect(uploads).to_have_count(3)
    good, duplicate, rejected = uploads.nth(0), uploads.nth(1), uploads.nth(2)
    # The new document is processed by the server's workers while the page watches.
    expect(good.get_by_role("link", name="tide-gauge-notes.md")).to_be_visible()
    expect(good.locator(".status")).to_have_text("ready", timeout=90_000)
    # The duplicate links to the item already there, by its title.
    expect(duplicate).to_contain_text("Duplicate of")
    link = duplicate.get_by_role("link")
    expect(link).to_have_text(existing["title"])
    expect(link).to_have_attribute("href", f"/w/{WORKSPACE}/items/{existing['id']}")
    # The rejected file says why.
    expect(rejected).to_contain_text("Rejected:")
    assert "harbour-photo.png" in rejected.inner_text()
    check_page(page, expected_console=(r"status of 409", r"status of 4(00|15)"))

    # Nothing else was stored: one new item, and it is ready in the library too.
    page.reload()
    row = page.get_by_role("row").filter(has_text="Tide gauge notes")
    expect(row.locator(".status")).to_have_text("ready")
    expect(page.locator("table.items tbody tr")).to_have_count(6)
    check_page(page)
    row.get_by_role("link", name="Tide gauge notes").click()
    expect(page.get_by_role("heading", level=1, name="Tide gauge notes")).to_be_visible()
    expect(page.locator(".item-status .status")).to_have_text("ready")
    check_page(page)


def _item_titled(api: httpx.Client, words: str) -> dict[str, str]:
    r = api.get("/items", params={"limit": 100})
    assert r.status_code == 200, r.text
    items = r.json()["items"] if isinstance(r.json(), dict) else r.json()
    found = [i for i in items if words in i["title"].lower()]
    assert len(found) == 1, [i["title"] for i in items]
    return dict(found[0])


# ---------------------------------------------------------------- search and ask
def test_search_and_open_a_results_explanation(signed_in: Page, relata_server: Server) -> None:
    page = signed_in
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Search").click()
    expect(page.get_by_role("heading", level=1, name="Search")).to_be_visible()
    check_page(page)

    page.get_by_label("Query").fill("Sabrewing Array turbines")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page).to_have_url(re.compile(r"/search\?.*q=Sabrewing"))
    results = page.locator("ol.results > li")
    expect(results.first).to_be_visible()
    first = results.first
    why = first.locator("details.why")
    expect(why).not_to_have_attribute("open", "")
    first.get_by_text("Why this result").click()
    expect(why).to_have_attribute("open", "")
    legs = why.get_by_role("table", name="How each way of matching ranked it")
    expect(legs).to_be_visible()
    expect(legs.get_by_role("row")).not_to_have_count(1)  # a header and at least one leg
    expect(first.locator("mark.match").first).to_be_visible()  # the words, highlighted
    check_page(page)


def test_ask_without_a_model_says_so_and_shows_the_sources(
    signed_in: Page, relata_server: Server
) -> None:
    page = signed_in
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Ask").click()
    expect(page.get_by_role("heading", level=1, name="Ask")).to_be_visible()
    check_page(page)

    page.get_by_label("Question").fill("When did the Sabrewing Array enter commercial operation?")
    page.get_by_role("button", name="Ask", exact=True).click()
    expect(page.get_by_role("heading", level=2, name="Answer")).to_be_visible()
    expect(page.get_by_role("status").filter(has_text="The answer is unavailable")).to_be_visible()
    sources = page.locator("section.sources ol.sources > li")
    expect(sources.first).to_be_visible()
    expect(sources.first.get_by_role("link").first).to_have_attribute(
        "href", re.compile(rf"^/w/{WORKSPACE}/items/")
    )
    check_page(page)


# ---------------------------------------------------------------- knowledge: decisions
def _alias_id(card: Locator) -> str:
    labelled = card.get_attribute("aria-labelledby") or ""
    assert labelled.startswith("alias-") and labelled.endswith("-h"), labelled
    return labelled.removeprefix("alias-").removesuffix("-h")


def test_confirm_an_alias(signed_in: Page, relata_server: Server, api: httpx.Client) -> None:
    page = signed_in
    page.goto(relata_server.workspace_url("aliases"))
    expect(page.get_by_role("heading", level=1, name="Aliases")).to_be_visible()
    check_page(page)
    card = page.locator("article.alias").first
    alias_id = _alias_id(card)
    card.get_by_label("Note").fill("Same subject: checked in the minutes")
    card.get_by_role("button", name="Confirm").click()
    expect(page.get_by_role("status").filter(has_text="Confirmed.")).to_be_visible()
    expect(page.locator(f"#alias-{alias_id}-h")).to_have_count(0)  # left the queue
    check_page(page)

    r = api.get("/aliases", params={"status": "confirmed"})
    assert r.status_code == 200, r.text
    decided = {a["id"]: a for a in r.json()["aliases"]}
    assert decided[alias_id]["note"] == "Same subject: checked in the minutes"
    page.get_by_role("navigation", name="Alias state").get_by_role("link", name="Confirmed").click()
    expect(page.locator(f"#alias-{alias_id}-h")).to_contain_text("confirmed")
    check_page(page)


def test_confirm_and_reject_relationships_in_the_review_queue(
    signed_in: Page, relata_server: Server, api: httpx.Client
) -> None:
    page = signed_in
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Review").click()
    expect(page.get_by_role("heading", level=1, name="Review relationships")).to_be_visible()
    check_page(page)
    cards = page.locator("article[data-review]")
    assert cards.count() >= 2, "the demo corpus gives at least two relationships to review"

    # By mouse: confirm the first, with a note.
    first = cards.first
    confirmed = first.get_attribute("id").removeprefix("rel-")
    first.get_by_label("Note").fill("Both describe the array")
    first.get_by_role("button", name="Confirm").click()
    expect(page.get_by_role("status").filter(has_text="Confirmed.")).to_be_visible()
    expect(page.locator(f"#rel-{confirmed}")).to_have_count(0)
    check_page(page)

    # By keyboard: the queue carries on at the first relationship left; j and k move, x
    # rejects the one in focus.
    assert cards.count() >= 2, "the demo corpus gives at least three relationships to review"
    rejected = cards.first.get_attribute("id").removeprefix("rel-")
    expect(cards.first).to_be_focused()
    page.keyboard.press("j")
    expect(cards.nth(1)).to_be_focused()
    page.keyboard.press("k")
    expect(cards.first).to_be_focused()
    page.keyboard.press("x")
    expect(page.get_by_role("status").filter(has_text="Rejected.")).to_be_visible()
    expect(page.locator(f"#rel-{rejected}")).to_have_count(0)
    check_page(page)

    one = api.get(f"/relationships/{confirmed}").json()
    assert (one["review_status"], one["note"]) == ("confirmed", "Both describe the array")
    assert api.get(f"/relationships/{rejected}").json()["review_status"] == "rejected"


def test_resolve_the_demo_contradiction(
    signed_in: Page, relata_server: Server, api: httpx.Client
) -> None:
    page = signed_in
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Contradictions").click()
    expect(page.get_by_role("heading", level=1, name="Contradictions")).to_be_visible()
    check_page(page)
    card = page.locator("article.disagreement").first
    disagreement_id = card.get_attribute("aria-labelledby").removeprefix("d-").removesuffix("-h")
    card.get_by_text("Resolve this disagreement").click()
    form = card.locator("form.resolve")
    form.get_by_role("radio").first.check()
    form.get_by_label("Note").fill("The register is the later source")
    form.get_by_role("button", name="Resolve").click()
    expect(page.get_by_role("status").filter(has_text="Resolved.")).to_be_visible()
    check_page(page)

    page.goto(relata_server.workspace_url("contradictions?status=resolved"))
    expect(page.locator("article.disagreement").first).to_contain_text(
        "The register is the later source"
    )
    check_page(page)
    x = api.get(f"/disagreements/{disagreement_id}").json()
    assert (x["status"], x["note"]) == ("resolved", "The register is the later source")
    pairs = api.get("/contradictions", params={"status": "open"}).json()
    assert pairs["contradictions"] == []  # its pairs were resolved with it


# ---------------------------------------------------------------- settings: an API token
def test_create_an_api_token_use_it_and_sign_out(signed_in: Page, relata_server: Server) -> None:
    page = signed_in
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Settings").click()
    expect(page.get_by_role("heading", level=1, name="Settings")).to_be_visible()
    check_page(page)

    page.get_by_label("Token name").fill("tour script")
    page.get_by_role("button", name="Create token").click()
    expect(page.get_by_role("heading", level=1, name="Token created")).to_be_visible()
    secret = page.get_by_label("API token “tour script”").input_value()
    assert re.fullmatch(r"rl_[0-9a-f]{8}_[A-Za-z0-9_-]{20,}", secret), "not a token"
    check_page(page)

    with httpx.Client(base_url=relata_server.url("/api/v1"), timeout=30) as client:
        r = client.get("/items", headers={"Authorization": f"Bearer {secret}"})
        assert r.status_code == 200, r.text
        titles = [i["title"] for i in r.json()["items"]]
        assert "Field notes, Skerry Rock seal survey" in titles
        assert client.get("/items").status_code == 401  # and nothing without it

    # Shown once: the settings page lists the token by its prefix only.
    page.get_by_role("link", name="Back to settings").click()
    tokens = page.locator("#tokens")
    expect(tokens.get_by_role("row").filter(has_text="tour script")).to_contain_text(
        f"rl_{secret.split('_')[1]}_…"
    )
    assert secret not in page.content()
    check_page(page)

    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/sign-in\?signed_out=1$"))
    check_page(page)
    page.goto(relata_server.workspace_url("settings"))
    expect(page).to_have_url(re.compile(r"/sign-in\?next="))
    check_page(page)
