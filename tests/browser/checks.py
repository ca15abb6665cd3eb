"""What every page a browser test visits must pass: no CSP violation, no console error, no
uncaught script error, and no serious or critical accessibility violation (axe-core).

``watch(page)`` starts recording on a new page (the ``page`` fixture does it); then
``check_page(page)`` after each page the test reaches asserts nothing went wrong since the
last check and runs axe-core on the document. axe-core is evaluated in the page through the
DevTools protocol (``page.evaluate``), never with ``bypass_csp``: the page's own CSP stays in
force, so an inline script or style Relata shipped would still be refused and reported.
A page the test loaded and never checked fails the test at teardown.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from playwright.sync_api import ConsoleMessage, Error, Page

from tests.browser.server import AXE

#: Violations of these impacts fail a page; the others are listed at the end of the run.
FAILING_IMPACTS = frozenset({"serious", "critical"})

# Set before any of the page's own script: every CSP violation of the document is sent to
# the test through the binding (the console also reports it, but not always with the
# directive).
_CSP_LISTENER = """
document.addEventListener("securitypolicyviolation", function (e) {
  window.__relataReportCsp({
    directive: e.violatedDirective, blocked: e.blockedURI, source: e.sourceFile,
    line: e.lineNumber, sample: e.sample, page: document.location.href,
  });
});
"""

_AXE_RUN = """async () => {
  const r = await axe.run(document, {resultTypes: ["violations"]});
  return r.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    targets: v.nodes.slice(0, 10).map(n => n.target.join(" ")),
    summary: v.nodes.length ? v.nodes[0].failureSummary : "",
  }));
}"""

_axe_source: str | None = None

#: Moderate and minor findings per page, reported at the end of the session.
minor_findings: list[str] = []


def _axe() -> str:
    global _axe_source
    if _axe_source is None:
        if not AXE.is_file():
            raise AssertionError(
                f"{AXE} is missing: run `make install-dev` (npm ci in tests/support/browser)"
            )
        _axe_source = AXE.read_text(encoding="utf-8")
    return _axe_source


@dataclass
class Watch:
    """What went wrong on a page since its last check, and which documents it loaded."""

    problems: list[str] = field(default_factory=list)
    loaded: list[str] = field(default_factory=list)
    checked: int = 0

    def console(self, msg: ConsoleMessage) -> None:
        if msg.type == "error":
            where = msg.location.get("url", "")
            self.problems.append(f"console error on {where or '?'}: {msg.text}")

    def page_error(self, error: Error) -> None:
        self.problems.append(f"uncaught error: {error.message}")

    def csp(self, report: dict[str, Any]) -> None:
        self.problems.append("CSP violation: " + json.dumps(report, sort_keys=True))


_watches: dict[int, Watch] = {}


def watch(page: Page) -> Watch:
    """Record CSP violations, console errors and page errors of ``page`` from now on."""
    w = Watch()
    _watches[id(page)] = w
    page.expose_function("__relataReportCsp", w.csp)
    page.add_init_script(_CSP_LISTENER)
    page.on("console", w.console)
    page.on("pageerror", w.page_error)
    page.on("framenavigated", lambda frame: frame == page.main_frame and w.loaded.append(frame.url))
    return w


def forget(page: Page) -> Watch | None:
    return _watches.pop(id(page), None)


def check_page(page: Page, *, expected_console: tuple[str, ...] = ()) -> None:
    """Assert the current page and everything since the last check went right.

    ``expected_console`` lists regular expressions of console errors the test caused on
    purpose (a form posted without its CSRF token is answered 403, which the browser logs);
    each must match at least one error, and only those errors are forgiven.
    """
    w = _watches[id(page)]
    page.wait_for_load_state("load")
    problems = list(w.problems)
    for pattern in expected_console:
        matching = [p for p in problems if p.startswith("console error") and re.search(pattern, p)]
        assert matching, f"expected a console error matching {pattern!r}; got {problems}"
        problems = [p for p in problems if p not in matching]
    w.problems.clear()
    violations = _run_axe(page)
    failing = [v for v in violations if v["impact"] in FAILING_IMPACTS]
    for v in violations:
        if v["impact"] not in FAILING_IMPACTS:
            minor_findings.append(f"{page.url}: {_describe(v)}")
    w.checked = len(w.loaded)
    report = problems + [f"axe {_describe(v)}" for v in failing]
    assert not report, f"page {page.url} has problems:\n" + "\n".join(report)


def _run_axe(page: Page) -> list[dict[str, Any]]:
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(_axe())
    result: list[dict[str, Any]] = page.evaluate(_AXE_RUN)
    return result


def _describe(v: dict[str, Any]) -> str:
    targets = "; ".join(v["targets"])
    return f"{v['impact']} {v['id']} ({v['help']}) at {targets}: {v['summary']}"


def unchecked(w: Watch) -> list[str]:
    """The documents loaded after the last check (a test must check every page)."""
    return w.loaded[w.checked :]
