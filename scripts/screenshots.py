"""Full-page screenshots of the web interface, to look at it as a new user would.

    .venv/bin/python scripts/screenshots.py [FOLDER]   (default /tmp/relata-screenshots)

Sets up what the browser tests use (tests/browser/server.py): a fresh data dir in a
temporary folder, the administrator, the demo corpus processed, then the real ``relata
serve``; signs in through the form in Debian's Chromium and saves PNGs of the library, an
item, search with a result's explanation open, ask, the review queue, an entity, the
contradictions and the settings. The server and its data are removed afterwards. Needs
``make install-dev`` and /usr/bin/chromium (``apt-get install -y chromium``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import Page, sync_playwright  # noqa: E402
from tests.browser import server  # noqa: E402

DEFAULT_FOLDER = Path("/tmp/relata-screenshots")  # noqa: S108 - a place to look, on purpose
VIEWPORT = {"width": 1280, "height": 900}
TIMEOUT_MS = 30_000


def shoot(page: Page, folder: Path, name: str) -> Path:
    page.wait_for_load_state("networkidle")
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    print(f"{path}  ({page.url})")
    return path


def tour(page: Page, running: server.Server, folder: Path) -> None:
    server.sign_in(page, running)
    shoot(page, folder, "01-library")

    page.locator("table.items tbody tr a").first.click()
    page.get_by_role("heading", level=1).wait_for()
    shoot(page, folder, "02-item")

    page.goto(running.workspace_url("search"))
    page.get_by_label("Query").fill("Sabrewing Array turbines")
    page.get_by_role("button", name="Search", exact=True).click()
    page.locator("ol.results > li").first.get_by_text("Why this result").click()
    shoot(page, folder, "03-search")

    page.goto(running.workspace_url("ask"))
    page.get_by_label("Question").fill("When did the Sabrewing Array enter commercial operation?")
    page.get_by_role("button", name="Ask", exact=True).click()
    page.get_by_role("heading", level=2, name="Answer").wait_for()
    shoot(page, folder, "04-ask")

    page.goto(running.workspace_url("review"))
    shoot(page, folder, "05-review")

    page.goto(running.workspace_url("entities"))
    page.locator("table.entities tbody a").first.click()
    page.get_by_role("heading", level=1).wait_for()
    shoot(page, folder, "06-entity")

    page.goto(running.workspace_url("contradictions"))
    shoot(page, folder, "07-contradictions")

    page.goto(running.workspace_url("settings"))
    shoot(page, folder, "08-settings")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT_FOLDER)
    args = parser.parse_args(argv)
    if not server.CHROMIUM.is_file():
        print(f"{server.CHROMIUM} is missing: apt-get install -y chromium", file=sys.stderr)
        return 2
    folder: Path = args.folder
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="relata-screenshots-") as tmp:
        print("starting relata serve on a fresh data dir (demo corpus)...", file=sys.stderr)
        running = server.start(Path(tmp) / "data")
        try:
            with sync_playwright() as p:
                browser = server.launch(p)
                try:
                    page = browser.new_page(viewport=VIEWPORT)  # type: ignore[arg-type]
                    page.set_default_timeout(TIMEOUT_MS)
                    tour(page, running, folder)
                finally:
                    browser.close()
        except Exception:
            print(f"relata serve's log:\n{running.output(60)}", file=sys.stderr)
            raise
        finally:
            running.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
