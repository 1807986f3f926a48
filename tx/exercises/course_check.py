"""``python -m tx.exercises course OUTDIR --check``: grade a class with nbgrader's own commands.

In a scratch copy of the course (the teacher's gradebook is not touched), ``nbgrader
generate_assignment`` makes every assignment's students' version, and a class of synthetic
students submits it (:data:`STUDENTS`): one with the instructor's solutions, one with the
release untouched, one with every second exercise solved, and students whose every answer
must score zero: plausibly wrong (the solution's result, a little off), not parsing, empty,
calling tx's own implementation through a wrapper, replacing the checker, printing "Correct".
On one assignment two more run away (a loop that never ends, memory that grows without end)
on two exercises and solve the rest. ``nbgrader autograde`` grades them all, the runaway ones
under a short time and memory limit, and every exercise's score is read back from nbgrader's
gradebook and compared with what a teacher would give. See :mod:`tx.exercises.course`.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .learner_notebook import _source

__all__ = ["BEGIN", "END", "SOLVED", "UNSOLVED", "HALF", "GAMING", "RUNAWAY", "STUDENTS", "Exercise", "Scores",
           "answer", "check_course", "report"]

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
"""nbgrader's delimiters of a solution in an answer cell (its defaults, with Python's comment mark)."""

SOLVED, UNSOLVED = "tx-solutions", "tx-unsolved"
"""The students who submit the instructor's solutions and the release untouched."""
HALF = "tx-half"
"""The student who solves every second exercise (the first, the third, ...) and leaves the others."""
GAMING = ("tx-wrong", "tx-unparseable", "tx-empty", "tx-aliasing", "tx-replacing", "tx-printing")
"""Students whose every answer must score zero (see :func:`answer`)."""
RUNAWAY = ("tx-runaway-loop", "tx-runaway-memory")
"""Students who, on one assignment, run away on the first two exercises and solve the others."""
STUDENTS = (SOLVED, UNSOLVED, HALF) + GAMING
"""The class every assignment is graded for: the solutions, the release untouched, ``HALF`` and ``GAMING``."""
RUNAWAY_LIMITS = {"timeout": 12, "memory_mb": 512}
"""The limits the runaway students are graded under (``GradeInIsolation.student_limits``, in the
same ``nbgrader autograde`` as the class): short, so that the check stays cheap (a looping
answer burns the whole timeout, twice), yet long enough for the exercises they solve on a
loaded machine. 4 s was not: in a `make test` beside the book build and the site's browser
tests, chapter 1's third exercise, 0.85 s for a whole submission on a quiet machine
(bench/grading_cost.json), ran out of it; 12 s is three times what failed."""

_OFF = '''
def _tx_off(value):
    """The right result, a little off: what a plausible mistake returns."""
    import torch
    if isinstance(value, torch.Tensor):
        if value.dtype == torch.bool:
            return ~value
        return value * 1.5 + 0.25 if value.is_floating_point() else value + 1
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, (list, tuple)) and value:
        return type(value)([_tx_off(value[0]), *value[1:]]) if type(value) in (list, tuple) else None
    if isinstance(value, dict) and value:
        key = next(iter(value))
        return {**value, key: _tx_off(value[key])}
    if isinstance(value, (set, frozenset)):
        return set(value) | {"<none>"}
    return 0 if value is None else None
'''


@dataclass(frozen=True)
class Exercise:
    """What a synthetic student needs to answer one exercise."""

    solution: str  #: the instructor's answer cell, the delimiters left out
    name: str  #: the function the stub defines
    checker: tuple[str, str] | None  #: (module, name) of the tx checker its check cell calls
    tx_answer: tuple[str, str] | None  #: (module, name) of a tx function the exercise forbids: tx's own answer


def answer(student: str, k: int, exercise: Exercise, stub: str) -> str:
    """The answer cell ``student`` submits for exercise ``k`` (counted from 0) of a notebook."""
    f, right = exercise.name, exercise.solution
    if student == SOLVED or (student == HALF and k % 2 == 0):
        return right
    if student == "tx-wrong":
        return f"{right}\n{_OFF}\n_tx_right_{k} = {f}\n\n\ndef {f}(*args, **kwargs):\n" \
               f"    return _tx_off(_tx_right_{k}(*args, **kwargs))\n"
    if student == "tx-unparseable":
        return f"def {f}(:\n    return"
    if student == "tx-empty":
        return ""
    if student == "tx-aliasing":
        if exercise.tx_answer is None:
            return stub
        module, name = exercise.tx_answer
        return f"from {module} import {name} as _tx_answer\n\n\ndef {f}(*args, **kwargs):\n" \
               "    return _tx_answer(*args, **kwargs)\n"
    if student == "tx-replacing":
        lines = ["try:  # IPython: every later cell, the checks included, made a no-op",
                 "    get_ipython().input_transformers_cleanup.append(lambda lines: [])",
                 "except NameError:", "    pass"]
        if exercise.checker:
            module, name = exercise.checker
            lines += [f"import {module}", f"{module}.{name} = lambda *a, **k: print('Correct: replaced.')",
                      "import tx.exercises", "tx.exercises.CheckFailed = type('Nothing', (Exception,), {})"]
        return "\n".join(lines + ["", "", f"def {f}(*args, **kwargs):", "    return None", ""])
    if student == "tx-printing":
        return (f"print('Correct: {f} is right.')\n\n\ndef {f}(*args, **kwargs):\n"
                f"    print('Correct: {f} is right.')\n    return None\n")
    if student == "tx-runaway-loop" and k < 2:
        return f"def {f}(*args, **kwargs):\n    while True:\n        pass\n" if k == 0 else \
            f"{right}\n\nwhile True:  # the cell itself never ends\n    pass\n"
    if student == "tx-runaway-memory" and k < 2:
        return (f"def {f}(*args, **kwargs):\n    import torch\n    hoard = []\n    while True:\n"
                "        hoard.append(torch.ones(1 << 22))\n") if k == 0 else \
            f"hoard = [bytearray(1 << 28) for _ in range(1 << 10)]\n\n{right}\n"
    if student in RUNAWAY:
        return right
    return stub


def expected_points(student: str, k: int, points: float) -> float:
    """What a teacher gives ``student`` for exercise ``k`` worth ``points``."""
    if student == SOLVED or (student == HALF and k % 2 == 0) or (student in RUNAWAY and k >= 2):
        return points
    return 0.0


@dataclass
class Scores:
    """One assignment's scores from nbgrader's gradebook: ``{grade_id: points}`` per student."""

    max_points: dict[str, float]  #: ``{grade_id: points}`` each graded cell is worth
    by_hand: set[str] = field(default_factory=set)  #: the grade ids of answers in words, graded by hand
    students: dict[str, dict[str, float]] = field(default_factory=dict)  #: what nbgrader gave each student
    expected: dict[str, dict[str, float]] = field(default_factory=dict)  #: what a teacher gives each student
    hints: dict[str, str] = field(default_factory=dict)
    """``{grade_id: what the check printed}`` in the unsolved release as autograded: the hint
    that nbgrader's feedback shows."""

    @property
    def solved(self) -> dict[str, float]:
        return self.students.get(SOLVED, {})

    @property
    def unsolved(self) -> dict[str, float]:
        return self.students.get(UNSOLVED, {})

    @property
    def wrong(self) -> list[tuple[str, str, float | None, float]]:
        """``(student, grade_id, points given, points a teacher gives)`` wherever they differ."""
        return [(student, g, self.students.get(student, {}).get(g), want)
                for student, grades in self.expected.items() for g, want in grades.items()
                if self.students.get(student, {}).get(g) != want]

    @property
    def autograded(self) -> dict[str, float]:
        """``{grade_id: points}`` of the cells the autograder scores (not the answers in words)."""
        return {g: p for g, p in self.max_points.items() if g not in self.by_hand}

    @property
    def full_marks(self) -> bool:
        return bool(self.max_points) and all(self.solved.get(g) == p for g, p in self.autograded.items())



def _run_nbgrader(args: list[str], cwd: Path) -> None:
    """Run ``nbgrader ARGS`` in the course folder ``cwd``; raise with its log if it fails."""
    nbgrader = Path(sys.executable).with_name("nbgrader")
    command = [str(nbgrader)] if nbgrader.exists() else [sys.executable, "-m", "nbgrader"]
    # nbgrader runs `alembic` (its database's migrations) by name: the environment's bin/ goes first on PATH.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    done = subprocess.run(command + args, cwd=cwd, capture_output=True, text=True, env={**os.environ, "PATH": path})
    if done.returncode:
        raise RuntimeError(f"`nbgrader {' '.join(args)}` failed (exit {done.returncode}):\n{done.stdout}{done.stderr}")


def _exercises(release: dict[str, Any], source: dict[str, Any]) -> dict[str, Exercise]:
    """``{answer cell's grade_id: Exercise}`` of a notebook, from its source (the instructor's version)."""
    from . import forbidden

    cells = source["cells"]
    found = {}
    for i, cell in enumerate(cells):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if not meta.get("solution") or cell.get("cell_type") != "code":  # an answer in words is graded by hand
            continue
        text = "\n".join(line for line in _source(cell).split("\n") if line.strip() not in (BEGIN, END))
        name = next((n.name for n in ast.parse(text).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))), "answer")
        check = next((_source(c) for c in cells[i + 1:] if c.get("metadata", {}).get("nbgrader", {}).get("grade")),
                     "")
        called = re.search(r"\b(tx\.exercises\.\w+)\.(check_\w+)\(", check)
        checker = (called.group(1), called.group(2)) if called else None
        tx_answer = None
        if checker:
            rule = forbidden(getattr(importlib.import_module(checker[0]), checker[1]))
            for owner, attr in (rule or ([], ""))[0]:
                if isinstance(owner, types.ModuleType) and owner.__name__.split(".")[0] == "tx" and \
                        isinstance(getattr(owner, attr, None), types.FunctionType):
                    tx_answer = (owner.__name__, attr)
                    break
        found[meta["grade_id"]] = Exercise(text, name, checker, tx_answer)
    return found


def _forged(exercises: dict[str, Exercise]) -> dict[str, Any]:
    """The cell the checker-replacing student adds, with no nbgrader metadata (nbgrader keeps it): it
    replaces every checker and defines every answer as a function that returns None. It must run
    as the student's, in a sandbox, not as one of the teacher's read-only cells."""
    lines = ["import tx.exercises",
             "for _name in ('ch01', 'ch03', 'ch05', 'ch10', 'ch12', 'a1'):",
             "    _module = tx.exercises.__getattr__(_name)",
             "    for _check in [n for n in dir(_module) if n.startswith('check_')]:",
             "        setattr(_module, _check, lambda *a, **k: print('Correct: replaced.'))"]
    lines += [f"{e.name} = lambda *args, **kwargs: None" for e in exercises.values()]
    return {"cell_type": "code", "execution_count": None, "outputs": [], "id": "tx-forged", "metadata": {},
            "source": "\n".join(lines) + "\n"}


def _submission(release: dict[str, Any], exercises: dict[str, Exercise], student: str) -> dict[str, Any]:
    """The release as ``student`` fills it in (the checker-replacing student adds :func:`_forged`'s cell too)."""
    cells, k = [], 0
    if student == "tx-replacing":
        cells.append(_forged(exercises))
    for cell in release["cells"]:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id in exercises:
            cell = {**cell, "source": answer(student, k, exercises[grade_id], _source(cell))}
            k += 1
        cells.append(cell)
    return {**release, "cells": cells}


def _expected(release: dict[str, Any], exercises: dict[str, Exercise], student: str) -> dict[str, float]:
    """``{check's grade_id: points}`` a teacher gives ``student``: each check scores its exercise, the
    answer cell before it."""
    grades, k = {}, -1
    for cell in release["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade_id") in exercises:
            k += 1
        elif meta.get("grade") and meta.get("solution"):  # an answer in words, left as released: nothing
            grades[meta["grade_id"]] = 0.0
        elif meta.get("grade") and k >= 0:
            grades[meta["grade_id"]] = expected_points(student, k, float(meta["points"]))
    return grades


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
                parts.append(f"{output.get('ename')}: {output.get('evalue')}")
        printed[meta["grade_id"]] = _ANSI.sub("", "".join(parts)).strip()
    return printed


def check_course(course: str | Path, only: list[str] | None = None,
                 scratch: str | Path | None = None,
                 also: Callable[[Path], None] | None = None) -> dict[str, Scores]:
    """Grade a class of synthetic students (:data:`STUDENTS`, and :data:`RUNAWAY` on one assignment) with nbgrader.

    Returns ``{assignment: Scores}`` read from nbgrader's gradebook, with what a teacher would
    give each student. The course folder itself is not changed. The copy is made in a temporary
    folder, removed afterwards, or in ``scratch`` (an empty or new folder), kept with nbgrader's
    release/, submitted/ and autograded/ folders and its gradebook.db.

    ``also``, if given, is called with the scratch course once the class's submissions are in
    its submitted/ folder, before nbgrader grades them: submissions it adds there are graded in
    the same run (one nbgrader process, one grading master) and left out of the scores.
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
        with open(work / "nbgrader_config.py", "a", encoding="utf-8") as config:  # the scratch copy's own
            config.write(f"\nc.GradeInIsolation.student_limits = {{'tx-runaway-*': {RUNAWAY_LIMITS!r}}}\n")
        if (course / "templates").is_dir():  # the feedback's templates, which the config names
            shutil.copytree(course / "templates", work / "templates", dirs_exist_ok=True)
        for a in assignments:
            shutil.copytree(course / "source" / a, work / "source" / a,
                            ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        # The scratch course holds the assignments to check and no others: "*" names them all, so that
        # one nbgrader process does them all (each process takes seconds to start).
        _run_nbgrader(["generate_assignment", "*", "--force"], work)
        expected: dict[str, dict[str, dict[str, float]]] = {a: {} for a in assignments}
        runaway = next((a for a in assignments for nb in (work / "release" / a).glob("*.ipynb")
                        if sum(1 for c in json.loads(nb.read_text(encoding="utf-8"))["cells"]
                               if c.get("metadata", {}).get("nbgrader", {}).get("solution")
                               and c["cell_type"] == "code") >= 3), None)

        def submit(students: tuple[str, ...], which: list[str]) -> None:
            for a in which:
                for notebook in sorted((work / "release" / a).glob("*.ipynb")):
                    release = json.loads(notebook.read_text(encoding="utf-8"))
                    source = json.loads((work / "source" / a / notebook.name).read_text(encoding="utf-8"))
                    exercises = _exercises(release, source)
                    for student in students:
                        target = work / "submitted" / student / a / notebook.name
                        target.parent.mkdir(parents=True, exist_ok=True)
                        nb = _submission(release, exercises, student)
                        target.write_text(json.dumps(nb, indent=1, ensure_ascii=False), encoding="utf-8")
                        expected[a].setdefault(student, {}).update(_expected(release, exercises, student))

        submit(STUDENTS, assignments)
        if runaway:  # under limits short enough to keep the check cheap (the scratch config's student_limits)
            submit(RUNAWAY, [runaway])
        if also is not None:
            also(work)
        _run_nbgrader(["autograde", "*", "--create"], work)
        scores: dict[str, Scores] = {}
        with Gradebook(f"sqlite:///{work / 'gradebook.db'}") as gradebook:
            for a in assignments:
                result = None
                for student in expected[a]:
                    submission = gradebook.find_submission(a, student)
                    grades = {g.name: float(g.score) for nb in submission.notebooks for g in nb.grades}
                    if result is None:
                        result = Scores({g.name: float(g.max_score) for nb in submission.notebooks
                                         for g in nb.grades},
                                        {g.name for nb in submission.notebooks for g in nb.grades
                                         if g.cell.cell_type == "markdown"})
                    result.students[student] = {g: grades.get(g, 0.0) for g in result.max_points}
                    result.expected[student] = expected[a][student]
                for notebook in sorted((work / "autograded" / UNSOLVED / a).glob("*.ipynb")):
                    result.hints.update(_printed(json.loads(notebook.read_text(encoding="utf-8"))))
                scores[a] = result
    return scores


def report(scores: dict[str, Scores]) -> str:
    """A table: each assignment's points, per student, and whether each is what a teacher gives."""
    students = list(dict.fromkeys(s for score in scores.values() for s in score.expected))
    short = {s: s.removeprefix("tx-").removeprefix("runaway-") for s in students}
    rows = [f"{'assignment':<11}" + "".join(f"{short[s]:>12}" for s in students)]
    for a, score in scores.items():
        most = sum(score.autograded.values())
        cells = []
        for student in students:
            if student not in score.students:
                cells.append(f"{'':>12}")
                continue
            got = sum(score.students[student].values())
            ok = not any(w[0] == student for w in score.wrong)
            cells.append(f"{f'{got:g}/{most:g}' + ('' if ok else ' !'):>12}")
        rows.append(f"{a:<11}" + "".join(cells))
    by_hand = sum(len(score.by_hand) for score in scores.values())
    rows.append("(! : a score that is not what a teacher gives; the autograded points only: "
                f"{by_hand} answers in words wait for a teacher, who grades them in Formgrader)")
    return "\n".join(rows)
