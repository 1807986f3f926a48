"""The learner edition has no solutions, and without them no check passes."""

from __future__ import annotations

import json

import nbformat
import pytest
from nbclient import NotebookClient

from notebook_tools import CHAPTERS, load, role
from tx.exercises.learner import strip_solutions, write_learner_edition

NOTEBOOKS = sorted(CHAPTERS.glob("*.ipynb"))


def test_writer_refuses_the_chapters_folder(tmp_path):
    with pytest.raises(ValueError, match="solutions are kept"):
        write_learner_edition(CHAPTERS, CHAPTERS)


def test_strip_solutions_drops_solution_cells_only():
    nb = {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "```{exercise} x\n:label: ex-x\n```"},
        {"cell_type": "code", "metadata": {"tags": ["stub"]}, "source": "raise NotImplementedError", "outputs": [1], "execution_count": 3},
        {"cell_type": "markdown", "metadata": {}, "source": "```{solution-start} ex-x\n:class: dropdown\n```"},
        {"cell_type": "code", "metadata": {"tags": ["solution"]}, "source": "x = 1", "outputs": [], "execution_count": None},
        {"cell_type": "markdown", "metadata": {}, "source": "```{solution-end}\n```"},
        {"cell_type": "code", "metadata": {"tags": ["check"]}, "source": "check(x)", "outputs": [], "execution_count": None},
    ], "metadata": {}}
    out = strip_solutions(nb)
    assert [role(c) for c in out["cells"]] == ["exercise", "stub", "check"]
    assert out["cells"][1]["outputs"] == [] and out["cells"][1]["execution_count"] is None


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_learner_edition_fails_at_every_check(path, tmp_path):
    (learner,) = [p for p in write_learner_edition(tmp_path, CHAPTERS) if p.name == path.name]
    nb = nbformat.read(learner, as_version=4)
    assert not any(role(c) in ("solution", "solution-start", "solution-end") for c in nb.cells)
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(CHAPTERS)}}).execute()
    checks = [c for c in nb.cells if role(c) == "check"]
    assert checks
    for cell in checks:
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert errors, f"a check passed without its solution:\n{cell.source}"
        assert errors[0].ename == "AssertionError", f"the check should fail with a hint, not {errors[0].ename}"
