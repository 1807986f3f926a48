"""tx's layout: modules import one another in one direction only, and each is short enough to read.

The imports are read from the source with ``ast``, not by importing: every ``import tx.x``,
``from tx.x import y`` and relative ``from .x import y`` / ``from . import x``, at the top of a
module and inside its functions alike (an import moved into a function to dodge a circle is
still a circle), the ``if __name__ == "__main__":`` block too: a module that hands its
``python -m`` over to a command which imports it back is a circle to every reader of the
imports. A runnable package's ``__main__.py`` is its own module, which nothing imports.

Set ``TX_LAYOUT_ROOT`` to another checkout's ``tx`` folder to check that one instead.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

TX = Path(os.environ.get("TX_LAYOUT_ROOT", Path(__file__).resolve().parents[1] / "tx"))
MAX_LINES = 500  # "short enough to read in one sitting" (STYLE.md), with room to spare


def module_name(path: Path) -> str:
    """``tx/exercises/ch01.py`` -> "tx.exercises.ch01"; a package's ``__init__.py`` -> its own name."""
    parts = ("tx", *path.relative_to(TX).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(TX.rglob("*.py"))}


def _known(name: str) -> str | None:
    """The tx module an imported dotted name stands for: itself, or the module that holds it."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports(name: str) -> set[str]:
    """The tx modules that module ``name`` imports, anywhere in its body."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            # from PACKAGE import module names the module; from MODULE import object names MODULE
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        found |= {m for t in targets if t == "tx" or t.startswith("tx.") if (m := _known(t)) and m != name}
    return found


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle ``[a, b, ..., a]`` of the graph, or None (depth-first search, three colours)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_graph_sees_every_kind_of_import():
    """The parser finds relative, absolute and function-level imports (so a pass means something)."""
    assert {"tx.checks", "tx.config", "tx.model"} <= imports("tx.checkpoint")  # from .x import y, at the top
    assert "tx.data" in imports("tx.train")  # from . import x
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_tx_has_no_import_circle():
    graph = {name: imports(name) for name in MODULES}
    cycle = find_cycle(graph)
    assert cycle is None, "import circle in tx: " + " -> ".join(cycle)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_is_short_enough_to_read(name):
    lines = len(MODULES[name].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{MODULES[name]} has {lines} lines, over {MAX_LINES}: split it by what it does"
