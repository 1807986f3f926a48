"""The built site's learner zip, used as a reader uses it, and the site free of placeholders.

A reader who has only the website downloads learner-edition.zip, unzips it, and follows its
README.md. The test does the same in an empty folder: it runs the README's set-up block as
written (so a wrong README fails it), starts the README's JupyterLab command on the folder,
and runs chapter 3 top to bottom in the environment the set-up made. Nothing of the book's
own environment or folder is visible to it (no PYTHONPATH, no .venv on PATH): `tx` must come
from the zip's wheel.

One setting differs from a reader's: ``TX_TORCH_INDEX=none``. The machines the tests run on
reach the package registries only, not PyTorch's wheel index, and their pip finds PyTorch's
CPU build (torch==2.13.0+cpu, the lock's) in a local folder of wheels; with the setting,
install.py adds no index and pip asks no host but those it is configured for. Where pip
could not find that wheel, the install fails at once with pip's "no matching distribution",
rather than reaching for another host.

Timing, measured 2026-11-24 on the shared 2-core machine while a book build and four other
sessions' work ran beside it (so an upper bound, not the CI figure): the README's set-up,
from pip's cache, the local wheel folder and PyPI, 823 s of wall time (about 2 min of CPU);
chapter 3, 71 s; starting JupyterLab, 28 s; the whole file 15 min 45 s.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from sitekit import BOOK, HTML

ZIP = HTML / "learner-edition.zip"
CHAPTER = "03_self_attention_vectors.ipynb"
PLACEHOLDERS = (b"&repository_url", b"your-org", b'href=""')

# Run inside the set-up's environment, with its own Python: the chapter, executed as Run All
# executes it (a check cell's error does not stop it, any other does), and what each cell gave.
RUN_CHAPTER = r"""
import json, sys
import nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(nb, kernel_name="python3", timeout=600, allow_errors=False).execute()
print(json.dumps([
    {"tags": c.metadata.get("tags", []), "count": c.execution_count,
     "errors": [(o.ename, o.evalue) for o in c.outputs if o.output_type == "error"]}
    for c in nb.cells if c.cell_type == "code" and c.source.strip()]))
"""


def _reader_env(home: Path) -> dict[str, str]:
    """This machine's environment as a reader's shell has it: nothing of the book's own set-up."""
    venv_bin = str(BOOK / ".venv" / "bin")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "JUPYTER_PATH", "JUPYTER_CONFIG_DIR")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and Path(p).resolve() != Path(venv_bin).resolve())
    env["JUPYTER_DATA_DIR"] = str(home / "jupyter-data")  # no kernel of this machine's own Jupyter
    env["JUPYTER_RUNTIME_DIR"] = str(home / "jupyter-runtime")
    env["TX_TORCH_INDEX"] = "none"  # see the module's docstring
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _blocks(readme: str) -> list[str]:
    return re.findall(r"^```bash\n(.*?)^```", readme, re.S | re.M)


class ReaderSetUp:
    """The zip unzipped into an empty folder and the README's first bash block run there as
    written, in a process of its own: conftest.py starts it with the run, so that pip's
    minutes (about 100 s of one core) pass beside the browser tests, not before this file's."""

    def __init__(self, root: Path):
        with zipfile.ZipFile(ZIP) as archive:
            archive.extractall(root)
        (self.folder,) = [p for p in root.iterdir() if p.is_dir()]
        readme = (self.folder / "README.md").read_text(encoding="utf-8")
        self.blocks = _blocks(readme)
        self.readme = readme
        self.env = _reader_env(root)
        self.log = root / "set-up.log"
        self.started = time.monotonic()
        self.process = None
        if len(self.blocks) >= 2:
            with self.log.open("w") as out:
                self.process = subprocess.Popen(["bash", "-e", "-x", "-c", self.blocks[0]], cwd=self.folder,
                                                env=self.env, stdout=out, stderr=subprocess.STDOUT, text=True)

    def result(self) -> dict:
        """Wait for the set-up to end; its environment, its output and how long it took."""
        assert self.process, f"README.md should have a set-up block and a start block:\n{self.readme}"
        try:
            code = self.process.wait(timeout=max(1, 1800 - (time.monotonic() - self.started)))
        except subprocess.TimeoutExpired:
            self.process.kill()
            pytest.fail("the README's set-up ran past 30 minutes")
        seconds = time.monotonic() - self.started
        out = self.log.read_text()
        assert code == 0, f"the README's set-up failed:\n{self.blocks[0]}\n{out[-12000:]}"
        print(f"\nREADME set-up: {seconds:.0f} s (beside the other tests)")
        return {"env": self.env, "python": self.folder / ".venv" / "bin" / "python", "start": self.blocks[1],
                "stdout": out, "seconds": seconds}

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def unzipped(reader_set_up) -> Path:
    if reader_set_up is None:
        pytest.fail(f"no {ZIP}: run `make book` first.")
    return reader_set_up.folder


@pytest.fixture(scope="module")
def set_up(reader_set_up, unzipped) -> dict:
    """The README's first bash block, run as written in the unzipped folder; its environment and output."""
    return reader_set_up.result()


def test_the_zip_holds_tx_its_lock_and_installer():
    with zipfile.ZipFile(ZIP) as archive:
        names = {Path(n).name for n in archive.namelist()}
    assert {"README.md", "install.py", "requirements-learner.lock", "requirements-learner.txt",
            "jupyterlab-settings.json", CHAPTER} <= names
    wheels = [n for n in names if re.fullmatch(r"tx-.+\.whl", n)]
    assert len(wheels) == 1, names


def test_the_install_says_its_size_before_it_downloads(set_up):
    out = set_up["stdout"]
    said = re.search(r"about ([\d,]+) MB to download, ([\d,]+) MB of it PyTorch's CPU build", out)
    assert said, out[:2000]
    first_pip = out.find("$ python -m pip install")
    assert 0 <= said.start() < first_pip, "the size comes after the first download"
    assert "--quiet" not in out and " -q " not in out, "pip's progress hidden"


def test_tx_comes_from_the_zips_wheel_with_its_checkpoints(set_up, unzipped):
    code = "import tx, tx.checkpoint as c; from pathlib import Path; print(tx.__file__); print(Path(c.BOOK_MODEL).is_file())"
    done = subprocess.run([str(set_up["python"]), "-c", code], cwd=unzipped.parent, env=set_up["env"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    path, has_checkpoint = done.stdout.split()
    assert Path(path).resolve().is_relative_to((unzipped / ".venv").resolve()), path
    assert has_checkpoint == "True"


def test_the_environment_is_the_locked_learner_set(set_up, unzipped):
    done = subprocess.run([str(set_up["python"]), "-m", "pip", "list", "--format", "json"], env=set_up["env"],
                          capture_output=True, text=True, timeout=120)
    installed = {p["name"].lower().replace("_", "-"): p["version"] for p in json.loads(done.stdout)}
    lock = (unzipped / "requirements-learner.lock").read_text()
    pinned = {m.group(1).lower(): m.group(2) for m in re.finditer(r"^([A-Za-z0-9._-]+)==(\S+)", lock, re.M)}
    assert {name: installed.get(name) for name in pinned} == pinned
    assert not {"jupyter-book", "pytest", "playwright", "onnx", "sphinx"} & set(installed)


def test_jupyterlab_starts_on_the_notebooks(set_up, unzipped):
    """The README's start command, with what a headless machine needs: no browser, a free port, root allowed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = shlex.split(set_up["start"].strip()) + [
        "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
        "--IdentityProvider.token=tx-test"]
    server = subprocess.Popen(command, cwd=unzipped, env=set_up["env"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/api/contents/{CHAPTER}?content=0&token=tx-test"
    try:
        deadline, answer = time.monotonic() + 120, None
        while answer is None and time.monotonic() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    answer = json.load(response)
            except OSError:
                time.sleep(0.5)
        assert answer is not None, f"JupyterLab did not serve {CHAPTER}: {server.poll()=}"
        assert answer["type"] == "notebook" and answer["name"] == CHAPTER
        # install.py's defaults for the environment: no "Jupyter news?" toast, no update check
        settings = f"http://127.0.0.1:{port}/lab/api/settings/@jupyterlab/apputils-extension:notification?token=tx-test"
        with urllib.request.urlopen(settings, timeout=30) as response:  # overrides.json sets the defaults
            defaults = {k: v.get("default") for k, v in json.load(response)["schema"]["properties"].items()}
        assert defaults["fetchNews"] == "false" and defaults["checkForUpdates"] is False, defaults
    finally:
        server.terminate()
        try:
            _, err = server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.communicate()


def test_chapter_3_runs_top_to_bottom_and_only_the_checks_fail(set_up, unzipped):
    start = time.monotonic()
    done = subprocess.run([str(set_up["python"]), "-c", RUN_CHAPTER, CHAPTER], cwd=unzipped, env=set_up["env"],
                          capture_output=True, text=True, timeout=900)
    print(f"\nchapter 3 in the reader's environment: {time.monotonic() - start:.0f} s")
    assert done.returncode == 0, f"a cell that is no check failed:\n{done.stderr[-6000:]}"
    cells = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(c["count"] is not None for c in cells), "a cell did not run"
    checks = [c for c in cells if "check" in c["tags"]]
    assert checks, "chapter 3 has no check cells"
    others = [c for c in cells if "check" not in c["tags"] and c["errors"]]
    assert not others, others
    for check in checks:
        assert len(check["errors"]) == 1, check
        (name, message), = check["errors"]
        assert name == "CheckFailed" and "still raises NotImplementedError" in message, check


def test_no_placeholder_in_any_page_or_in_the_zip():
    """Where repository.url is not set, nothing names a made-up address or links nowhere."""
    found = []
    pages = sorted(HTML.rglob("*.html"))
    assert len(pages) > 10, f"only {len(pages)} pages in {HTML}: run `make book` first"
    for path in pages:
        data = path.read_bytes()
        found += [f"{path.relative_to(HTML)}: {p.decode()}" for p in PLACEHOLDERS if p in data]
    with zipfile.ZipFile(ZIP) as archive:
        for name in archive.namelist():
            if name.endswith((".md", ".ipynb", ".py", ".txt", ".lock")):
                data = archive.read(name)
                found += [f"{ZIP.name}/{name}: {p.decode()}" for p in PLACEHOLDERS if p in data]
    assert not found, found
