"""What the site tests share: the book's pages, Chromium, and a page visit that records
every request. The fixtures that use them are in conftest.py."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

BOOK = Path(__file__).resolve().parents[2]
HTML = BOOK / "_build" / "html"
SCREENSHOTS = BOOK / "_build" / "screenshots"
# Screenshots are for people to look at (the developers' guide: a page is done when its
# screenshots have been read), not checks: `make site-test` and `make lab-test` take them,
# `make test` does not (TX_SCREENSHOTS=0). A full page costs 1 to 11 s of Chromium's CPU
# (the API page is 134,000 px tall): about 110 CPU-s for the book at both widths.
TAKE_SCREENSHOTS = os.environ.get("TX_SCREENSHOTS", "1") != "0"

# Debian's Chromium as CI runs it, as root: no sandbox, no GPU, and none of the browser's
# own background connections (the network reaches only package registries). No host name
# but this machine's resolves, so a request for another host fails in the browser and never
# leaves the machine; open_page records it (a route that intercepted every request, in
# Python, cost Chromium and Playwright about 0.4 CPU-s a page load: bench/README.md,
# "Sixteenth pass").
BUSY_MACHINE_MS = 120_000  # what a page may take on a busy machine (see open_page)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
]
LOCAL_SCHEMES = ("data:", "blob:", "about:")
DESKTOP = {"width": 1280, "height": 900}  # the width the book is laid out for (tx.viz's 672 px figures)
PHONE = {"width": 390, "height": 844}  # a phone held upright
WIDGET_VIEW = 'script[type="application/vnd.jupyter.widget-view+json"]'


# --------------------------------------------------------------------------- the book


def _docname(file: str) -> str:
    return re.sub(r"\.(md|ipynb|rst)$", "", str(file))


def _toc_files(entries: list[dict]) -> list[str]:
    files: list[str] = []
    for entry in entries or []:
        if "file" in entry:
            files.append(_docname(entry["file"]))
        files += _toc_files(entry.get("sections", []))
    return files


def toc_pages() -> list[str]:
    """Every page of _toc.yml in reading order: the root, then each part's chapters."""
    toc = yaml.safe_load((BOOK / "_toc.yml").read_text(encoding="utf-8"))
    pages = [_docname(toc["root"])]
    pages += _toc_files(toc.get("chapters", []))
    for part in toc.get("parts", []):
        pages += _toc_files(part.get("chapters", []))
    return pages


# Pages the build makes that are in no table of contents.
EXTRA_PAGES = ["search", "genindex", "py-modindex", "404"]


def is_notebook(docname: str) -> bool:
    return (BOOK / f"{docname}.ipynb").is_file()


def book_config() -> dict:
    return yaml.safe_load((BOOK / "_config.yml").read_text(encoding="utf-8"))



def chromium_path() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        pytest.fail("Chromium is not installed: run `make chromium` (Debian's package).")
    return path


def screenshot(target, path, **options) -> None:
    """``target.screenshot`` (a page or a locator) to path, when screenshots are wanted."""
    if TAKE_SCREENSHOTS:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        target.screenshot(path=str(path), **options)


@dataclass
class Visit:
    """One page opened in a browser context (its own or a shared one), with everything it asked for."""

    url: str
    context: object = None
    page: object = None
    requests: list[str] = field(default_factory=list)
    external: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    bad_status: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    downloads: list = field(default_factory=list)

    def problems(self) -> list[str]:
        return (
            [f"external request: {u}" for u in self.external]
            + [f"failed request: {u}" for u in self.failed]
            + [f"HTTP error: {u}" for u in self.bad_status]
            + [f"console error: {m}" for m in self.console_errors]
            + [f"page error: {m}" for m in self.page_errors]
        )


def open_page(browser, site: str, path: str, settle: bool = True, viewport: dict = DESKTOP,
              context=None) -> Visit:
    """Open site + path in a page whose every request is recorded, and one for another host as
    external (in a browser launched with CHROMIUM_ARGS, it fails): in a fresh context of the
    given size, or, where one is given, a new page of ``context`` (whose size it keeps)."""
    visit = Visit(url=site + path)
    own = context is None
    if own:
        context = browser.new_context(viewport=viewport, accept_downloads=True)
        # Every wait is for something that does come (a load, the network going quiet, a
        # redraw); `make test` runs these beside the JupyterLab tests on two cores, where a
        # page can take longer than Playwright's 30 s default. A page that never gets there
        # still fails, later.
        context.set_default_timeout(BUSY_MACHINE_MS)

    def request(r):
        visit.requests.append(r.url)
        if not r.url.startswith((site, *LOCAL_SCHEMES)):
            visit.external.append(r.url)  # it fails: no other host resolves (CHROMIUM_ARGS)

    page = context.new_page()
    page.on("request", request)
    page.on(
        "requestfailed",
        lambda r: r.url in visit.external or visit.failed.append(f"{r.url} ({r.failure})"),
    )
    page.on("response", lambda r: r.status >= 400 and visit.bad_status.append(f"{r.status} {r.url}"))
    page.on("console", lambda m: m.type == "error" and visit.console_errors.append(m.text))
    page.on("pageerror", lambda e: visit.page_errors.append(str(e)))
    visit.context, visit.page = context, page
    response = page.goto(visit.url, wait_until="load")
    assert response is not None and response.ok, f"{visit.url}: {response and response.status}"
    if settle:
        settle_page(page)
    return visit


def settle_page(page) -> None:
    """Wait until the page's fonts are in (its formulas, typeset in the build, are drawn in
    MathJax's) and every widget snapshot is drawn."""
    page.evaluate("async () => { await document.fonts.ready; }")
    if page.locator(WIDGET_VIEW).count():
        try:
            page.wait_for_function(
                """(selector) => [...document.querySelectorAll(selector)].every(view => {
                    const area = view.previousElementSibling;
                    return area && area.classList.contains('widget-subarea') && area.childElementCount > 0;
                })""",
                arg=WIDGET_VIEW,
                timeout=20_000,
            )
        except PlaywrightTimeoutError:
            pass  # test_widget_snapshots_render says which widget is missing
    # Then every image the page has asked for is in, and its fonts. (Not Playwright's
    # "networkidle", 500 ms without a request, which says nothing about what the page shows:
    # beside the JupyterLab tests on two cores, chapter 14's page missed it for over 120 s in
    # one run, bench/README.md "Second pass".) An image the browser was
    # told to load lazily, below the fold, is not waited for: it loads when scrolled to.
    page.wait_for_function(
        """() => document.readyState === 'complete'
                 && [...document.images].every(i => i.complete || i.loading === 'lazy')"""
    )
    page.evaluate("async () => { await document.fonts.ready; }")


