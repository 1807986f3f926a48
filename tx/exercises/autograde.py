"""The course's autograde step: nbgrader's preprocessor that grades in isolation (:mod:`tx.exercises.grading`).

The course's ``nbgrader_config.py`` names it in place of nbgrader's ``Execute``, as a string,
so that only ``nbgrader autograde`` imports it (and nbgrader): the other nbgrader commands
never load tx.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Dict, Float, Integer, Unicode

from .grading import Limits, fingerprint, grade_cells

__all__ = ["GradeInIsolation"]


def _role(cell: Any, teachers: dict[str, tuple[str, float | None]]) -> tuple[str, str, float | None]:
    """``(role, source, points)`` of a code cell: what runs where, what runs, and what a check is worth.

    Trust comes from the gradebook, never from the submitted notebook: a cell is the teacher's
    ("given", or "check" if it is graded) only when its grade id is one of the source
    notebook's read-only cells there (``teachers``: ``{grade_id: (source, points or None)}``), and then
    the gradebook's source is what runs. Every other cell, an answer, a cell the student added,
    or one whose nbgrader metadata the student made up, is the student's and runs in a sandbox.
    """
    grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
    if grade_id in teachers:
        source, points = teachers[grade_id]
        return ("check" if points is not None else "given"), source, points
    return "answer", cell.source, None


def _teachers_cells(resources: Any) -> dict[str, tuple[str, float | None]]:
    """``{grade_id: (source, points)}`` of the read-only cells of this notebook's source, from the gradebook
    (points None for a cell that is not graded)."""
    from nbgrader.api import Gradebook

    info = resources["nbgrader"]
    with Gradebook(info["db_url"]) as gradebook:
        notebook = gradebook.find_notebook(info["notebook"], info["assignment"])
        solutions = {c.name for c in notebook.solution_cells}
        graded = {c.name: c.max_score for c in notebook.grade_cells}
        return {c.name: (c.source, graded.get(c.name)) for c in notebook.source_cells
                if c.locked and c.name not in solutions and c.cell_type == "code"}


class GradeInIsolation(NbGraderPreprocessor):
    """nbgrader's autograde step with the checks sound: see the module's description.

    In ``nbgrader_config.py``, in place of nbgrader's ``Execute`` in
    ``c.Autograde.autograde_preprocessors``; its settings are ``c.GradeInIsolation.timeout``
    (seconds per exercise), ``.memory_mb`` (per exercise), ``.student_limits`` (other limits
    for some students), ``.tx_fingerprint`` (the tx the course was written for: grading with
    another is refused) and ``.variant`` (the number the hidden tests draw their inputs from).
    """

    timeout = Float(30.0, help="seconds each exercise's answer cells and check may take in all").tag(config=True)
    memory_mb = Integer(2048, help="megabytes of memory each exercise's sandbox may use").tag(config=True)
    student_limits = Dict(help="{student id or pattern: {'timeout': s, 'memory_mb': MB}}: other limits for "
                               "the students it names (extra time, say); the first pattern that matches "
                               "counts").tag(config=True)
    tx_fingerprint = Unicode("", help="tx's version and source hash the course was written for").tag(config=True)
    variant = Integer(1, help="the course's own inputs: what hidden tests' variant=\"course\" draws").tag(config=True)

    def preprocess(self, nb: Any, resources: Any) -> tuple[Any, Any]:
        if self.tx_fingerprint and self.tx_fingerprint != fingerprint():
            raise RuntimeError(
                f"this course was written for tx {self.tx_fingerprint}, but the grader has tx {fingerprint()}: "
                "grade with the tx your students used (the course's README says how to install it), or "
                "write the course again with this tx and give your students the same.")
        teachers = _teachers_cells(resources)
        cells = [dict(zip(("role", "source", "points"), _role(cell, teachers)), index=i)
                 for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
        outputs = grade_cells(cells, self.limits(resources["nbgrader"]["student"]))
        count = 0
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                count += 1
                cell.outputs = [nbformat.from_dict(o) for o in outputs.get(i, [])]
                cell.execution_count = count
        return nb, resources

    def limits(self, student: str) -> Limits:
        """The limits ``student``'s answers are graded under: the course's, or what
        ``student_limits`` gives the first pattern that matches the student's id."""
        own = next((v for pattern, v in self.student_limits.items() if fnmatchcase(student, pattern)), {})
        unknown = set(own) - {"timeout", "memory_mb"}
        if unknown:
            raise ValueError(f"GradeInIsolation.student_limits for {student!r} names {sorted(unknown)}: "
                             "give only 'timeout' (seconds) and 'memory_mb'.")
        return Limits(timeout=float(own.get("timeout", self.timeout)),
                      memory_mb=int(own.get("memory_mb", self.memory_mb)), variant=self.variant)
