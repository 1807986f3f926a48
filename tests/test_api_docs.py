"""The API pages' promises that the source itself can keep: every field of a public dataclass
says what it is for, and every module is on one of the two API pages.

The fields are read with ``ast``: Sphinx documents a field by the ``#:`` comment on its line
(or a string right under it), and a field with neither shows on the page as a bare name.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[1]
TX = BOOK / "tx"


def _is_dataclass(node: ast.ClassDef) -> bool:
    def name(d: ast.expr) -> str:
        d = d.func if isinstance(d, ast.Call) else d
        return d.attr if isinstance(d, ast.Attribute) else getattr(d, "id", "")

    return any(name(d) == "dataclass" for d in node.decorator_list)


def undocumented_fields(source: str) -> list[str]:
    """``Class.field`` for each field of a public dataclass with no ``#:`` comment and no docstring."""
    lines = source.splitlines()
    missing = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.ClassDef) and _is_dataclass(node)) or node.name.startswith("_"):
            continue
        for i, statement in enumerate(node.body):
            if not isinstance(statement, ast.AnnAssign) or not isinstance(statement.target, ast.Name):
                continue
            following = node.body[i + 1] if i + 1 < len(node.body) else None
            has_docstring = (isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                             and isinstance(following.value.value, str))
            if "#:" not in lines[statement.lineno - 1] and not has_docstring:
                missing.append(f"{node.name}.{statement.target.id}")
    return missing


def test_the_field_check_sees_a_bare_field():
    source = ("from dataclasses import dataclass\n@dataclass\nclass A:\n"
              "    x: int  #: what x is\n    y: int = 0\n    z: int = 1\n    '''what z is'''\n")
    assert undocumented_fields(source) == ["A.y"]


@pytest.mark.parametrize("path", sorted(TX.rglob("*.py")), ids=lambda p: str(p.relative_to(TX)))
def test_every_dataclass_field_says_what_it_is_for(path):
    missing = undocumented_fields(path.read_text(encoding="utf-8"))
    assert not missing, f"{path.relative_to(BOOK)}: fields with no '#:' comment: {missing}"


def test_every_module_is_on_one_api_page():
    """api.md documents the library, api_internals.md the checkers and the book's tooling: each module once."""
    pages = {name: (BOOK / f"{name}.md").read_text(encoding="utf-8") for name in ("api", "api_internals")}
    found = {name: re.findall(r"^\.\. automodule:: (\S+)", text, re.M) for name, text in pages.items()}
    everywhere = found["api"] + found["api_internals"]
    modules = {".".join(("tx", *p.relative_to(TX).with_suffix("").parts)).removesuffix(".__init__")
               for p in TX.rglob("*.py") if not p.stem.startswith("_") or p.stem == "__init__"}
    modules -= {"tx"}  # the package itself: its one function, tx.device, is documented alone
    leaves = {m for m in modules if not m.endswith("__main__")}
    assert sorted(m for m in leaves if m not in everywhere) == []
    assert len(everywhere) == len(set(everywhere)), "a module is documented twice"
    assert all(m.startswith("tx.exercises") or m in {"tx.progress", "tx.training_record"}
               for m in found["api_internals"]), found["api_internals"]
    # the index at the top of the API page lists its modules, in the page's order
    index = re.search(r"\.\. module-index::\n\n((?:   \S+\n)+)", pages["api"])
    assert index and index.group(1).split() == found["api"]
