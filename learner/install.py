"""Set up the learner edition: install what its notebooks need into this Python's environment.

Run it from the unzipped learner edition, with the Python of a new virtual environment
(README.md next to it says how):

    python3.11 -m venv .venv
    .venv/bin/python install.py

On Linux x86-64 with Python 3.11 it installs ``requirements-learner.lock``: the exact
versions the book was tested with, each checked against its SHA-256. PyTorch is its CPU
build, from PyTorch's CPU wheel index (PyPI's Linux build of PyTorch brings several GB of
CUDA libraries that a CPU does not use). On any other system (macOS, Windows, another
Python) it installs ``requirements-learner.txt``, the same packages without exact versions.
Then it installs ``tx``, the book's package, from the wheel in this folder.

It says how much it will download before it starts, and leaves pip's progress visible.

Environment:

``TX_TORCH_INDEX``
    The index PyTorch's CPU build comes from on Linux x86-64 (default
    https://download.pytorch.org/whl/cpu). Set it to ``none`` where pip can already find
    ``torch==2.13.0+cpu`` through its own configuration (a folder of wheels in its
    ``find-links``, a mirror): then no index is added and pip asks only the hosts it is
    configured for. The book's own test of this file does that, because its machines reach
    the package registries only.
"""

from __future__ import annotations

import json
import os
import platform
import re
from importlib import metadata
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOCK = HERE / "requirements-learner.lock"
UNLOCKED = HERE / "requirements-learner.txt"
# JupyterLab's settings for the learner edition, the book's learner/lab-config/settings/overrides.json
LAB_SETTINGS = HERE / "jupyterlab-settings.json"
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
TORCH_INDEX_ENV = "TX_TORCH_INDEX"
SIZES = re.compile(r"^# tx-download-bytes: total=(\d+) torch=(\d+)", re.M)


def fail(message: str) -> None:
    print(f"install.py: {message}", file=sys.stderr)
    raise SystemExit(2)


def in_an_environment() -> bool:
    """True in a virtual environment or a conda environment: never install into the system's Python."""
    return sys.prefix != sys.base_prefix or os.environ.get("CONDA_PREFIX") == sys.prefix


def is_locked_platform() -> bool:
    """The lock is for Linux x86-64 and Python 3.11 (what the book's CI runs)."""
    return (sys.platform == "linux" and platform.machine().lower() in ("x86_64", "amd64")
            and sys.version_info[:2] == (3, 11))


def torch_index() -> str | None:
    """Where PyTorch's CPU build comes from on Linux x86-64; None: pip's own configuration."""
    if not (sys.platform == "linux" and platform.machine().lower() in ("x86_64", "amd64")):
        return None  # PyPI's PyTorch for macOS, Windows and Linux on ARM is a CPU build already
    index = os.environ.get(TORCH_INDEX_ENV, TORCH_INDEX).strip()
    return None if index.lower() in ("", "none") else index


def torch_lines(lock: str) -> str:
    """The lock's requirement for torch, with its hashes, as a requirements file of its own."""
    match = re.search(r"^torch==\S+(?:[ \t]*\\\n[ \t]+--hash=\S+)+", lock, re.M)
    if match is None:
        fail(f"{LOCK.name} names no torch with its hashes: unzip the learner edition again.")
    return match.group(0) + "\n"


def missing(lock: str) -> list[str]:
    """The lock's ``name==version`` pins that this Python does not have installed at that version."""
    wanted = re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+?)(?:[ \t]*\\)?$", lock, re.M)
    have = []
    for name, version in wanted:
        try:
            if metadata.version(name) == version:
                have.append(name)
        except metadata.PackageNotFoundError:
            pass
    return [f"{name}=={version}" for name, version in wanted if name not in have]


def megabytes(n: int) -> str:
    return f"{n / 1e6:,.0f} MB"


def duration(n_bytes: int, mbit_per_s: float) -> str:
    seconds = n_bytes * 8 / (mbit_per_s * 1e6)
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def pip(*args: str, advice: str = "") -> None:
    # --no-compile: Python compiles a module the first time it is imported and keeps the
    # result, so only what the notebooks import is ever compiled (a few seconds, once), not
    # all of PyTorch, JupyterLab and their tools: the install takes a third less time.
    args = ("--no-compile", *args)
    command = [sys.executable, "-m", "pip", "install", *args]
    print("\n$ python -m pip install " + " ".join(args), flush=True)
    done = subprocess.run(command)
    if done.returncode != 0:
        fail(f"pip stopped with exit status {done.returncode} (its message is above). Nothing of this "
             "folder was changed: fix what pip says (often the network) and run install.py again; "
             f"what is already installed is not downloaded again.{advice}")


def quiet_jupyterlab(prefix: Path, settings: Path = LAB_SETTINGS) -> Path:
    """JupyterLab's defaults for this environment, from ``settings`` (the zip's
    jupyterlab-settings.json): no "get notified about Jupyter news?" toast over a notebook's
    corner, and no update check. Kept in the environment's own settings (overrides.json), so a
    learner's own settings still win; other overrides are kept."""
    path = prefix / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    current = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    for plugin, values in json.loads(settings.read_text(encoding="utf-8")).items():
        current.setdefault(plugin, {}).update(values)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(current, indent=2) + "\n", encoding="utf-8")
    return path


def main() -> None:
    if sys.version_info < (3, 10):
        fail(f"this is Python {platform.python_version()}; the book needs Python 3.11 (3.10 or later works, "
             "unlocked). Create the environment with it: python3.11 -m venv .venv")
    if not in_an_environment():
        fail(f"{sys.executable} is not a virtual environment's Python, and install.py installs into the "
             "Python that runs it. Create one in this folder and run install.py with its Python:\n"
             "    python3.11 -m venv .venv\n    .venv/bin/python install.py\n"
             "(on Windows: py -3.11 -m venv .venv, then .venv\\Scripts\\python install.py)")
    wheels = sorted(HERE.glob("tx-*.whl"))
    if len(wheels) != 1:
        fail(f"expected one tx wheel (tx-*.whl) in {HERE}, found {len(wheels)}: unzip the learner edition "
             "again and run install.py from its folder.")
    for needed in (LOCK, UNLOCKED, LAB_SETTINGS):
        if not needed.is_file():
            fail(f"{needed.name} is missing from {HERE}: unzip the learner edition again.")
    lock = LOCK.read_text(encoding="utf-8")
    index = torch_index()
    sizes = SIZES.search(lock)
    locked = is_locked_platform()

    print(f"Installing the learner edition's packages into {sys.prefix}")
    todo = missing(lock) if locked else None
    if todo == []:
        print(f"Every package of {LOCK.name} is installed already, at its version: nothing to download. "
              "pip checks each one below.")
    elif todo and sizes and not any(t.startswith("torch==") for t in todo):
        print(f"PyTorch is installed already; {len(todo)} other packages are not, at most about "
              f"{megabytes(int(sizes.group(1)) - int(sizes.group(2)))} to download.")
    elif sizes:
        total, torch = int(sizes.group(1)), int(sizes.group(2))
        where = "this" if locked else "a Linux x86-64"
        print(f"On {where} machine that is about {megabytes(total)} to download, {megabytes(torch)} of it "
              f"PyTorch's CPU build: about {duration(total, 20)} at 20 Mbit/s, {duration(total, 100)} at "
              "100 Mbit/s, plus a minute or two to unpack. Packages pip has in its cache are not "
              "downloaded again. pip shows its progress below.")
    if locked:
        print(f"Exact versions from {LOCK.name}, each checked against its SHA-256; PyTorch's CPU build "
              + (f"from {index}." if index else "from where pip's own configuration finds it "
                 f"({TORCH_INDEX_ENV}=none)."))
        with tempfile.TemporaryDirectory() as tmp:
            torch_only = Path(tmp) / "torch.txt"
            torch_only.write_text(torch_lines(lock), encoding="utf-8")
            print("\n[1/3] PyTorch, CPU build")
            where = index or "pip's own configuration"
            pip("--require-hashes", "--no-deps", "-r", str(torch_only), *(["--index-url", index] if index else []),
                advice=f" PyTorch's CPU build comes from {where}: where that cannot be reached, set "
                       f"{TORCH_INDEX_ENV} to an index or mirror you can reach, or to none to use pip's own "
                       "configuration (README.md, \"Set-up\").")
        print("\n[2/3] The other packages (JupyterLab, numpy, matplotlib, ...), from PyPI")
        pip("--require-hashes", "--no-deps", "-r", str(LOCK))  # the lock has every package (make lock)
    else:
        print(f"{LOCK.name} is for Linux x86-64 and Python 3.11; this is {platform.system()} {platform.machine()} "
              f"with Python {platform.python_version()}, so the versions come from {UNLOCKED.name}, unlocked.")
        print("\n[1/3] PyTorch and the other packages")
        pip("-r", str(UNLOCKED), *(["--extra-index-url", index] if index else []))
        print("\n[2/3] (nothing more: step 1 installed everything but tx)")
    print("\n[3/3] tx, the book's package, from this folder")
    pip("--no-deps", str(wheels[0]))
    quiet_jupyterlab(Path(sys.prefix))
    jupyter = Path(sys.prefix) / ("Scripts/jupyter.exe" if os.name == "nt" else "bin/jupyter")
    try:
        jupyter = Path(os.path.relpath(jupyter))
    except ValueError:  # on another drive (Windows)
        pass
    print(f"\nDone. Start JupyterLab on the notebooks with:\n    {jupyter} lab")


if __name__ == "__main__":
    main()
