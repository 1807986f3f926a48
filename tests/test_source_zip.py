"""_ext/source_zip.py: the book's source as the site offers it, from git or from a plain folder."""

from __future__ import annotations

import importlib.util
import subprocess
import zipfile
from pathlib import Path

BOOK = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("source_zip", BOOK / "_ext" / "source_zip.py")
source_zip = importlib.util.module_from_spec(spec)
spec.loader.exec_module(source_zip)


def test_a_checkout_gives_what_git_tracks():
    names = source_zip.source_files(BOOK)
    try:
        tracked = subprocess.run(["git", "ls-files"], cwd=BOOK, capture_output=True, text=True).stdout.split()
    except OSError:  # no git at all
        tracked = []
    if not tracked:  # a copy without git: the folder walk below is what it gets
        return
    assert "Makefile" in names and "chapters/01_high_level_look.ipynb" in names
    assert set(names) <= set(tracked) and not any(n.startswith(("_build/", ".venv/")) for n in names)


def test_a_plain_folder_leaves_out_environments_builds_and_a_learners_work(tmp_path):
    for name in ("Makefile", "chapters/a.ipynb", "tx/x.py", ".venv/lib/y.py", "_build/html/i.html",
                 "workbook/a.ipynb", "course/source/a.ipynb", "tx/__pycache__/x.cpython-311.pyc"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    assert source_zip.source_files(tmp_path) == ["Makefile", "chapters/a.ipynb", "tx/x.py"]


def test_the_zip_unpacks_into_one_folder_with_modes_kept(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "run").write_text("#!/bin/sh\n")
    (tmp_path / "book" / "run").chmod(0o755)
    assert source_zip.write_zip(tmp_path / "out.zip", tmp_path / "book") == 1
    with zipfile.ZipFile(tmp_path / "out.zip") as archive:
        (info,) = archive.infolist()
    assert info.filename == "transformer-book/run" and (info.external_attr >> 16) & 0o111
