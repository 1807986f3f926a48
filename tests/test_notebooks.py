"""Notebook hygiene: every chapter is committed clean and every exercise is complete."""

from __future__ import annotations

import ast
import re
import sys

import pytest

from notebook_tools import CHAPTERS, load, role, source, tags, toc_chapters

NOTEBOOKS = sorted(CHAPTERS.glob("*.ipynb"))
ALLOWED_IMPORTS = {"tx", "torch", "numpy", "matplotlib", "ipywidgets", "IPython"} | set(sys.stdlib_module_names)
ALLOWED_IMPORTS |= {"sklearn"}  # scikit-learn: chapter 14's digits and its logistic-regression baseline
EXERCISE_PARTS = ["exercise", "stub", "solution-start", "solution", "solution-end", "check"]


def _ends_with_explore(code: str) -> bool:
    """The cell's last statement is tx.explorer.explore(...), so the cell shows the explorer."""
    try:
        body = ast.parse(code).body
    except SyntaxError:
        return False
    last = body[-1] if body else None
    return (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
            and ast.unparse(last.value.func) == "tx.explorer.explore")


def ids(paths):
    return [p.name for p in paths]


def test_every_chapter_is_in_the_toc_and_every_toc_chapter_exists():
    listed = toc_chapters()
    assert sorted(listed) == NOTEBOOKS, "chapters/ and _toc.yml disagree"
    assert [p.name for p in listed] == sorted(p.name for p in listed), "_toc.yml must list chapters in numbered order"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
class TestChapter:
    def test_committed_without_outputs(self, path):
        for i, cell in enumerate(load(path)["cells"]):
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [], f"cell {i} has stored outputs: clear them before committing"
                assert cell["execution_count"] is None, f"cell {i} has an execution count"

    def test_every_cell_has_its_own_id(self, path):
        # nbformat 4.5 cell ids: without one, nbformat warns today and will refuse the notebook
        ids = [cell.get("id") for cell in load(path)["cells"]]
        assert None not in ids, f"cells {[i for i, c in enumerate(ids) if c is None]} have no id"
        assert len(set(ids)) == len(ids), "two cells share an id"

    def test_kernel_is_python3(self, path):
        assert load(path)["metadata"]["kernelspec"]["name"] == "python3"

    def test_explorers_use_tx_explorer(self, path):
        """At least one explorer, made with tx.explorer (live in Jupyter, working on the website)."""
        code_cells = [c for c in load(path)["cells"] if c["cell_type"] == "code"]
        for cell in code_cells:
            assert not re.search(r"\bwidgets\.|^\s*(import|from)\s+ipywidgets", source(cell), re.M), (
                "a hand-wired ipywidget does nothing on the website: make the explorer with "
                f"tx.explorer.explore(draw, name=tx.explorer.Choice([...])), see chapters/README.md:\n{source(cell)}"
            )
        explorers = [c for c in code_cells if _ends_with_explore(source(c))]
        assert explorers, "no explorer: end a cell with tx.explorer.explore(draw, ...) (chapters/README.md)"
        for cell in explorers:
            mystnb = cell["metadata"].get("mystnb", {})
            assert mystnb.get("figure", {}).get("caption") and mystnb.get("image", {}).get("alt"), (
                "an explorer's cell needs a caption and alt text in its metadata (mystnb.figure, mystnb.image)"
            )

    def test_seeded_and_imports_only_the_books_packages(self, path):
        code = "\n".join(source(c) for c in load(path)["cells"] if c["cell_type"] == "code")
        assert "torch.manual_seed(" in code, "seed torch so the notebook gives the same numbers every run"
        assert not re.search(r"^\s*[!%]\s*pip", code, re.M), "no pip install cells: requirements.txt installs everything"
        for match in re.finditer(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)", code, re.M):
            assert match.group(1) in ALLOWED_IMPORTS, f"imports {match.group(1)}: chapters use tx, torch, numpy, matplotlib, ipywidgets"

    def test_sets_the_figure_style_before_any_figure(self, path):
        # tx.viz applies the book's style (96 dpi) when imported; a figure made before that
        # is drawn at matplotlib's 100 dpi, 711 px wide, and the page shrinks it (issue 24).
        code = [source(c) for c in load(path)["cells"] if c["cell_type"] == "code"]
        if any(re.search(r"^\s*(import|from)\s+matplotlib", c, re.M) for c in code):
            assert re.search(r"^(import tx\.viz|from tx\.viz import)", code[0], re.M), (
                "the first code cell imports matplotlib's figures but not tx.viz: add `import tx.viz`")

    def test_opens_with_goals_and_closes_with_summary_and_exercises(self, path):
        cells = load(path)["cells"]
        assert cells[0]["cell_type"] == "markdown" and source(cells[0]).lstrip().startswith("# ")
        headings = [line for c in cells if c["cell_type"] == "markdown" for line in source(c).splitlines() if line.startswith("## ")]
        assert any("summary" in h.lower() for h in headings), "needs a '## Summary' section"
        assert headings[-1].lower().startswith("## exercises"), "the exercises close the chapter"

    def test_exercises_are_complete_and_balanced(self, path):
        roles = [r for r in (role(c) for c in load(path)["cells"]) if r]
        n = roles.count("exercise")
        assert 2 <= n <= 4, f"{n} exercises; each chapter has 2 to 4"
        assert roles == EXERCISE_PARTS * n, (
            "every exercise must be: exercise directive, stub cell (tag 'stub'), solution-start, "
            f"solution cell (tag 'solution'), solution-end, check cell (tag 'check'); got {roles}"
        )

    def test_hidden_cells_hold_no_exercise_and_no_figure(self, path):
        # remove-cell hides the asserts that keep the prose true (chapters/README.md); a hidden
        # exercise part, figure or explorer would vanish from the page without a word.
        for cell in load(path)["cells"]:
            hidden = {"remove-cell", "remove-input"} & set(tags(cell))
            if not hidden:
                continue
            assert cell["cell_type"] == "code" and role(cell) is None, source(cell)
            if "remove-cell" in hidden:
                assert "mystnb" not in cell["metadata"] and not _ends_with_explore(source(cell)), (
                    f"a remove-cell cell draws a figure nobody would see:\n{source(cell)}"
                )

    def test_stubs_raise_and_checks_call_a_checker(self, path):
        for cell in load(path)["cells"]:
            if role(cell) == "stub":
                assert "raise NotImplementedError" in source(cell)
            if role(cell) == "check":
                assert "tx.exercises." in source(cell), "a check cell calls a checker in tx.exercises"
                # On the website the check runs under the solution; its "Correct: ..." line
                # would give the answer away under the unsolved stub, so the site hides it.
                assert "remove-output" in tags(cell), "tag the check cell 'remove-output': the website hides its verdict"
                assert "raises-exception" not in tags(cell), (
                    "a chapter's checks pass (nbval runs them under the solutions); only the learner edition "
                    "tags them 'raises-exception'"
                )
            if role(cell) == "solution-start":
                assert ":class: dropdown" in source(cell), "solutions are collapsed on the website"
