"""The code a chapter page shows fits its column: 79 characters a line.

At 1280 px the book's column holds 79 characters of code. A longer line wraps back to
column 0, where it hides Python's indentation from the reader. Two kinds of code reach
the page: the chapters' code cells, and tx's own source that a chapter shows with
``tx.viz.show_source(...)``. (tests/site/test_explorers.py checks the built pages.)
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import textwrap

import pytest

from notebook_tools import CHAPTERS, ROOT, load, source
from tx.exercises.learner import equation_numbers, number_equation_labels

COLUMN = 79  # characters of code the page's column holds at 1280 px
NOTEBOOKS = sorted(CHAPTERS.glob("*.ipynb"))


EQUATIONS = equation_numbers(CHAPTERS)


def code_cells(path):
    """(index, source) of every code cell of a chapter notebook, as the page and the learner
    edition show it: an equation's label in a comment as its number ("equation (10.2)")."""
    return [(i, number_equation_labels(source(c), EQUATIONS))
            for i, c in enumerate(load(path)["cells"]) if c["cell_type"] == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_code_line_fits_the_column(path):
    wide = [f"cell {i}: {line!r} ({len(line)})"
            for i, text in code_cells(path) for line in text.splitlines() if len(line) > COLUMN]
    assert not wide, f"{path.name}: {len(wide)} code lines over {COLUMN} characters:\n" + "\n".join(wide)


def dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of names and attributes; None for any other expression."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


def imported_names(trees: list[ast.Module]) -> dict[str, str]:
    """What each name a chapter imports stands for: {"lm_train": "tx.lm_train", "tx": "tx", ...}."""
    names = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        names[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        names[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def resolve(name: str):
    """The object a fully qualified dotted name stands for, importing modules on the way."""
    parts = name.split(".")
    obj = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], start=1):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            obj = importlib.import_module(".".join(parts[: i + 1]))
    return obj


def shown_sources() -> list[tuple[str, str]]:
    """(chapter and the name it passes, fully qualified name) for every ``show_source(...)`` call."""
    found = []
    for path in NOTEBOOKS:
        trees = []
        for _, text in code_cells(path):
            try:
                trees.append(ast.parse(text))
            except SyntaxError:  # a cell with IPython syntax holds no show_source call to check
                assert "show_source" not in text, f"{path.name}: cannot parse a cell that calls show_source"
        names = imported_names(trees)
        for tree in trees:
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and (dotted(node.func) or "").split(".")[-1] == "show_source":
                    arg = dotted(node.args[0]) if node.args else None
                    assert arg, f"{path.name}: show_source({ast.unparse(node.args[0])}) is not a dotted name"
                    head, _, rest = arg.partition(".")
                    full = names.get(head, head) + (f".{rest}" if rest else "")
                    found.append((f"{path.stem}: {arg}", full))
    return found


SHOWN = shown_sources()


def test_the_chapters_show_tx_source():
    # The parse above finds the calls: a chapter that shows nothing would make the next test vacuous.
    assert len(SHOWN) >= 25 and all(full.startswith("tx.") for _, full in SHOWN), SHOWN


@pytest.mark.parametrize("where, name", SHOWN, ids=[where for where, _ in SHOWN])
def test_shown_source_fits_the_column(where, name):
    text = textwrap.dedent(inspect.getsource(resolve(name)))  # what tx.viz.show_source displays
    wide = [f"{line!r} ({len(line)})" for line in text.splitlines() if len(line) > COLUMN]
    assert not wide, f"{name} ({where}): {len(wide)} lines over {COLUMN} characters:\n" + "\n".join(wide)


# A check or its plumbing, in a listing's body. Checks live in functions of their own, which
# tx.checks.guarded names above the listing (``@guarded(_check_...)``): that line may stay.
PLUMBING = re.compile(r"\braise\b|\btry:|\bexcept\b|\bcheck_\w+\(|\b_check\w*\(|isinstance\(")


def test_the_chapters_show_what_they_teach():
    shown = {full for _, full in SHOWN}
    for teaches in ("tx.self_attention_by_vectors", "tx.attention", "tx.MultiHeadAttention.forward",
                    "tx.Embedding.forward", "tx.EncoderLayer", "tx.DecoderLayer", "tx.Transformer.decode"):
        assert teaches in shown, f"no chapter shows {teaches}"


@pytest.mark.parametrize("where, name", SHOWN, ids=[where for where, _ in SHOWN])
def test_shown_source_holds_no_check(where, name):
    # The page teaches the computation: a listing with input checks and error messages buries it.
    body = [line for line in inspect.getsource(resolve(name)).splitlines() if not line.strip().startswith("@guarded(")]
    bad = [line.strip() for line in body if PLUMBING.search(line.split("#")[0])]
    assert not bad, f"{name} ({where}) checks or raises; move it into the function's guard: {bad}"


def test_no_docstring_names_an_equation_by_its_label():
    # The API page renders tx's docstrings as prose, where no code transform turns a label into
    # "equation (10.5)": a docstring names an equation by its number or its meaning, and the
    # site test test_no_equation_label_shown would fail on the page (as it once did).
    label = re.compile(r"\beq-(?:ch\d\d|a\d+)-[\w-]+")
    found = []
    for path in sorted((ROOT / "tx").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node) or ""
                found += [f"{path.relative_to(ROOT)}: {m.group()}" for m in label.finditer(doc)]
    assert not found, found
