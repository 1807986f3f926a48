"""``python -m tx.exercises course OUTDIR --check``: grade a course with nbgrader's own commands.

In a scratch copy of the course (the teacher's gradebook is not touched), ``nbgrader
generate_assignment`` makes every assignment's students' version; two students submit, one
with the instructor's solutions filled in, one with the release untouched; ``nbgrader
autograde`` grades both, and the scores are read back from nbgrader's gradebook. See
:mod:`tx.exercises.course`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .learner_notebook import _source

__all__ = ["BEGIN", "END", "SOLVED", "UNSOLVED", "Scores", "check_course", "report"]

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
"""nbgrader's delimiters of a solution in an answer cell (its defaults, with Python's comment mark)."""

SOLVED, UNSOLVED = "tx-solutions", "tx-unsolved"
"""The two students the check submits as: the instructor's solutions and the unsolved release."""


@dataclass
class Scores:
    """One assignment's scores from nbgrader's gradebook: ``{grade_id: points}`` per student."""

    max_points: dict[str, float]  #: ``{grade_id: points}`` each graded cell is worth
    solved: dict[str, float] = field(default_factory=dict)  #: the points of the solved release
    unsolved: dict[str, float] = field(default_factory=dict)  #: the points of the release as students get it
    hints: dict[str, str] = field(default_factory=dict)
    """``{grade_id: what the check printed}`` in the unsolved release as autograded: the hint
    that nbgrader's feedback shows."""

    @property
    def full_marks(self) -> bool:
        return bool(self.max_points) and self.solved == self.max_points

    @property
    def zero(self) -> bool:
        return bool(self.max_points) and set(self.unsolved) == set(self.max_points) and \
            not any(self.unsolved.values())


def _run_nbgrader(args: list[str], cwd: Path) -> None:
    """Run ``nbgrader ARGS`` in the course folder ``cwd``; raise with its log if it fails."""
    nbgrader = Path(sys.executable).with_name("nbgrader")
    command = [str(nbgrader)] if nbgrader.exists() else [sys.executable, "-m", "nbgrader"]
    # nbgrader runs `alembic` (its database's migrations) by name: the environment's bin/ goes first on PATH.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    done = subprocess.run(command + args, cwd=cwd, capture_output=True, text=True, env={**os.environ, "PATH": path})
    if done.returncode:
        raise RuntimeError(f"`nbgrader {' '.join(args)}` failed (exit {done.returncode}):\n{done.stdout}{done.stderr}")


def _solved(release: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
    """The release with every answer cell as the source's solution, the delimiters left out: a perfect student."""
    answers = {c["metadata"]["nbgrader"]["grade_id"]: c for c in source["cells"]
               if c.get("metadata", {}).get("nbgrader", {}).get("solution")}
    cells = []
    for cell in release["cells"]:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            text = "\n".join(line for line in _source(answers[grade_id]).split("\n")
                             if line.strip() not in (BEGIN, END))
            cell = {**cell, "source": text}
        cells.append(cell)
    return {**release, "cells": cells}


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _printed(notebook: dict[str, Any]) -> dict[str, str]:
    """``{grade_id: text}`` of every autograder-tests cell: what it printed, or its error as shown (no colours)."""
    printed = {}
    for cell in notebook["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if not meta.get("grade") or cell["cell_type"] != "code":
            continue
        parts = []
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                parts.append("".join(output.get("text", "")))
            elif output.get("output_type") == "error":
                parts.append("\n".join(output.get("traceback", [])) or f"{output.get('ename')}: {output.get('evalue')}")
        printed[meta["grade_id"]] = _ANSI.sub("", "".join(parts)).strip()
    return printed


def check_course(course: str | Path, only: list[str] | None = None,
                 scratch: str | Path | None = None) -> dict[str, Scores]:
    """Grade ``course`` with nbgrader in a scratch copy: the solutions and the unsolved release of each assignment.

    Returns ``{assignment: Scores}`` read from nbgrader's gradebook. The course folder itself
    is not changed. The copy is made in a temporary folder, removed afterwards, or in
    ``scratch`` (an empty or new folder), kept with nbgrader's release/, submitted/ and
    autograded/ folders and its gradebook.db.
    """
    try:
        from nbgrader.api import Gradebook
    except ImportError:
        raise RuntimeError("nbgrader is not installed in this Python: `pip install nbgrader` (the book's "
                           "requirements.txt has it, and `make` installs it).") from None

    course = Path(course).resolve()
    assignments = sorted(p.name for p in (course / "source").iterdir() if p.is_dir()) if \
        (course / "source").is_dir() else []
    if only:
        assignments = [a for a in assignments if a in only]
    if not assignments:
        raise ValueError(f"{course} holds no assignments in source/: write the course first "
                         "(python -m tx.exercises course OUTDIR).")
    if scratch is not None and Path(scratch).exists() and any(Path(scratch).iterdir()):
        raise ValueError(f"{scratch} is not empty: give an empty or new folder to grade in.")
    with contextlib.ExitStack() as stack:
        if scratch is None:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tx-course-check-")))
        else:
            work = Path(scratch).resolve()
            work.mkdir(parents=True, exist_ok=True)
        shutil.copy(course / "nbgrader_config.py", work / "nbgrader_config.py")
        for a in assignments:
            shutil.copytree(course / "source" / a, work / "source" / a,
                            ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        # The scratch course holds the assignments to check and no others: "*" names them all, so that
        # one nbgrader process does them all (each process takes seconds to start).
        _run_nbgrader(["generate_assignment", "*", "--force"], work)
        for a in assignments:
            for notebook in sorted((work / "release" / a).glob("*.ipynb")):
                release = json.loads(notebook.read_text(encoding="utf-8"))
                source = json.loads((work / "source" / a / notebook.name).read_text(encoding="utf-8"))
                for student, nb in ((SOLVED, _solved(release, source)), (UNSOLVED, release)):
                    target = work / "submitted" / student / a / notebook.name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(json.dumps(nb, indent=1, ensure_ascii=False), encoding="utf-8")
        _run_nbgrader(["autograde", "*", "--create"], work)
        scores: dict[str, Scores] = {}
        with Gradebook(f"sqlite:///{work / 'gradebook.db'}") as gradebook:
            for a in assignments:
                result = None
                for student in (SOLVED, UNSOLVED):
                    submission = gradebook.find_submission(a, student)
                    grades = {g.name: float(g.score) for nb in submission.notebooks for g in nb.grades}
                    if result is None:
                        result = Scores({g.name: float(g.max_score) for nb in submission.notebooks
                                         for g in nb.grades})
                    setattr(result, "solved" if student == SOLVED else "unsolved", grades)
                for notebook in sorted((work / "autograded" / UNSOLVED / a).glob("*.ipynb")):
                    result.hints.update(_printed(json.loads(notebook.read_text(encoding="utf-8"))))
                scores[a] = result
    return scores


def report(scores: dict[str, Scores]) -> str:
    rows = [f"{'assignment':<12}{'exercises':>10}{'solutions':>12}{'unsolved':>10}"]
    total = solved = unsolved = 0.0
    for a, s in scores.items():
        most = sum(s.max_points.values())
        total, solved, unsolved = total + most, solved + sum(s.solved.values()), unsolved + sum(s.unsolved.values())
        rows.append(f"{a:<12}{len(s.max_points):>10}{sum(s.solved.values()):>8g}/{most:<3g}"
                    f"{sum(s.unsolved.values()):>6g}/{most:<3g}")
    rows.append(f"{'total':<12}{'':>10}{solved:>8g}/{total:<3g}{unsolved:>6g}/{total:<3g}")
    return "\n".join(rows)
