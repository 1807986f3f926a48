"""The teachers' course: the book's exercises as an nbgrader course, graded by nbgrader itself.

``python -m tx.exercises course OUTDIR`` writes an nbgrader course folder:
``nbgrader_config.py``, a ``README.md`` and ``source/<assignment>/<chapter>.ipynb`` for every
chapter with exercises (assignments ``ch01`` ... ``ch14`` and ``a1``). Each assignment holds
one chapter's exercises and the cells they build on (the chapter's imports, and any earlier
cell that defines a name they use), not the whole chapter: nbgrader's autograder runs every
submission from the top, and the chapters that train a model would cost a class of a hundred
students hours of CPU for nothing that is graded. Students read the chapter in the book.

In each notebook, with nbgrader's cell metadata,

- an exercise's answer cell is an autograded answer: the book's stub, with the solution
  between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` where the stub raises
  ``NotImplementedError`` (``nbgrader generate_assignment`` puts nbgrader's code stub back);
- its check is an autograder-tests cell worth one point, which calls the book's checker, so
  the hints are the learner edition's (in the notebook and in nbgrader's feedback);
- every other cell is read-only.

``python -m tx.exercises course OUTDIR --check`` then grades a class of synthetic students
with nbgrader's own commands, in a scratch copy (:mod:`tx.exercises.course_check`): each
exercise must score what a teacher would give, full marks for the solutions and zero for
every answer that is wrong, empty, does not parse, or games the grader.

Running the command again on an existing course updates it without losing the teacher's
edits: a file is replaced only while it is what an earlier run wrote (the record is
``.tx-course.json``), as the learner edition does.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import Any

from .course_check import BEGIN, END, check_course, report
from .course_cells import (
    _nbgrader, _needed_cells, _top_level_names, _unbinding, _without_given_code, asks_in_words,
    solution_text, with_hidden_test, written_answer,
)
from .course_environment import DOCKERFILE, course_requirements
from .feedback import NO_MATHJAX
from .grading import fingerprint
from .learner import CHAPTERS, Written, write_keeping
from .learner_notebook import _source, chapter_label, citations, equation_numbers, learner_notebook, to_markdown

__all__ = [
    "MANIFEST", "POINTS", "BEGIN", "END", "assignment_id", "answer_source", "course_notebook", "course_files",
    "write_course", "main",
]

_LABEL = "tx_exercise"  # a cell's exercise label while course_notebook builds the notebook; never written out
MANIFEST = ".tx-course.json"
"""The file, in the course folder, recording what each file was when this tool wrote it."""
POINTS = 1
"""What one exercise's check is worth: an assignment is worth as many points as it has exercises."""

CONFIG = '''\
# nbgrader's configuration for the course that `python -m tx.exercises course` wrote from
# the book's chapters. Edit it freely: running that command again keeps your edits.
# nbgrader's documentation lists every option: https://nbgrader.readthedocs.io
c = get_config()  # noqa: F821 - nbgrader defines it

c.CourseDirectory.course_id = "transformer-run-and-tested"
# What replaces each solution in the students' version (nbgrader's own default, stated here so
# that the answer cells read as the book's stubs do: they raise until answered).
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
# Autograding runs each student's answers in a sandbox process of their own and the checks in
# the grader's (tx.exercises.grading): an answer cannot change a check, print its verdict or
# call what the exercise forbids. It takes the place of nbgrader's Execute step; the other
# steps are nbgrader's own.
# (Named as strings: only `nbgrader autograde` imports them.)
c.Autograde.autograde_preprocessors = [
    "tx.exercises.autograde.GradeInIsolation",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# Seconds each exercise's answer cells and check may take in all, and the memory each
# exercise's sandbox may use beyond the grader's own. The book's solutions to a whole
# assignment take {slowest:g} s at most on the book's 2-core test machine (bench/README.md,
# "Grading a class"): this is {factor:g} times that. Past it the exercise scores 0 with a one-line hint, and
# the notebook's other exercises are graded as usual.
c.GradeInIsolation.timeout = {timeout:g}
c.GradeInIsolation.memory_mb = {memory_mb}
# The tx the course was written for: grading with another tx is refused (the students' set-up
# cell prints theirs). Write the course again after you update tx.
c.GradeInIsolation.tx_fingerprint = "{fingerprint}"
# The number the hidden tests draw the course's own inputs from (a check cell's second call,
# `variant="course"`): drawn at random when the course was first written, and kept since.
# Students never see it; change it for a new term, and a published answer fitted to last
# term's inputs no longer fits.
c.GradeInIsolation.variant = {variant}
# Feedback that reads offline: generate_feedback writes the notebooks' math as MathML, and the
# course's templates/base/mathjax.html.j2 stands in for nbconvert's, which loads MathJax from
# the internet (nbgrader's feedback template itself is found in nbgrader's own folder).
import os.path as _path  # noqa: E402
import nbgrader as _nbgrader  # noqa: E402

c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "tx.exercises.feedback.MathAsMathML",
]
c.HTMLExporter.extra_template_basedirs = [
    _path.join(_path.dirname(_path.abspath(__file__)), "templates"),
    _path.join(_path.dirname(_nbgrader.__file__), "server_extensions", "formgrader", "templates"),
]
# Seconds a cell may run in a Jupyter kernel: `nbgrader validate`, which students may run,
# executes the notebook there (it does not grade in isolation; its checks are the book's).
c.ExecutePreprocessor.timeout = {timeout:g}
'''
SLOWEST_SOLUTION = 4.0
"""Seconds: the book's solutions to the slowest assignment, all its exercises and their hidden
tests, graded in isolation on the book's 2-core test machine (ch14's, 3.2 s in
bench/grading_cost.json, bench/README.md "Grading a class"), rounded up: one exercise takes less."""
TIMEOUT_FACTOR = 10
MEMORY_MB = 2048

README = """\
# The Transformer, Run and Tested: the nbgrader course

The book's exercises as an [nbgrader](https://nbgrader.readthedocs.io) course, written by
`python -m tx.exercises course` from the book's chapters. `source/` holds one assignment per
chapter ({assignments}); each is the chapter's exercises and the cells they build on, with the
solutions in. Students read the chapter in the book and answer in the assignment.

## Points

Each exercise is worth {points} point{s}: its answer cell is an autograded answer, and the
check under it, an autograder-tests cell, calls the same checker the book and the learner
edition use, with the hint a learner sees, which nbgrader's feedback shows too. Each checker
checks in parts, easiest first (the book's worked example, then other sizes, then the edge
case its hints name); an answer earns each part's share of the points, up to the first part
that fails. Where a checker draws its inputs at random, the check cell calls it again in
nbgrader's hidden tests on the course's own inputs (`c.GradeInIsolation.variant` in
`nbgrader_config.py`), which no student sees, so each such exercise's points are shared
between the book's inputs and the course's. An exercise that also asks a question in words
has an answer cell in words, worth {points} point{s}, graded by hand. Every other cell is
read-only.

## Running the course

Students need the book's package `tx` (its wheel is in the learner edition's zip, or
`pip install` a clone of the book) in the environment where they work and where you grade,
the same `tx` (the assignments' first cell prints its fingerprint; autograding refuses
another). `requirements.txt` pins every package, nbgrader's included, with its hashes, and
the `Dockerfile` builds that environment, with tx from the learner edition's wheel, for a
JupyterHub image or a grading machine.

```bash
python -m tx.exercises course . --check   # once: every assignment grades as it should
nbgrader generate_assignment ch03         # the students' version, in release/ch03
# ... students submit into submitted/<student>/ch03/ (nbgrader's exchange or by hand) ...
nbgrader autograde ch03                   # runs every submission, scores it in gradebook.db
nbgrader generate_feedback ch03           # HTML feedback with each check's hint
```

The book's page "For teachers" says more.

Running `python -m tx.exercises course` again updates the notebooks and this folder's files
to the book's current edition, but keeps any that you changed (it says which).
"""

TITLE = """\
# Exercises of chapter {number}: {title}

This assignment holds the exercises of chapter {number} of *The Transformer, Run and Tested*
and the cells they build on: read the chapter in the book first. Write each answer in the
cell that says `YOUR CODE HERE`, in place of `raise NotImplementedError()`, and run the check
under it: it prints a line that starts with "Correct", or a hint. Each exercise is worth
{points} point{s}; the autograder runs the same checks on what you submit, and again on inputs
of its own, and gives each part of a check that passes its share of the points. The other
cells are read-only.

When it is graded, each answer runs on its own, apart from the checks. An answer cell that
imports anything but Python's own `math`, `collections`, `itertools`, `functools` (and the
like), `numpy`, `torch` and `tx`, or that uses `exec`, `eval`, `open`, `os` or `sys`, is not
run and scores nothing; no exercise needs them. `nbgrader validate` does not check this.
"""

SETUP_CELL = '''\
# This assignment needs tx, the book's Python package: if this cell fails, ask your
# course staff which environment (kernel) to choose.
try:
    import tx
    from tx.exercises.grading import fingerprint
except ModuleNotFoundError:
    raise ModuleNotFoundError(
        "this assignment needs the book's package `tx`: choose the kernel your course "
        "set up for it, or install tx (the course's README says how)."
    ) from None
COURSE_TX = "{fingerprint}"
if fingerprint() != COURSE_TX:
    print(f"Your tx is {{fingerprint()}}, the course's is {{COURSE_TX}}:\\nask your course "
          "staff for the course's environment,\\nor your checks may differ from the grader's.")
else:
    print(f"tx {{COURSE_TX}}, the course's.")'''


def assignment_id(path: str | Path) -> str:
    """``03_self_attention_vectors.ipynb`` -> "ch03"; ``A1_training_at_scale.ipynb`` -> "a1"."""
    stem = Path(path).name.split("_")[0]
    return f"ch{stem}" if stem.isdigit() else stem.lower()


def answer_source(stub: str, solution: str) -> str:
    """The autograded answer cell: ``stub`` with ``solution``'s body between the two delimiters.

    A book's solution begins with its stub, less the stub's last line,
    ``raise NotImplementedError`` (tests/test_notebooks.py holds every chapter to this): that
    line's place, at its indentation, takes the rest of the solution's definition, between
    ``### BEGIN SOLUTION`` and ``### END SOLUTION``. What the solution runs after the definition
    (a demonstration: an example's output, tx's own version) is not part of the answer and is
    left out; it could show the answer.
    """
    lines = stub.rstrip().split("\n")
    if lines[-1].strip() != "raise NotImplementedError":
        raise ValueError(f"a stub must end in `raise NotImplementedError`; this one ends in {lines[-1]!r}")
    head = lines[:-1]
    indent = lines[-1][: len(lines[-1]) - len(lines[-1].lstrip())]
    solution_lines = solution.rstrip().split("\n")
    if solution_lines[: len(head)] != head:
        raise ValueError("a solution must begin with its stub, less `raise NotImplementedError`: this one "
                         f"begins {solution_lines[: len(head)]!r}, the stub {head!r}")
    rest = solution_lines[len(head):]
    if indent:  # the body of the stub's definition: up to the first line back at column 0
        end = next((i for i, line in enumerate(rest) if line.strip() and not line[0].isspace()), len(rest))
        rest = rest[:end]
    while rest and not rest[-1].strip():
        rest.pop()
    return "\n".join(head + [indent + BEGIN] + rest + [indent + END])


def _title(notebook: dict[str, Any]) -> str:
    for cell in notebook["cells"]:
        heading = re.search(r"^#\s+(.+)$", _source(cell), re.M) if cell["cell_type"] == "markdown" else None
        if heading:
            return re.sub(r"^\d+\.?\s+", "", heading.group(1).strip())
    return "exercises"


def course_notebook(notebook: dict[str, Any], equations: dict[str, str], cites: dict[str, tuple[str, str]],
                    name: str) -> dict[str, Any] | None:
    """The nbgrader source notebook of one chapter (``name``, its file name), or None if it has no exercises."""
    cells = [json.loads(json.dumps(c)) for c in notebook["cells"]]
    start = next((i for i, c in enumerate(cells) if c["cell_type"] == "markdown"
                  and re.search(r"^## Exercises\b", _source(c), re.M | re.I)), None)
    stubs = [i for i, c in enumerate(cells) if "stub" in c.get("metadata", {}).get("tags", [])]
    if start is None or not stubs:
        return None
    # Each cell carries its exercise's label through learner_notebook (which copies cells, metadata
    # included, drops the solutions and adds its set-up cell); the grade ids are made from it below.
    label, count = assignment_id(name), 0
    in_words: set[str] = set()  # the exercises that also ask a question in words
    for cell in cells:
        text = _source(cell)
        if cell["cell_type"] == "markdown" and re.search(r"^[`:]{3,}\{exercise\}", text, re.M):
            count += 1
            found = re.search(r"^:label:[ \t]*(\S+)", text, re.M)
            label = found.group(1) if found else f"{assignment_id(name)}-exercise-{count}"
            if asks_in_words(text):
                in_words.add(label)
        cell.setdefault("metadata", {})[_LABEL] = label
    # The book's solutions in words: the key to the answers in words, in the teacher's copy.
    keys: dict[str, str] = {}
    for cell in cells:
        text = solution_text(cell)
        if text:
            label = cell["metadata"][_LABEL]
            keys[label] = "\n\n".join(filter(None, [keys.get(label), to_markdown(text, equations, cites)]))
    for i in stubs:
        solution = next(j for j in range(i + 1, len(cells)) if "solution" in cells[j]["metadata"].get("tags", []))
        try:
            cells[i]["source"] = answer_source(_source(cells[i]), _source(cells[solution]))
        except ValueError as error:
            raise ValueError(f"{name}, cell {i + 1}: {error}") from None
    exercises = _without_given_code(cells[start:])
    # The Exercises heading may close a longer cell (the Summary's): the assignment starts at the heading.
    head = exercises[0]
    head["source"] = _source(head)[re.search(r"^## Exercises\b", _source(head), re.M | re.I).start():]
    kept = [cells[i] for i in _needed_cells(cells[:start], [c for c in exercises if "solution" not in
                                                           c.get("metadata", {}).get("tags", [])])]
    answers = set().union(*(_top_level_names(_source(cells[i])) for i in stubs))
    try:
        kept = [{**c, "source": _unbinding(_source(c), answers)} if c["cell_type"] == "code" else c for c in kept]
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None
    chapter = chapter_label(name)
    number = str(chapter) if chapter is not None else name.split("_")[0]
    title = {"cell_type": "markdown", "id": "tx-course-title", "metadata": {},
             "source": TITLE.format(number=number, title=_title(notebook), points=POINTS,
                                    s="" if POINTS == 1 else "s")}
    learner = learner_notebook({**notebook, "cells": [title] + kept + exercises}, equations, cites, chapter)
    out, n = [], 0  # n: the book's cells, counted from 1 (the set-up cell is the course's own)
    for cell in learner["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        exercise = cell["metadata"].pop(_LABEL, None)
        if cell.get("id") == "tx-learner-setup":
            cell["source"] = SETUP_CELL.format(fingerprint=fingerprint())
            cell["id"] = "tx-course-setup"
            cell["metadata"]["nbgrader"] = _nbgrader("setup")
            out.append(cell)
            continue
        n += 1
        if "stub" in tags:
            cell["metadata"]["nbgrader"] = _nbgrader(f"{exercise}-answer", solution=True)
        elif "check" in tags:
            cell["metadata"]["nbgrader"] = _nbgrader(f"{exercise}-check", grade=True, points=POINTS)
            cell["source"] = with_hidden_test(_source(cell))
        else:
            cell["metadata"]["nbgrader"] = _nbgrader(f"cell-{n}")
        out.append(cell)
        if "check" in tags and exercise in in_words:
            out += written_answer(exercise, POINTS, keys.get(exercise, ""))
    return {**learner, "cells": out}


def course_files(chapters: str | Path = CHAPTERS, only: list[str] | None = None,
                 skipped: list[str] | None = None, variant: int = 1) -> dict[str, bytes]:
    """``{path in the course folder: contents}``: the config, the README and every assignment's notebook.

    ``only`` names assignments (``["ch03"]``) to write, of all by default; the names of
    chapters without exercises are appended to ``skipped``; ``variant`` is the number the
    hidden tests draw the course's inputs from.
    """
    chapters = Path(chapters).resolve()
    sources = sorted(chapters.glob("*.ipynb"))
    if not sources:
        raise FileNotFoundError(f"no notebooks in {chapters}: pass --chapters with the book's chapters folder.")
    if only:
        unknown = sorted(set(only) - {assignment_id(p) for p in sources})
        if unknown:
            raise ValueError(f"no chapter for assignment {', '.join(unknown)}: the assignments are "
                             f"{', '.join(assignment_id(p) for p in sources)}.")
        sources = [p for p in sources if assignment_id(p) in only]
    equations, cites = equation_numbers(chapters), citations(chapters.parent / "references.bib")
    files: dict[str, bytes] = {}
    for path in sources:
        notebook = course_notebook(json.loads(path.read_text(encoding="utf-8")), equations, cites, path.name)
        if notebook is None:
            if skipped is not None:
                skipped.append(path.name)
            continue
        files[f"source/{assignment_id(path)}/{path.name}"] = \
            (json.dumps(notebook, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
    assignments = [Path(name).parent.name for name in files]
    listed = ", ".join(f"`{a}`" for a in assignments) if assignments else "none"
    timeout = math.ceil(SLOWEST_SOLUTION * TIMEOUT_FACTOR)
    config = CONFIG.format(slowest=SLOWEST_SOLUTION, factor=TIMEOUT_FACTOR, timeout=timeout, memory_mb=MEMORY_MB,
                           fingerprint=fingerprint(), variant=variant)
    environment = {}
    if (chapters.parent / "requirements-learner.lock").exists() and (chapters.parent / "requirements.lock").exists():
        environment = {"requirements.txt": course_requirements(chapters.parent).encode("utf-8"),
                       "Dockerfile": DOCKERFILE.encode("utf-8")}
    return {**environment, "nbgrader_config.py": config.encode("utf-8"),
            "templates/base/mathjax.html.j2": NO_MATHJAX.encode("utf-8"),
            "README.md": README.format(assignments=listed, points=POINTS, s="" if POINTS == 1 else "s").encode(),
            **files}


def _variant_of(out_dir: Path) -> int:
    """The course's variant: the one its ``nbgrader_config.py`` holds, else a new one drawn at random."""
    import secrets

    config = out_dir / "nbgrader_config.py"
    text = config.read_text(encoding="utf-8", errors="replace") if config.is_file() else ""
    found = re.search(r"^c\.GradeInIsolation\.variant\s*=\s*(\d+)\s*$", text, re.M)
    return int(found.group(1)) if found else 1 + secrets.randbelow(2**31 - 2)


def write_course(out_dir: str | Path, chapters: str | Path = CHAPTERS, only: list[str] | None = None,
                 force: bool = False, variant: int | None = None) -> tuple[Written, list[str]]:
    """Write (or update) the course in ``out_dir``; return what was written and kept, and the chapters skipped.

    ``variant`` (the hidden tests' inputs) is, unless given, the one the course's config already
    holds, or a new one at random.
    """
    chapters, out_dir = Path(chapters).resolve(), Path(out_dir).resolve()
    if out_dir == chapters or chapters in out_dir.parents:
        raise ValueError(f"{out_dir} is inside the chapters folder: choose another OUTDIR.")
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"{out_dir} is a file, not a folder: choose a folder for the course.")
    skipped: list[str] = []
    files = course_files(chapters, only, skipped, variant if variant is not None else _variant_of(out_dir))
    done = write_keeping(out_dir, files, MANIFEST, force)
    if out_dir / "nbgrader_config.py" in done.kept:
        updated = _update_kept_config(out_dir / "nbgrader_config.py", files["nbgrader_config.py"].decode(),
                                      variant is not None)
        if updated:
            done.why["nbgrader_config.py"] = f"you changed it; its {' and '.join(updated)} line updated"
    return done, skipped


def _update_kept_config(config: Path, new: str, variant: bool) -> list[str]:
    """In a config the teacher changed, the lines the course owns set as in ``new``: the tx it was
    written for, and the variant when one was given. The names of the lines changed."""
    text, changed = config.read_text(encoding="utf-8"), []
    for name in ("tx_fingerprint",) + (("variant",) if variant else ()):
        line = re.compile(rf"^c\.GradeInIsolation\.{name} = .*$", re.M)
        wanted = line.search(new)
        if wanted and line.search(text) and line.search(text).group(0) != wanted.group(0):
            text = line.sub(lambda _: wanted.group(0), text, count=1)
            changed.append(name)
    if changed:
        config.write_text(text, encoding="utf-8")
    return changed


def main(argv: list[str] | None = None, prog: str = "python -m tx.exercises course") -> None:
    """``python -m tx.exercises course OUTDIR [--only ch03 ...] [--force] [--check]``."""
    import argparse

    parser = argparse.ArgumentParser(prog=prog, description="Write the book's exercises as an nbgrader course "
                                     "(files you changed are kept unless you give --force).")
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--chapters", type=Path, default=CHAPTERS)
    parser.add_argument("--only", nargs="+", metavar="ASSIGNMENT", help="these assignments only (e.g. ch03 a1)")
    parser.add_argument("--force", action="store_true", help="overwrite files even if you changed them")
    parser.add_argument("--variant", type=int, metavar="N",
                        help="the number the hidden tests draw the course's inputs from (default: the one "
                             "nbgrader_config.py holds, or one drawn at random)")
    parser.add_argument("--check", action="store_true",
                        help="then grade the solutions and the unsolved release with nbgrader, in a scratch copy")
    args = parser.parse_args(argv)
    try:
        if args.variant is not None and args.variant < 1:
            raise ValueError(f"--variant must be a whole number of at least 1, got {args.variant}.")
        done, skipped = write_course(args.out_dir, args.chapters, args.only, force=args.force, variant=args.variant)
    except (ValueError, FileNotFoundError) as error:
        parser.exit(2, f"{prog}: {error}\n")
    for name in skipped:
        print(f"skipped {name}: it has no exercises")
    print(f"wrote {len(done.written)} files of the course to {args.out_dir}")
    if done.kept:
        names = [p.relative_to(Path(args.out_dir).resolve()).as_posix() for p in done.kept]
        lines = [f"kept {name}: {done.why.get(name, 'you changed it')}" for name in names]
        print("\n".join(lines) + "\nYour edits in them are safe. To replace them with the book's current "
              "version (your edits are lost), move them away or run again with --force.", file=sys.stderr)
    if not args.check:
        return
    sys.stdout.flush()
    try:
        scores = check_course(args.out_dir, args.only)
    except (ValueError, RuntimeError) as error:
        parser.exit(1, f"{prog} --check: {error}\n")
    print(report(scores))
    wrong = [(a, *w) for a, s in scores.items() for w in s.wrong]
    if wrong:
        lines = [f"{a}, {student}: {grade_id} scored {got if got is not None else 'nothing'}, a teacher gives {want:g}"
                 for a, student, grade_id, got, want in wrong]
        parser.exit(1, "the course does not grade as it should:\n" + "\n".join(lines) + "\n")
    print("every assignment grades as a teacher would: the solutions full marks, every second exercise solved "
          "half of them, and every wrong, unparseable, empty, aliasing, checker-replacing, \"Correct\"-printing "
          "and runaway answer zero")
