"""What every exercise checker promises, tested for all of them at once.

The checkers are found by name (``check_*`` in ``tx.exercises.chNN``), so a new one is
covered without a line here. Each chapter's own file, ``test_exercises_chNN.py``, tests
what is particular to its checkers: the reference answers pass, the usual mistakes get
the right hint.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
from pathlib import Path

import pytest

import tx.exercises
from conftest import rng_untouched

ROOT = Path(__file__).resolve().parents[1]
CHAPTER_MODULES = sorted(m.name for m in pkgutil.iter_modules(tx.exercises.__path__) if re.fullmatch(r"ch\d\d", m.name))


def checkers_of(chapter: str) -> dict[str, object]:
    module = importlib.import_module(f"tx.exercises.{chapter}")
    return {
        name: fn for name, fn in inspect.getmembers(module, inspect.isfunction)
        if name.startswith("check_") and fn.__module__ == module.__name__
    }


CHECKERS = [(f"{ch}.{name}", fn) for ch in CHAPTER_MODULES for name, fn in checkers_of(ch).items()]


def stub(*args, **kwargs):
    raise NotImplementedError


def test_every_chapter_has_two_to_four_checkers():
    chapters = sorted(p.name[:2] for p in (ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
    assert CHAPTER_MODULES == [f"ch{n}" for n in chapters]
    for chapter in CHAPTER_MODULES:
        assert 2 <= len(checkers_of(chapter)) <= 4, chapter


@pytest.mark.parametrize("name, checker", CHECKERS, ids=[name for name, _ in CHECKERS])
def test_a_stub_gets_a_hint(name, checker):
    with pytest.raises(AssertionError, match="still raises NotImplementedError"):
        checker(stub)


@pytest.mark.parametrize("name, checker", CHECKERS, ids=[name for name, _ in CHECKERS])
def test_something_other_than_a_function_gets_a_hint(name, checker):
    with pytest.raises(AssertionError, match="expected a function"):
        checker(None)


@pytest.mark.parametrize("name, checker", CHECKERS, ids=[name for name, _ in CHECKERS])
def test_checking_leaves_the_random_stream_alone(name, checker):
    # A chapter is seeded once at the top; an exercise's check must not shift what the
    # notebook draws next. (The chapters' own tests check the same with correct answers.)
    def check_a_stub():
        with pytest.raises(AssertionError):
            checker(stub)

    assert rng_untouched(check_a_stub)


def test_each_checker_is_called_once_by_its_own_chapter():
    calls = []
    for path in sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if "check" in cell.get("metadata", {}).get("tags", []):
                for chapter, name in re.findall(r"tx\.exercises\.(ch\d\d)\.(check_\w+)", "".join(cell["source"])):
                    assert chapter == f"ch{path.name[:2]}", f"{path.name} calls {chapter}.{name}"
                    calls.append(f"{chapter}.{name}")
    assert sorted(calls) == sorted(name for name, _ in CHECKERS)


# ----------------------------------------------------------------- every checker, against degenerate answers


def reference_solutions() -> list[tuple[str, object, object]]:
    """(checker name, checker, the chapter's own solution function) for every exercise.

    The solution is the function the chapter's solution cell defines, executed on its own
    (its definitions and imports only), so these tests use the very answer the book shows.
    """
    import ast
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    import tx

    found = []
    for path in sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        solutions = ["".join(c["source"]) for c in cells if "solution" in c.get("metadata", {}).get("tags", [])]
        checks = ["".join(c["source"]) for c in cells if "check" in c.get("metadata", {}).get("tags", [])]
        for solution, check in zip(solutions, checks):
            chapter, name, arg = re.search(r"tx\.exercises\.(ch\d\d)\.(check_\w+)\((\w+)\)", check).groups()
            tree = ast.parse(solution)
            tree.body = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.Import, ast.ImportFrom))]
            namespace = {"torch": torch, "math": math, "tx": tx, "nn": nn, "F": F}
            exec(compile(tree, f"{path.name}:solution", "exec"), namespace)
            found.append((f"{chapter}.{name}", checkers_of(chapter)[name], namespace[arg]))
    return found


SOLUTIONS = reference_solutions()


def poisoned(value, bad: float):
    """``value`` with every number replaced by ``bad`` (nan or inf), keeping its container."""
    import torch

    if isinstance(value, torch.Tensor):
        return torch.full(value.shape, bad)
    if isinstance(value, (list, tuple)):
        return type(value)(poisoned(v, bad) for v in value)
    return bad


@pytest.mark.parametrize("name, checker, solution", SOLUTIONS, ids=[s[0] for s in SOLUTIONS])
def test_the_chapters_solution_passes(name, checker, solution, capsys):
    checker(solution)
    assert capsys.readouterr().out.startswith("Correct:")


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("name, checker, solution", SOLUTIONS, ids=[s[0] for s in SOLUTIONS])
def test_nan_and_inf_answers_fail(name, checker, solution, bad):
    # A nan difference is never greater than a tolerance: a careless comparison lets nan pass.
    with pytest.raises(tx.exercises.CheckFailed):
        checker(lambda *args: poisoned(solution(*args), bad))


@pytest.mark.parametrize("name, checker, solution", SOLUTIONS, ids=[s[0] for s in SOLUTIONS])
def test_a_hard_coded_answer_fails(name, checker, solution):
    # The answer to the checker's first question, returned whatever the question: every
    # checker asks more than one, some on inputs the learner never sees.
    if not inspect.signature(solution).parameters:
        pytest.skip("this exercise takes no input: its answer is one fixed value, worked out by hand")
    first = []

    def hard_coded(*args):
        if not first:
            first.append(solution(*args))
        return first[0]

    with pytest.raises(tx.exercises.CheckFailed):
        checker(hard_coded)


@pytest.mark.parametrize("name, checker, solution", SOLUTIONS, ids=[s[0] for s in SOLUTIONS])
def test_a_failed_check_shows_its_hint_alone(name, checker, solution):
    # In Jupyter, IPython prints _render_traceback_ instead of a traceback through tx.
    with pytest.raises(tx.exercises.CheckFailed) as info:
        checker(lambda *args: poisoned(solution(*args), float("nan")))
    (line,) = info.value._render_traceback_()
    assert str(info.value) in line and "Traceback" not in line
