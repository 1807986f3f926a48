"""The cells of a course's assignment (:mod:`tx.exercises.course`): which of a chapter's cells it keeps,
what a read-only cell may not bind, and the cells it adds for an answer in words."""

from __future__ import annotations

import ast
import builtins
import importlib
import re
from typing import Any

from .learner_notebook import _source
from .sandbox import python_code

__all__ = ["asks_in_words", "written_answer", "with_hidden_test", "solution_text", "WRITTEN_PROMPT",
           "WRITTEN_SOLUTION"]


class _Names(ast.NodeVisitor):
    """The names a cell defines, and those it uses that it does not define itself."""

    def __init__(self, code: str) -> None:
        self.defined: set[str] = set()
        self.used: set[str] = set()
        code = python_code(code)
        self.visit(ast.parse(code))
        self.free = self.used - self.defined - set(dir(builtins))

    def visit_Name(self, node: ast.Name) -> None:
        (self.defined if isinstance(node.ctx, (ast.Store, ast.Del)) else self.used).add(node.id)

    def _define(self, node: Any) -> None:
        self.defined.add(node.name)
        self.generic_visit(node)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _define

    def visit_arg(self, node: ast.arg) -> None:
        self.defined.add(node.arg)

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            self.defined.add((alias.asname or alias.name).split(".")[0])

    visit_ImportFrom = visit_Import


def _needed_cells(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[int]:
    """Indices of the code cells of ``before`` that the code cells of ``after`` need, with the first.

    The first code cell is the chapter's set-up (imports, seed, figure style); any other is
    needed when it defines a name that a cell of ``after``, or a needed cell, uses and does
    not define itself.
    """
    code = [(i, _Names(_source(c))) for i, c in enumerate(before) if c["cell_type"] == "code"]
    if not code:
        return []
    chosen = {code[0][0]}
    wanted: set[str] = set(code[0][1].free)
    defined_after: set[str] = set()
    for cell in after:
        if cell["cell_type"] == "code":
            names = _Names(_source(cell))
            wanted |= names.free - defined_after
            defined_after |= names.defined
    seen: set[str] = set()
    while wanted - seen:
        name = (wanted - seen).pop()
        seen.add(name)
        for i, names in code:
            if name in names.defined and i not in chosen:
                chosen.add(i)
                wanted |= names.free
    return sorted(chosen)


def _top_level_names(code: str) -> set[str]:
    """The names a cell binds at its top level: its functions, classes, assignments and imports."""
    tree = ast.parse(python_code(code))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        else:
            names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return names


def _without_given_code(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The exercises' cells less any code cell that is neither a stub, a check nor a solution, and the
    markdown cell that introduces it: in the book they show tx's own answer ("tx's own merge_pair is
    folded below"), which an assignment must not."""
    kept: list[dict[str, Any]] = []
    for cell in cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if cell["cell_type"] == "code" and not {"stub", "check", "solution"} & set(tags):
            if kept and kept[-1]["cell_type"] == "markdown" and not re.search(
                    r"^[`:]{3,}\{exercise\}|^#", _source(kept[-1]), re.M):
                kept.pop()
            continue
        kept.append(cell)
    return kept


def _unbinding(code: str, answers: set[str]) -> str:
    """``code`` (a read-only cell) less its imports of the names the answers define.

    A read-only cell that binds an answer's name (``from tx.subwords import merge_pair``) would
    give an answer that does not run (``def broken(:``) tx's own function to be checked; the
    import of that name is dropped. A name bound any other way is an error: the chapter must
    change.
    """
    lines = code.split("\n")
    tree = ast.parse(python_code(code))
    for node in reversed(tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            keep = [a for a in node.names if (a.asname or a.name).split(".")[0] not in answers]
            if len(keep) == len(node.names):
                continue
            node.names = keep
            lines[node.lineno - 1: node.end_lineno] = ast.unparse(node).split("\n") if keep else []
        else:
            bound = _top_level_names(ast.unparse(node)) & answers
            if bound:
                raise ValueError(f"a read-only cell binds {', '.join(sorted(bound))}, which an exercise's "
                                 "answer defines: the course would grade the cell's instead of the student's.")
    return "\n".join(lines)


def _nbgrader(grade_id: str, *, solution: bool = False, grade: bool = False, points: int = 0) -> dict[str, Any]:
    meta: dict[str, Any] = {"grade": grade, "grade_id": grade_id, "locked": not solution, "schema_version": 3,
                            "solution": solution, "task": False}
    if grade:
        meta["points"] = points
    return meta


def asks_in_words(exercise: str) -> bool:
    """Whether an exercise's text (its directive cell) asks a question, outside its code: a "?"."""
    body = "\n".join(exercise.split("\n")[1:-1])
    return "?" in re.sub(r"`[^`\n]*`", "", body)


WRITTEN_PROMPT = """\
**In words.** The exercise above also asks a question in words. Answer it in the cell below,
in a few sentences (equations in LaTeX between dollar signs are welcome): it is graded by
hand, worth {points} point{s}."""

WRITTEN_SOLUTION = """\
**The book's solution, to grade by** (nbgrader shows students `YOUR ANSWER HERE` in this cell):

{key}"""

_SOLUTION_TEXT = re.compile(r"^[`:]{3,}\{solution-start\}[^\n]*\n(?:[ \t]*:[^\n]*\n)*[`:]{3,}[ \t]*\n?(.*)\Z", re.S)


def solution_text(cell: dict[str, Any]) -> str | None:
    """The text of a solution-start cell (what the book's solution says in words), else None."""
    found = _SOLUTION_TEXT.match(_source(cell).lstrip()) if cell["cell_type"] == "markdown" else None
    return found.group(1).strip() if found else None


def written_answer(exercise: str, points: int, key: str) -> list[dict[str, Any]]:
    """The two cells of an exercise's answer in words: the prompt (read-only) and a manually graded
    answer, which in the teacher's copy holds ``key``, the book's solution in words."""
    prompt = {"cell_type": "markdown", "id": f"{exercise}-words-prompt"[:64],
              "metadata": {"nbgrader": _nbgrader(f"{exercise}-words-prompt")},
              "source": WRITTEN_PROMPT.format(points=points, s="" if points == 1 else "s")}
    answer = {"cell_type": "markdown", "id": f"{exercise}-words"[:64],
              "metadata": {"nbgrader": _nbgrader(f"{exercise}-words", solution=True, grade=True, points=points)},
              "source": WRITTEN_SOLUTION.format(key=key or "(The book's solution is code only: see the answer cell.)")}
    return [prompt, answer]


HIDDEN = """\
### BEGIN HIDDEN TESTS
# The same check on the course's own inputs, drawn from a number only the grader holds.
{calls}
### END HIDDEN TESTS"""


def with_hidden_test(check: str) -> str:
    """A check cell with nbgrader's hidden tests: every call of a checker of tx's that draws its inputs
    at random, again, on the course's own inputs (``variant="course"``), which no release shows."""
    calls = []
    for line in check.strip().split("\n"):
        found = re.fullmatch(r"(tx\.exercises\.(\w+)\.(check_\w+))\((.*)\)", line.strip())
        if found is None:
            continue
        call, module, name, args = found.groups()
        if getattr(getattr(importlib.import_module(f"tx.exercises.{module}"), name), "drawn", False):
            calls.append(f'{call}({args.rstrip(", ")}, variant="course")')
    return check.rstrip() + "\n" + HIDDEN.format(calls="\n".join(calls)) if calls else check
