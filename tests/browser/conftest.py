"""Fixtures of the browser tests: one real ``relata serve`` for the session (a fresh data dir,
the administrator, the processed demo corpus), Debian's Chromium through Playwright, and a
page that records what the browser reports (see ``tests.browser.checks``).

Without /usr/bin/chromium the tests are skipped with the reason, except in CI (``CI`` set):
there a missing browser fails them, so CI never passes by not running them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, sync_playwright

from tests.browser import checks, server
from tests.browser.server import Server

#: Long enough for a page with a model-free answer on a loaded machine, short enough to fail
#: a missing element quickly.
ACTION_TIMEOUT_MS = 15_000

_SERVER_KEY = pytest.StashKey[Server]()
_FAILED_KEY = pytest.StashKey[bool]()


def _require_chromium() -> None:
    if server.CHROMIUM.is_file():
        return
    reason = f"{server.CHROMIUM} is missing (apt-get install -y chromium)"
    if os.environ.get("CI"):
        pytest.fail(f"the browser tests must run in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def relata_server(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Server]:
    _require_chromium()
    running = server.start(tmp_path_factory.mktemp("relata-browser") / "data")
    request.config.stash[_SERVER_KEY] = running
    try:
        yield running
    finally:
        running.stop()
    assert running.proc.returncode in (0, -15), (
        f"relata serve exited {running.proc.returncode}:\n{running.output()}"
    )


@pytest.fixture(scope="session")
def api(relata_server: Server) -> Iterator[httpx.Client]:
    """The server's API as a script uses it (a token made by ``relata tokens create``): to
    check what a page did, and to add documents."""
    token = relata_server.token("browser-tests")
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=relata_server.url("/api/v1"), headers=headers, timeout=30) as c:
        yield c


@pytest.fixture(scope="session")
def playwright_instance() -> Iterator[Playwright]:
    _require_chromium()
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def browser(playwright_instance: Playwright) -> Iterator[Browser]:
    b = server.launch(playwright_instance)
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.set_default_timeout(ACTION_TIMEOUT_MS)
    try:
        yield ctx
    finally:
        ctx.close()


@pytest.fixture
def page(
    context: BrowserContext, relata_server: Server, request: pytest.FixtureRequest
) -> Iterator[Page]:
    """A new page (no cookies) whose CSP violations, console and page errors are recorded;
    every document it loads must be passed to ``check_page`` (checked at teardown, unless
    the test failed already)."""
    p = context.new_page()
    w = checks.watch(p)
    yield p
    checks.forget(p)
    if request.node.stash.get(_FAILED_KEY, False):
        return
    left = checks.unchecked(w)
    assert not left, f"pages loaded and never checked: {left}"
    assert not w.problems, "problems after the last check:\n" + "\n".join(w.problems)


@pytest.fixture
def signed_in(page: Page, relata_server: Server) -> Page:
    """``page`` signed in as the administrator through the sign-in form, on the library."""
    server.sign_in(page, relata_server)
    checks.check_page(page)
    return page


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failing browser test shows the server's recent log beside its own output."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.failed:
        item.stash[_FAILED_KEY] = True
    running = item.config.stash.get(_SERVER_KEY, None)
    if report.failed and running is not None:
        alive = "running" if running.alive() else f"exited {running.proc.returncode}"
        report.sections.append((f"relata serve log ({alive})", running.output(40)))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if checks.minor_findings:
        terminalreporter.section("accessibility: moderate and minor findings (not failing)")
        for line in sorted(set(checks.minor_findings)):
            terminalreporter.write_line(line)
