"""Fixtures for the tests in real JupyterLab: the learner edition, a JupyterLab server on it,
and Debian's Chromium driven by Playwright (as tests/site uses it).

Each pytest process (each xdist worker) writes its own learner edition into a temporary
folder (``python -m tx.exercises learner``), starts one ``jupyter lab`` on it with a random
token, on 127.0.0.1 and a free port, with its own settings, workspaces and runtime folders,
and one headless Chromium. The server's kernels import ``tx`` from this checkout and never
get ``TX_EXPLORER_STATIC`` (that is the book build's switch), so the explorers are what a
learner's kernel gives. They do get ``TX_TRAINING_REPLAY``: a chapter's training run that the
build already did (``make test`` builds first) is replayed from its record, not trained a
second time (tx/training_record.py); everything else in the chapter runs.

Run with ``make lab-test`` (``make test`` does).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS), str(TESTS / "site")]
from notebook_tools import CHAPTERS, ROOT  # noqa: E402
from sitekit import CHROMIUM_ARGS, chromium_path  # noqa: E402

from tx.exercises import learner  # noqa: E402

# JupyterLab's own settings for this server (user_settings_dir): every cell in the page, so the
# tests see each cell's output (the default windowing leaves far-off cells out of the DOM); no
# autosave, so the file a test reads is the one its own File > Save wrote (an autosave that
# begins while the last cell runs lands after it and clears the dirty mark; the likeliest cause
# of CI's 2026-11-24 chapter 6 saved with a code cell never run). The news and update toasts
# are off in make lab's own settings, below.
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}
# make lab's own settings (Makefile, LAB_CONFIG): no nbgrader menus, no news toast.
LAB_CONFIG = ROOT / learner.LAB_CONFIG


@dataclass
class Lab:
    """A running JupyterLab: its base URL, token and the folder it serves."""

    url: str
    token: str
    root: Path
    pid: int

    def api(self, path: str, method: str = "GET"):
        request = urllib.request.Request(f"{self.url}api/{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
        return json.loads(body) if body else None

    def kernel_cpu_seconds(self, notebook: str) -> float:
        """CPU time (user + system, its children's too) of ``notebook``'s kernel so far, for the log."""
        import psutil

        ids = [s["kernel"]["id"] for s in self.api("sessions") if s["path"] == notebook and s.get("kernel")]
        total = 0.0
        for process in psutil.Process(self.pid).children(recursive=True):
            try:
                if any(i in " ".join(process.cmdline()) for i in ids):
                    t = process.cpu_times()
                    total += t.user + t.system + t.children_user + t.children_system
            except psutil.Error:
                pass
        return total

    def shut_down_kernels(self, notebook: str) -> None:
        """End the kernel of ``notebook``'s session: the next chapter gets the CPU to itself."""
        for session in self.api("sessions"):
            if session["path"] == notebook:
                self.api(f"sessions/{session['id']}", method="DELETE")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def edition(tmp_path_factory) -> Path:
    """The learner edition, written by the same code as `make lab` and the website's zip."""
    from tx.exercises.learner import write_learner_edition

    out = tmp_path_factory.mktemp("workbook")
    write_learner_edition(out, CHAPTERS)
    return out


@pytest.fixture(scope="session")
def lab(edition, tmp_path_factory) -> Lab:
    """`jupyter lab` on the learner edition, as `make lab` starts it, without a browser of its own."""
    home = tmp_path_factory.mktemp("jupyter")
    for name, value in SETTINGS.items():
        path = home / "settings" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    env = {k: v for k, v in os.environ.items() if k not in ("TX_EXPLORER_STATIC", "TX_TRAINING_RECORD")}
    # A training run the book build already did (recorded in _build/training-record/ by
    # _ext/book_site.py) is replayed, not trained again (tx/training_record.py); for its key to
    # match, each kernel gets the build's share of the cores: one of two, for two workers.
    env["TX_TRAINING_REPLAY"] = str(ROOT / "_build" / "training-record")
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    env.setdefault("OMP_NUM_THREADS", str(max(1, len(os.sched_getaffinity(0)) // workers)))
    env.update(PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
               JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
               JUPYTER_CONFIG_PATH=str(LAB_CONFIG))
    token = secrets.token_hex(16)
    log = (home / "server.log").open("w")
    for _ in range(5):  # another process may take the port between choosing and binding
        port = _free_port()
        command = [
            sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
            f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={edition}",
            f"--LabServerApp.user_settings_dir={home / 'settings'}",
            f"--LabServerApp.workspaces_dir={home / 'workspaces'}",
            f"--LabServerApp.app_settings_dir={LAB_CONFIG / 'settings'}",
            # window.jupyterapp, through which the tests open each notebook in the one page
            "--LabApp.expose_app_in_browser=True",
        ] + (["--allow-root"] if os.geteuid() == 0 else [])
        server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}/"
        started = Lab(url=url, token=token, root=edition, pid=server.pid)
        deadline = time.monotonic() + 120
        ready = False
        while not ready and time.monotonic() < deadline and server.poll() is None:
            try:
                started.api("status")
                ready = True
            except (OSError, urllib.error.URLError):
                time.sleep(0.5)
        if ready:
            break
        server.kill()
        server.wait()
    else:
        pytest.fail(f"jupyter lab did not start; its log: {home / 'server.log'}")
    try:
        yield started
    finally:
        server.terminate()  # shuts its kernels down too
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS,
                                             headless=True)
        try:
            yield browser
        finally:
            browser.close()


class LabPage:
    """One JupyterLab page for all the chapters a worker tests, each notebook opened in it
    through JupyterLab's own command (``docmanager:open``) and closed after its test.

    Opening a notebook in a freshly loaded JupyterLab cost 8 to 11 CPU-s (its kernel's start
    included), once for each of the fifteen chapters. A test that fails throws its page away
    (``discard``), so the next one starts from a newly loaded JupyterLab, in a workspace of its
    own: JupyterLab saves a workspace's open documents, and a new page in the old workspace
    reopened the failed test's notebook beside the next one, which then failed too."""

    def __init__(self, browser, lab: Lab, name: str):
        self.browser, self.lab, self.name = browser, lab, name
        self.context = self.page = None
        self.loads = 0  # JupyterLab pages loaded, each in a workspace of its own
        self.errors: list[str] = []

    def open(self, notebook: str):
        """The page, showing ``notebook`` and nothing else, with its cells in the DOM."""
        if self.page is None:
            self.loads += 1
            self.context = self.browser.new_context(viewport={"width": 1280, "height": 1000})
            self.page = self.context.new_page()
            self.page.on("pageerror", lambda e: self.errors.append(str(e)))
            workspace = f"{self.name}-{self.loads}"
            self.page.goto(f"{self.lab.url}lab/workspaces/{workspace}?token={self.lab.token}")
            self.page.wait_for_function("() => window.jupyterapp !== undefined", timeout=120_000)
            self.page.evaluate("async () => { await window.jupyterapp.restored; }")
        self.errors.clear()
        self.page.evaluate("async (path) => { await window.jupyterapp.commands.execute("
                           "'docmanager:open', {path, factory: 'Notebook'}); }", notebook)
        self.page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
        return self.page

    def close_notebooks(self) -> None:
        """Every document in the main area closed, without JupyterLab's "save changes?" dialog."""
        self.page.evaluate("""() => { for (const w of Array.from(window.jupyterapp.shell.widgets('main')))
                                          w.dispose(); }""")
        self.page.wait_for_function("() => !document.querySelector('.jp-Notebook')", timeout=30_000)

    def discard(self) -> None:
        if self.context is not None:
            self.context.close()
        self.context = self.page = None


@pytest.fixture(scope="session")
def lab_page(browser, lab):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    page = LabPage(browser, lab, f"tests-{worker}")
    try:
        yield page
    finally:
        page.discard()
