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


def test_each_exercise_asks_for_the_function_its_stub_defines():
    # "Write `patchify(...)`" over a stub named patchify_mine left learners unsure which to write.
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        prompt = ""
        for cell in json.loads(path.read_text())["cells"]:
            text = "".join(cell["source"])
            if cell["cell_type"] == "markdown" and re.search(r"^(```|:::)\{exercise\}", text, re.M):
                prompt = text
            elif "stub" in cell.get("metadata", {}).get("tags", []):
                defined = re.findall(r"^def (\w+)", text, re.M)
                asked = re.findall(r"\b[Ww]rite `(\w+)\(", prompt)
                assert set(asked) <= set(defined), f"{path.name}: the exercise asks for {asked}, the stub defines {defined}"


# ----------------------------------------------------------------- every checker, against degenerate answers


def reference_solutions(pattern: str = "[0-9][0-9]_*.ipynb") -> list[tuple[str, object, object]]:
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
    for path in sorted((ROOT / "chapters").glob(pattern)):
        cells = json.loads(path.read_text())["cells"]
        solutions = ["".join(c["source"]) for c in cells if "solution" in c.get("metadata", {}).get("tags", [])]
        checks = ["".join(c["source"]) for c in cells if "check" in c.get("metadata", {}).get("tags", [])]
        for solution, check in zip(solutions, checks):
            chapter, name, arg = re.search(r"tx\.exercises\.(ch\d\d|a\d)\.(check_\w+)\(\s*(\w+),?\s*\)", check).groups()
            tree = ast.parse(solution)
            tree.body = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.Import, ast.ImportFrom))]
            namespace = {"torch": torch, "math": math, "tx": tx, "nn": nn, "F": F}
            exec(compile(tree, f"{path.name}:solution", "exec"), namespace)
            found.append((f"{chapter}.{name}", checkers_of(chapter)[name], namespace[arg]))
    return found


SOLUTIONS = reference_solutions()
EVERY_SOLUTION = SOLUTIONS + reference_solutions("A[0-9]_*.ipynb")  # the appendix's too, for the course's parts


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


# ----------------------------------------------------------------- an answer that raises


def _module_from(path: Path, text: str):
    """Import ``text`` as a module from the real file ``path``, as a learner's own file would be."""
    import importlib.util

    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ANSWERS = '''\
import torch


def softmax(scores):
    weights = torch.exp(scores)
    return weights / weights[len(scores)]


def via_torch(scores):
    return torch.matmul(scores, "not a tensor")
'''


def test_an_answer_that_raises_gets_a_hint_naming_the_learners_line(tmp_path):
    answers = _module_from(tmp_path / "my_answers.py", ANSWERS)
    with pytest.raises(tx.exercises.CheckFailed) as info:
        tx.exercises.ch03.check_softmax(answers.softmax)
    hint = str(info.value)
    assert hint.startswith("softmax raised IndexError: index ")  # the exception and its message
    assert "is out of bounds" in hint
    # The learner's own line, with its number and text, not a line of the checker's.
    assert "my_answers.py, line 6: `return weights / weights[len(scores)]`" in hint
    assert "exercises" not in hint and "\n" not in hint
    (rendered,) = info.value._render_traceback_()
    assert hint in rendered


def test_an_error_raised_inside_torch_points_at_the_learners_call(tmp_path):
    # The innermost frame is torch's (or C code); the line shown is the learner's, which called it.
    answers = _module_from(tmp_path / "my_answers.py", ANSWERS)
    with pytest.raises(tx.exercises.CheckFailed) as info:
        tx.exercises.call(answers.via_torch, __import__("torch").zeros(3))
    hint = str(info.value)
    assert hint.startswith("via_torch raised TypeError: ")
    assert "my_answers.py, line 10: `return torch.matmul(scores, \"not a tensor\")`" in hint


def test_a_check_failed_inside_the_answer_is_not_rewrapped():
    def refuses():
        raise tx.exercises.CheckFailed("your function calls torch.softmax")

    with pytest.raises(tx.exercises.CheckFailed, match=r"^your function calls torch.softmax$"):
        tx.exercises.call(refuses)


@pytest.fixture(scope="module")
def in_a_kernel(tmp_path_factory):
    """One kernel, as Run All runs a learner's notebook: an answer that raises and its check; an
    answer with a syntax error and its check; a NameError outside any check."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    answer = "import torch\nimport tx\n\n\ndef softmax(scores):\n    return scores[len(scores)]"
    broken = "def scaled_score(q, k:\n    return q @ k"
    cells = [answer, "tx.exercises.ch03.check_softmax(softmax)", broken,
             "tx.exercises.ch03.check_scaled_score(scaled_score)", "not_defined_anywhere + 1",
             "tx.exercises.ch03.check_attend_one_word(attend_one_word)"]
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path_factory.mktemp("kernel"))}}).execute()
    return nb


def test_in_a_kernel_the_hint_is_one_line_naming_the_cells_line(in_a_kernel):
    nb = in_a_kernel
    assert not [o for o in nb.cells[0].outputs if o.output_type == "error"]
    (error,) = [o for o in nb.cells[1].outputs if o.output_type == "error"]
    assert error.ename == "CheckFailed"
    assert len(error.traceback) == 1 and "\n" not in error.traceback[0]
    line = error.traceback[0]
    # Jupyter's own name for the cell's code, then the learner's line and its text.
    assert "softmax raised IndexError" in line and "Cell In[1], line 6: `return scores[len(scores)]`" in line
    assert "exercises/" not in line and "File " not in line


def test_in_a_kernel_a_check_whose_answer_failed_says_why_in_one_line(in_a_kernel):
    # Issue 47: the answer cell's syntax error left scaled_score undefined, and the check cell
    # showed Python's NameError traceback where the chapter promises a hint.
    def error(cell):
        (out,) = [o for o in cell.outputs if o.output_type == "error"]
        return out

    broken, check, elsewhere, never = (error(c) for c in in_a_kernel.cells[2:6])
    assert broken.ename == "SyntaxError"
    assert check.ename == "NameError" and len(check.traceback) == 1, check.traceback
    assert "Not yet:" in check.traceback[0] and "scaled_score is not defined" in check.traceback[0]
    assert "SyntaxError on line 1" in check.traceback[0], check.traceback[0]
    # a NameError outside a check keeps IPython's traceback
    assert elsewhere.ename == "NameError" and len(elsewhere.traceback) > 1
    # an answer cell never run: the hint says to write and run it
    assert len(never.traceback) == 1 and "attend_one_word is not defined: write it" in never.traceback[0]


# ----------------------------------------------------------------- graded parts and a course's own inputs
VARIANT = 48_2026  # any non-zero number: a course's hidden test draws its inputs from one of its own


def asked(checker, solution, **kwargs) -> list:
    """What ``checker`` gives the answer, call by call, as comparable values (tensors, weights, text)."""
    import torch

    def value(x):
        if isinstance(x, torch.Tensor):
            return ("tensor", tuple(x.shape), tuple(x.detach().flatten().tolist()))
        if isinstance(x, torch.nn.Module):
            return ("module", tuple(value(t) for t in x.state_dict().values()))
        if isinstance(x, (list, tuple)):
            return tuple(value(v) for v in x)
        if isinstance(x, dict):
            return tuple((k, value(v)) for k, v in x.items())
        return "callable" if callable(x) else repr(x)

    calls = []

    def recording(*args, **kw):
        calls.append(value((args, kw)))
        return solution(*args, **kw)

    checker(recording, **kwargs)
    return calls


@pytest.mark.parametrize("name, checker, solution", EVERY_SOLUTION, ids=[s[0] for s in EVERY_SOLUTION])
def test_the_solution_passes_every_declared_part_in_order_with_any_inputs(name, checker, solution, capsys):
    # Each checker declares its graded parts (tx.exercises.parts), and a course's hidden test calls
    # it with a variant of its own; the solution passes every part, in the declared order, either way.
    assert checker.parts, f"{name} declares no graded parts"
    for variant in (0, VARIANT):
        with tx.exercises.counting_parts() as passed:
            checker(solution, variant=variant)
        assert passed == list(checker.parts), (name, variant)
        assert capsys.readouterr().out.startswith("Correct:")


@pytest.mark.parametrize("name, checker, solution", EVERY_SOLUTION, ids=[s[0] for s in EVERY_SOLUTION])
def test_a_checker_that_says_it_draws_its_inputs_asks_other_ones_in_a_variant(name, checker, solution):
    # ``drawn`` is what the course reads to add a hidden test: it must be true exactly when a variant
    # gives the answer inputs that the book's notebook never does.
    same = asked(checker, solution) == asked(checker, solution, variant=VARIANT)
    assert same != checker.drawn, f"{name}: drawn={checker.drawn}, but a variant asks {'the same' if same else 'other'} inputs"
