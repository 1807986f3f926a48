"""Fixtures for the browser tests of the built website (_build/html).

The site is served by ``python -m http.server`` on 127.0.0.1 and a free port, and read
by Debian's Chromium (``make chromium``) driven by Playwright. Every request a page makes
is recorded; one to any other host is recorded as external and fails in the browser, whose
resolver knows no other host (sitekit.CHROMIUM_ARGS), so none leaves the machine, and the
tests fail on it.

Run with ``make site-test`` after ``make book``; ``make test`` does both.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from sitekit import (BUSY_MACHINE_MS, CHROMIUM_ARGS, DESKTOP, HTML, PHONE, SCREENSHOTS, TAKE_SCREENSHOTS, Visit,
                     chromium_path, open_page, screenshot)

# --------------------------------------------------------------------------- two workers


def pytest_configure(config):
    """Last run's screenshots go, once, before any worker takes new ones (not on a worker)."""
    if TAKE_SCREENSHOTS and not hasattr(config, "workerinput") and SCREENSHOTS.exists():
        shutil.rmtree(SCREENSHOTS)


# --------------------------------------------------------------------------- the server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def site() -> str:
    """The built site, served on 127.0.0.1 by python -m http.server; its base URL."""
    if not (HTML / "index.html").is_file():
        pytest.fail(f"no built site in {HTML}: run `make book` first.")
    for _ in range(5):  # another process may take the port between choosing and binding
        port = _free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
             "--directory", str(HTML)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 20
        ready = False
        while not ready and time.monotonic() < deadline and server.poll() is None:
            try:
                urllib.request.urlopen(base + "index.html", timeout=2).close()
                ready = True
            except OSError:
                time.sleep(0.1)
        if ready:
            break
        server.kill()
        server.wait()
    else:
        pytest.fail("python -m http.server did not start")
    try:
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


# --------------------------------------------------------------------------- the learner zip


@pytest.fixture(scope="session")
def reader_set_up(tmp_path_factory):
    """The learner zip's set-up (test_learner_zip.py), running in a process of its own; None
    without a zip."""
    from test_learner_zip import ZIP, ReaderSetUp

    if not ZIP.is_file():
        yield None
        return
    setup = ReaderSetUp(tmp_path_factory.mktemp("reader"))
    try:
        yield setup
    finally:
        setup.stop()


@pytest.fixture(scope="session", autouse=True)
def _reader_set_up_starts_first(request):
    """In one process (`make test`), the set-up starts with the run's first test, so that pip's
    minutes pass beside the browser tests. Under xdist each worker would start its own, so
    there it starts when a test of the zip first asks for it."""
    if "PYTEST_XDIST_WORKER" not in os.environ and any(
            "unzipped" in item.fixturenames for item in request.session.items):
        request.getfixturevalue("reader_set_up")


# --------------------------------------------------------------------------- the browser


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield browser
        finally:
            browser.close()


def _first_to_claim(path) -> bool:
    """True for the first process of this run to ask for ``path``: each test file (one a
    worker) opens every page, and a full-page screenshot costs 1 to 5 s of CPU, so one is
    enough. The claim is a hidden file beside it; pytest_configure emptied the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.close(os.open(path.with_name(f".{path.name}.claimed"), os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return False
    return True


def _visits(browser, site, viewport: dict, folder):
    """A function that opens a page once at this size, settled and screenshotted into folder
    (by whichever worker opens it first), and keeps it open; and the context it opens them in.

    One browser context for all of them, each page a tab of it: a fresh context per page cost
    Chromium about 1.4 CPU-s more a visit (3.4 against 2.0, measured over the 17 pages at
    1280 px), 40 visits a run. The pages share the context's cache and storage, as one
    reader's tabs do; a test that needs a first visit (nothing cached, nothing stored) opens
    its own page with open_page."""
    opened: dict[str, Visit] = {}
    context = browser.new_context(viewport=viewport, accept_downloads=True)
    context.set_default_timeout(BUSY_MACHINE_MS)

    def visit(docname: str) -> Visit:
        if docname not in opened:
            v = open_page(browser, site, f"{docname}.html", context=context)
            shot = folder / f"{docname}.png"
            if TAKE_SCREENSHOTS and _first_to_claim(shot):
                screenshot(v.page, shot, full_page=True)
            opened[docname] = v
        # the tab a test works in is in front, as the one a reader looks at is: a tab behind
        # others gets no animation frames, and a click waits for them (11 s a click)
        opened[docname].page.bring_to_front()
        return opened[docname]

    return visit, context


@pytest.fixture(scope="session")
def visits(browser, site):
    """Each page of the book opened once at 1280 px, settled, screenshotted, and kept open.

    Tests that change a page (turn an explorer's controls, open a solution) put it back as
    they found it, so that every test of a run shares one visit per page and width."""
    visit, context = _visits(browser, site, DESKTOP, SCREENSHOTS)
    yield visit
    context.close()


@pytest.fixture(scope="session")
def phone_visits(browser, site):
    """The same at a phone's 390 px (screenshots in _build/screenshots/phone/)."""
    visit, context = _visits(browser, site, PHONE, SCREENSHOTS / "phone")
    yield visit
    context.close()
