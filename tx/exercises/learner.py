"""The learner edition: every chapter without solutions, in Markdown any Jupyter renders.

A chapter marks each exercise's parts with cell tags: ``stub`` (the learner's cell,
ending in ``raise NotImplementedError``), ``solution`` (the reference answer, between
the ``solution-start`` and ``solution-end`` directives) and ``check`` (calls a checker
in :mod:`tx.exercises`). The learner edition

- keeps the stub and the check and drops the solution with its two directive cells;
- turns the book's MyST markup (directives, roles, equation labels), which only Jupyter
  Book understands, into plain Markdown that JupyterLab, Jupyter Notebook and VS Code
  render: an exercise's title becomes a heading, ``{eq}`` references the equation numbers
  the website shows, ``{cite:p}`` an author-year citation from ``references.bib``;
- tags every check cell ``raises-exception``, so Run All goes past a check that fails
  because its exercise is not solved yet, and every stub cell (the learner's answer) too, so
  Run All goes past an answer that raises as it runs; and says so under each ``## Exercises``;
- folds away, with JupyterLab's ``jupyter.source_hidden`` metadata, what the website hides:
  a ``remove-cell`` cell (the asserts that keep the prose true, still run) and a
  ``remove-input`` cell's code (one that writes a sentence of the prose);
- opens with a cell that says what to install when ``import tx`` fails.

It never overwrites a notebook the learner has worked in: a notebook is replaced only
while its cells' sources are what an earlier run wrote (one digest per cell, recorded in
``.tx-learner.json``; outputs, execution counts and metadata do not count, so a notebook
that was only run gets the new edition), unless ``--force`` is given. It says which
notebooks it kept and which of their cells were changed.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import re
import stat
import sys
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from .learner_notebook import (  # re-exported: the book's site and the tests import them from here
    _source, chapter_label, citations, equation_numbers, is_solution_cell, learner_notebook, strip_solutions,
    to_markdown,
)
# Re-exported for them alone, unused here:
from .learner_notebook import CODE_EQUATION_LABEL, EXPECTED_FAILURES, SETUP_CELL, number_equation_labels  # noqa: F401

__all__ = [
    "is_solution_cell", "strip_solutions", "to_markdown", "learner_notebook", "write_learner_edition", "main",
    "MANIFEST", "README", "Written", "write_keeping", "readme", "run_all_times", "run_all_sentence", "slow_note",
]

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = ROOT / "chapters"
MANIFEST = ".tx-learner.json"
"""The file, in the output folder, recording what each notebook was when this tool wrote it."""

README = """\
# The Transformer, Run and Tested: the learner edition

Every chapter of the book as a Jupyter notebook, with the solutions of the exercises
taken out. Each exercise has a cell for your function and, under it, a check cell that
tests your answer and gives a hint until it is right.

## Set-up

You need Python 3.11 and a connection to the package registries. Everything else the
notebooks need is in this folder or named by it: the wheel `tx-*.whl`, the book's package
`tx` (which the checks compare your answers with) with the trained models the chapters load;
`requirements-learner.lock`, the exact versions of the packages the book was tested with;
`install.py`, which installs them; and `jupyterlab-settings.json`, the settings it gives
JupyterLab (no news pop-up, no update check; your own settings still win).

In a terminal, in this folder (the one that holds this README), make a virtual
environment and run `install.py` with its Python:

```bash
python3.11 -m venv .venv
.venv/bin/python install.py
```

Before it starts, `install.py` says how much it will download and how long that takes
({download}), then shows pip's progress. On Linux x86-64 with Python 3.11 it
installs the exact versions of `requirements-learner.lock`, each checked against its
SHA-256, and PyTorch's CPU build from PyTorch's CPU wheel index (the PyTorch that PyPI has
for Linux brings several GB of libraries for NVIDIA GPUs, which the book does not use).
Elsewhere (macOS, Windows, another Python), where the lock does not apply, it installs
`requirements-learner.txt`, the same packages without exact versions. On Windows the two
commands are `py -3.11 -m venv .venv` and `.venv\\Scripts\\python install.py`. If your pip
already has PyTorch's CPU build at hand (a folder of wheels or a mirror in its
configuration), set `TX_TORCH_INDEX=none` and `install.py` adds no index to pip's own.

Then start JupyterLab on the notebooks:

```bash
.venv/bin/jupyter lab
```

(On Windows `.venv\\Scripts\\jupyter lab`; as root, add `--allow-root`.) JupyterLab
opens in your browser on this folder. If the first code cell of a notebook says `tx` is
missing, the notebook runs on a Python where it is not installed: choose the kernel
"Python 3 (ipykernel)" of this folder's `.venv`.
{clone}
## Working through a chapter

Run the notebook from the top (Run > Run All Cells). Until you solve an exercise, its
check fails with a short hint: that is expected, and the other cells still run. Write
your function in the cell that ends in `raise NotImplementedError`, run that cell, then
run the check under it. A check whose function is missing (its cell stopped on an error)
says so in one line, and names the error.

Some cells are folded to one grey line ending in •••: the book's own checks of its text (the
asserts that keep a sentence about a result true), and code that only lays out a table or a
figure. Run All runs them too; click the line to open one. Where a chapter shows tx's own
answer to one of its exercises, that cell holds it as a comment, to run once you have
written yours (the cell says how).
"""

CLONE = """
With a clone of the book's repository, {repository}, `make lab` there does all of
this for you: it installs the book's locked environment (these packages, and the tools
that build and test the book) into the clone's `.venv`, writes the learner edition into
`workbook/` and opens JupyterLab on it.
"""
"""The README's paragraph on the book's repository, only where ``repository.url`` names one."""

LAB_CONFIG = "learner/lab-config"
"""The JupyterLab configuration ``make lab`` gives a learner (the Makefile's LAB_CONFIG), from the
book's root: no nbgrader menus or server extensions, no news toast (settings/overrides.json)."""

LEARNER_INSTALL = {
    "install.py": "learner/install.py",
    "requirements-learner.lock": "requirements-learner.lock",
    "requirements-learner.txt": "requirements-learner.txt",
    # what `make lab` gives JupyterLab too (its app_settings_dir): install.py writes it into the
    # learner's environment
    "jupyterlab-settings.json": f"{LAB_CONFIG}/settings/overrides.json",
}
"""What the zip carries besides the notebooks (and the tx wheel): its name there, and its path
from the book's root."""

RUN_ALL_TIMES = ROOT / "bench" / "run_all_times.json"
"""Each learner notebook's Run All time, measured by ``bench/run_all_times.py``."""
LONG_RUN_ALL_S = 120  # a notebook slower than this says so at its top: a learner should not think it hangs


def run_all_times(path: str | Path = RUN_ALL_TIMES) -> dict[str, Any]:
    """The measured Run All times (``{"chapters": {name: {"run_all_s": ...}}, "machine": ...}``), {} if none."""
    path = Path(path)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def duration(seconds: float) -> str:
    """``95`` -> "1 min 35 s"; ``40`` -> "40 s"."""
    minutes, secs = divmod(round(seconds), 60)
    if not minutes:
        return f"{secs} s"
    return f"{minutes} min {secs} s" if secs else f"{minutes} min"


def run_all_sentence(name: str, times: dict[str, Any], subject: str = "Run All of this notebook") -> str | None:
    """"Run All of this notebook took 2 min 35 s on the book's CI machine (2 CPU cores)", or None if not measured."""
    entry = times.get("chapters", {}).get(name, {})
    if entry.get("run_all_s") is not None:
        took = duration(entry["run_all_s"])
    elif entry.get("at_least_s") is not None:  # stopped by the bench's time-out: a lower bound
        took = f"over {duration(entry['at_least_s'])} (it was stopped there)"
    else:
        return None
    cores = times.get("machine", {}).get("cores")
    where = f"{cores} CPU cores" if cores else "a CPU"
    busy = ", measured while it was busy with other work: expect less" if times.get("under_load") else ""
    return f"{subject} took {took} on the book's CI machine ({where}{busy})"


def _seconds(name: str, times: dict[str, Any]) -> float:
    entry = times.get("chapters", {}).get(name, {})
    return entry.get("run_all_s") or entry.get("at_least_s") or 0.0


def slow_note(name: str, times: dict[str, Any], what: str = "This notebook") -> str | None:
    """What a notebook slower than ``LONG_RUN_ALL_S`` seconds says under its title; None for a quicker one."""
    sentence = run_all_sentence(name, times, subject="Run All")
    if sentence is None or _seconds(name, times) <= LONG_RUN_ALL_S:
        return None
    return f"{what} takes over {LONG_RUN_ALL_S // 60} minutes to run from the top. {sentence}."


def _repository(root: Path) -> str:
    """``repository.url`` of the book's ``_config.yml``, or "" where it is empty or missing.

    The value may follow a YAML anchor (``url: &repository_url "https://..."``) and be quoted.
    """
    config = root / "_config.yml"
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    block = re.search(r"^repository:[ \t]*\n((?:[ \t]+.*\n?|[ \t]*\n)*)", text, re.M)
    url = re.search(r"^[ \t]+url:[ \t]*(?:&\S+[ \t]*)?(\"[^\"]*\"|'[^']*'|[^\s#]*)", block.group(1), re.M) if block else None
    return url.group(1).strip("\"'").strip() if url else ""


def download_size(lock: Path) -> str:
    """How much the learner's install downloads, from the line ``make lock`` writes into the lock."""
    text = lock.read_text(encoding="utf-8") if lock.is_file() else ""
    match = re.search(r"^# tx-download-bytes: total=(\d+) torch=(\d+)", text, re.M)
    if match is None:
        return "a few hundred MB"
    total, torch = (int(n) / 1e6 for n in match.groups())
    return f"on Linux about {total:,.0f} MB, {torch:,.0f} MB of it PyTorch"


def readme(root: Path) -> str:
    """The learner edition's README.md for the book in ``root``: the clone paragraph only with a repository."""
    repository = _repository(root)
    clone = CLONE.format(repository=repository) if repository else ""
    return README.format(download=download_size(root / "requirements-learner.lock"), clone=clone)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def learner_files(chapters: str | Path = CHAPTERS) -> dict[str, bytes]:
    """``{file name: contents}`` of the learner edition of every ``chapters/*.ipynb``, README.md included."""
    chapters = Path(chapters).resolve()
    sources = sorted(chapters.glob("*.ipynb"))
    if not sources:
        raise FileNotFoundError(f"no notebooks in {chapters}: pass --chapters with the book's chapters folder.")
    root = chapters.parent
    equations, cites = equation_numbers(chapters), citations(root / "references.bib")
    files = {"README.md": readme(root).encode("utf-8")}
    times = run_all_times(root / "bench" / "run_all_times.json")
    for path in sources:
        chapter = chapter_label(path.name)
        slow = slow_note(path.name, times)
        notebook = learner_notebook(json.loads(path.read_text(encoding="utf-8")), equations, cites, chapter, slow)
        files[path.name] = (json.dumps(notebook, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
    return files


@dataclass
class Written:
    """What :func:`write_learner_edition` did: the files it wrote, the changed ones it kept, and why.

    Unpacks as ``written, kept = write_learner_edition(...)``.
    """

    written: list[Path]  #: the files written (one already as the edition has it is left alone)
    kept: list[Path]  #: the files the learner changed, left as they were
    why: dict[str, str] = field(default_factory=dict)
    """``{file name: why it was kept}``, e.g. "you changed cell 12 (exercise 3.1's answer)"."""

    def __iter__(self) -> Iterator[list[Path]]:
        return iter((self.written, self.kept))


def _cell_digests(notebook: dict[str, Any]) -> list[str]:
    """One digest per cell, of its type and source, and of its nbgrader metadata where it has some (a
    course's cell: its points, whether it is graded); outputs, counts, ids and other metadata are not
    the learner's or the teacher's work."""
    # 16 hex digits (64 bits) tell a learner's edit from the edition's cell surely enough, and keep the manifest small.
    def text(cell: dict[str, Any]) -> str:
        grading = cell.get("metadata", {}).get("nbgrader")
        extra = "" if grading is None else "\0" + json.dumps(grading, sort_keys=True)
        return f"{cell.get('cell_type', '')}\0{_source(cell)}{extra}"

    return [_digest(text(c).encode("utf-8"))[:16] for c in notebook.get("cells", [])]


def _record(name: str, data: bytes) -> str | dict[str, Any]:
    """The manifest's entry for a file this tool writes: a notebook's whole-file and per-cell digests."""
    if not name.endswith(".ipynb"):
        return _digest(data)
    return {"sha256": _digest(data), "cells": _cell_digests(json.loads(data))}


def _exercise_of(cells: list[dict[str, Any]], index: int) -> str:
    """" (exercise 3.1's answer)" for a stub cell, " (exercise 3.1's check)" for a check, else ""."""
    tags = cells[index].get("metadata", {}).get("tags", [])
    part = "answer" if "stub" in tags else "check" if "check" in tags else None
    if part is None:
        return ""
    for cell in reversed(cells[:index]):
        if cell.get("cell_type") == "markdown":
            heading = re.search(r"^#{2,4}\s*Exercise\s*(?:(\d+(?:\.\d+)*)|:\s*(.+?))\s*(?:\(.*)?$", _source(cell), re.M)
            if heading and heading.group(1):
                return f" (exercise {heading.group(1)}'s {part})"
            if heading:  # an appendix's exercises have titles, not numbers
                return f" (the {part} to '{heading.group(2).strip()}')" if part == "answer" else \
                    f" (the {part} of '{heading.group(2).strip()}')"
    return f" (an exercise's {part})"


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _changed_cells(current: dict[str, Any], recorded: list[str]) -> str | None:
    """Which cells of ``current`` differ from the recorded sources, in words; None if none does.

    Cells are matched as a diff matches lines, so a cell the learner inserted does not make
    every cell after it look changed.
    """
    cells = current.get("cells", [])
    digests = _cell_digests(current)
    if digests == recorded:
        return None
    changed, added, deleted = [], [], 0
    matcher = difflib.SequenceMatcher(a=recorded, b=digests, autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            continue
        edited = min(a1 - a0, b1 - b0)  # a replaced run: cell for cell, then what is left over
        changed += [f"{i + 1}{_exercise_of(cells, i)}" for i in range(b0, b0 + edited)]
        added += [f"{i + 1}{_exercise_of(cells, i)}" for i in range(b0 + edited, b1)]
        deleted += (a1 - a0) - edited
    parts = []
    for verb, which in (("changed", changed), ("added", added)):
        if which:
            parts.append(f"you {verb} cell{'s' if len(which) > 1 else ''} {_and(which)}")
    if deleted:
        parts.append(f"you deleted {deleted} cell{'s' if deleted > 1 else ''}")
    return "; ".join(parts) or "you reordered cells"


def _why_keep(name: str, current: bytes, record: Any, fresh: bytes, manifest: str = MANIFEST) -> str | None:
    """Why the file ``name`` (now ``current``) must be kept, or None if the new edition (``fresh``) may replace it.

    A notebook is the learner's work when its cells' sources differ from what this tool
    wrote; one only run (outputs, execution counts, metadata saved by Jupyter) is not. A
    record from an older version of this tool holds the whole file's digest only: a file
    still equal to it was not touched; otherwise its cells are compared with the fresh
    edition's, and any that differ keep it, since the record cannot tell the learner's edits
    from the edition's.
    """
    if record is None:
        return f"this tool did not write it (no record in {manifest})"
    if record == _digest(current) or (isinstance(record, dict) and record.get("sha256") == _digest(current)):
        return None  # the file as this tool wrote it
    if not name.endswith(".ipynb"):
        return None if isinstance(record, dict) and record.get("sha256") == _digest(current) else "you changed it"
    try:
        notebook = json.loads(current)
        if not isinstance(notebook, dict):
            raise ValueError("not a notebook")
    except ValueError:
        return "it is not a notebook this tool can read"
    if isinstance(record, dict) and isinstance(record.get("cells"), list):
        return _changed_cells(notebook, record["cells"])
    changed = _changed_cells(notebook, _cell_digests(json.loads(fresh)))
    return None if changed is None else (
        f"{changed} (an older version of this tool wrote it, so its cells were compared with the new edition's)")


def write_keeping(out_dir: Path, files: dict[str, bytes], manifest_name: str, force: bool = False) -> Written:
    """Write ``files`` (``{path in out_dir: contents}``) into ``out_dir``, keeping what its user changed.

    A file already there is replaced while it is what an earlier run wrote (recorded in
    ``manifest_name``; for a notebook, its cells' sources), so a notebook that was only run
    gets the new version; one whose cells were changed, or that this tool did not write, is
    kept, unless ``force``. The learner edition and the teachers' course both write this way.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest_path = out_dir / manifest_name
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.exists() else {}
    except json.JSONDecodeError:
        manifest = {}
    if not isinstance(manifest, dict):
        manifest = {}
    written, kept, why = [], [], {}
    for name, data in files.items():
        target = out_dir / name
        if target.exists() and not force:
            current = target.read_bytes()
            if current == data:
                manifest[name] = _record(name, data)
                continue
            reason = _why_keep(name, current, manifest.get(name), data, manifest_name)
            if reason is not None:
                kept.append(target)
                why[name] = reason
                continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        manifest[name] = _record(name, data)
        written.append(target)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return Written(written, kept, why)


def write_learner_edition(out_dir: str | Path, chapters: str | Path = CHAPTERS, zip_path: str | Path | None = None,
                          force: bool = False, wheel: str | Path | None = None) -> Written:
    """Write the learner edition into ``out_dir`` (and optionally a zip); say which files it wrote and kept, and why.

    The zip also carries what its README's set-up installs (``LEARNER_INSTALL``):
    ``install.py``, the learner's requirements and their lock, JupyterLab's settings, and
    ``wheel``, a wheel of tx (``make book`` builds one).

    A notebook already in ``out_dir`` is replaced while its cells' sources are what an
    earlier run wrote (recorded in ``.tx-learner.json``), so a notebook that was only run
    gets the new edition; one whose cells the learner changed, or that this tool did not
    write, is kept, since it holds the learner's answers, unless ``force``. Refuses to
    write into the chapters folder itself, so the solutions are kept.
    """
    chapters, out_dir = Path(chapters).resolve(), Path(out_dir).resolve()
    if out_dir == chapters:
        raise ValueError(f"{out_dir} is the chapters folder: choose another OUTDIR so the solutions are kept.")
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"{out_dir} is a file, not a folder: choose a folder for the learner edition.")
    if zip_path is not None and Path(zip_path).is_dir():
        raise ValueError(f"--zip {zip_path} is a folder: give the zip file's name, e.g. {Path(zip_path) / 'learner-edition.zip'}.")
    if wheel is not None and not (Path(wheel).is_file() and re.fullmatch(r"tx-[^-]+-.*\.whl", Path(wheel).name)):
        raise ValueError(f"--wheel {wheel} is not a wheel of tx: build one with "
                         "`python -m pip wheel --no-deps . -w DIR` and give DIR/tx-*.whl.")
    if wheel is not None and zip_path is None:
        raise ValueError(f"--wheel {wheel} without --zip: the wheel goes into the zip; give --zip FILE too.")
    extras = {name: chapters.parent / path for name, path in LEARNER_INSTALL.items()}
    if zip_path is not None:
        missing = [str(path) for path in extras.values() if not path.is_file()]
        if missing:
            raise FileNotFoundError(f"the zip's set-up needs {', '.join(missing)}: run from the book's folder.")
    files = learner_files(chapters)
    done = write_keeping(out_dir, files, MANIFEST, force)
    if zip_path is not None:
        zip_path = Path(zip_path)
        zip_path.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, data in files.items():  # the fresh edition, whatever the folder holds
                zf.writestr(_entry(name), data)
            # What README.md's set-up installs. Wheels are zips already: stored, not compressed again.
            for name, path in extras.items():
                zf.writestr(_entry(name), path.read_bytes())
            if wheel is not None:
                zf.writestr(_entry(Path(wheel).name, zipfile.ZIP_STORED), Path(wheel).read_bytes())
    return done


def _entry(name: str, compress: int = zipfile.ZIP_DEFLATED) -> zipfile.ZipInfo:
    """The zip's entry for one file of the edition: readable by everyone who unpacks it (mode
    0644; zipfile's own default, 0600, left a copy unpacked for a class its owner's alone)."""
    info = zipfile.ZipInfo(f"tx-book-learner-edition/{name}", date_time=time.localtime()[:6])
    info.external_attr = (stat.S_IFREG | 0o644) << 16
    info.compress_type = compress
    return info


def main(argv: list[str] | None = None) -> None:
    """``python -m tx.exercises learner OUTDIR [--zip FILE] [--force]``."""
    parser = argparse.ArgumentParser(prog="python -m tx.exercises", description="Tools for the book's exercises.")
    sub = parser.add_subparsers(dest="command", required=True)
    learner = sub.add_parser("learner", help="write the chapters without solutions, for Jupyter",
                             description="Write the learner edition. Notebooks you have changed are never overwritten "
                                         "unless you give --force.")
    learner.add_argument("out_dir", type=Path)
    learner.add_argument("--chapters", type=Path, default=CHAPTERS)
    learner.add_argument("--zip", type=Path, dest="zip_path", help="also write a zip of the edition here")
    learner.add_argument("--force", action="store_true", help="overwrite notebooks even if they were changed (your answers are lost)")
    learner.add_argument("--wheel", type=Path, help="a wheel of tx for the zip (its README installs it)")
    # Listed for --help only: __main__ hands `course` to tx.exercises.course before this parser runs.
    sub.add_parser("course", help="write the exercises as an nbgrader course for teachers "
                                  "(python -m tx.exercises course --help)")
    args = parser.parse_args(argv)
    try:
        done = write_learner_edition(args.out_dir, args.chapters, args.zip_path, force=args.force,
                                     wheel=args.wheel)
    except (ValueError, FileNotFoundError) as error:
        parser.exit(2, f"python -m tx.exercises learner: {error}\n")
    print(f"wrote {len(done.written)} files of the learner edition to {args.out_dir}"
          + (f" and {args.zip_path}" if args.zip_path else ""))
    if done.kept:
        lines = [f"kept {p.name}: {done.why.get(p.name, 'you changed it')}" for p in done.kept]
        print("\n".join(lines) + "\nYour work in them is safe. To replace them with the current edition (your "
              "answers are lost), move them away or run again with --force.", file=sys.stderr)
