"""The book's own source as a zip for the website: ``python _ext/source_zip.py OUT.zip``.

A teacher builds the nbgrader course from the chapters with their solutions (``make course``,
teachers.md), and a reader runs the book itself (``make lab``, intro.md): both need the
folder this site was built from. Where the book names no repository, the site offers this
zip instead. It holds the files git tracks (``git ls-files``); in a copy that is not a git
checkout, every file but the ignored folders (environment, builds, a learner's workbook, a
teacher's course). One top folder, ``transformer-book/``, so unzipping makes one folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

BOOK = Path(__file__).resolve().parents[1]
TOP = "transformer-book"
LEFT_OUT = {".git", ".venv", "_build", "__pycache__", ".ipynb_checkpoints", ".pytest_cache", "runs",
            "workbook", "course"}


def source_files(book: Path = BOOK) -> list[str]:
    """The book's files, relative to ``book``, sorted."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=book, capture_output=True, check=True).stdout
        return sorted(name for name in listed.decode("utf-8").split("\0") if name and (book / name).is_file())
    except (OSError, subprocess.CalledProcessError):  # no git, or not a checkout
        files = []
        for folder, subfolders, names in os.walk(book):
            subfolders[:] = [d for d in subfolders if d not in LEFT_OUT]
            files += [str((Path(folder) / n).relative_to(book)) for n in names if not n.endswith(".pyc")]
        return sorted(files)


def write_zip(out: Path, book: Path = BOOK) -> int:
    """Write the zip; returns how many files it holds."""
    names = source_files(book)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in names:
            archive.write(book / name, f"{TOP}/{name}")
    return len(names)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python _ext/source_zip.py OUT.zip")
    count = write_zip(Path(sys.argv[1]))
    print(f"{sys.argv[1]}: the book's source, {count} files")
