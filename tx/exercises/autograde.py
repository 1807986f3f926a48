"""The course's autograde step: nbgrader's preprocessor that grades in isolation (:mod:`tx.exercises.grading`).

The course's ``nbgrader_config.py`` names it in place of nbgrader's ``Execute``, as a string,
so that only ``nbgrader autograde`` imports it (and nbgrader): the other nbgrader commands
never load tx.
"""

from __future__ import annotations

from typing import Any

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Float, Integer, Unicode

from .grading import Limits, fingerprint, grade_cells

__all__ = ["GradeInIsolation"]


def _role(cell: Any) -> str:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    if meta.get("solution"):
        return "answer"
    return "check" if meta.get("grade") else "given"


class GradeInIsolation(NbGraderPreprocessor):
    """nbgrader's autograde step with the checks sound: see the module's description.

    In ``nbgrader_config.py``, in place of nbgrader's ``Execute`` in
    ``c.Autograde.autograde_preprocessors``; its settings are ``c.GradeInIsolation.timeout``
    (seconds per exercise), ``.memory_mb`` (per exercise) and ``.tx_fingerprint`` (the tx the
    course was written for: grading with another is refused).
    """

    timeout = Float(30.0, help="seconds each exercise's answer cells and check may take in all").tag(config=True)
    memory_mb = Integer(2048, help="megabytes of memory each exercise's sandbox may use").tag(config=True)
    tx_fingerprint = Unicode("", help="tx's version and source hash the course was written for").tag(config=True)

    def preprocess(self, nb: Any, resources: Any) -> tuple[Any, Any]:
        if self.tx_fingerprint and self.tx_fingerprint != fingerprint():
            raise RuntimeError(
                f"this course was written for tx {self.tx_fingerprint}, but the grader has tx {fingerprint()}: "
                "grade with the tx your students used (the course's README says how to install it), or "
                "write the course again with this tx and give your students the same.")
        cells = [{"index": i, "role": _role(cell), "source": cell.source}
                 for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
        outputs = grade_cells(cells, Limits(timeout=self.timeout, memory_mb=self.memory_mb))
        count = 0
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                count += 1
                cell.outputs = [nbformat.from_dict(o) for o in outputs.get(i, [])]
                cell.execution_count = count
        return nb, resources
