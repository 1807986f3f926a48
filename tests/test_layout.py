"""tx's layout: modules import one another in one direction only, and each is short enough to read.

The direction is the one tx/README.md states in its table "Layers, bottom to top": every
module of tx sits in exactly one of its rows (``viz/`` stands for every module of the package
``tx.viz``), and a module imports only modules of its own row or the rows below. The table is
read from tx/README.md itself, so the page a reader reads and the rule the tests hold are one.
The package ``tx`` itself (``__init__.py``, placed by the note under the table) is in no row:
it imports the model's parts eagerly, so a module that imports it counts as importing the
highest row of those. A runnable package's ``__main__.py`` (``train/__main__.py``), the ``python
-m`` entry that hands over to its command in ``cli/``, may import upward: nothing imports it.

The imports are read from the source with ``ast``, not by importing: every ``import tx.x``,
``from tx.x import y`` and relative ``from .x import y`` / ``from . import x``, at the top of a
module and inside its functions alike (an import moved into a function to dodge a circle is
still a circle), the ``if __name__ == "__main__":`` block too: a module that hands its
``python -m`` over to a command which imports it back is a circle to every reader of the
imports. A runnable package's ``__main__.py`` is its own module, which nothing imports.

The repository's own layout is held to its map the same way: the table "The repository" at the
top of README.md names every top-level file and folder git tracks, and nothing else.

Set ``TX_LAYOUT_ROOT`` to another checkout's ``tx`` folder to check that one (and its README.md) instead.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
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


LAYERS_HEADING = "## Layers, bottom to top"


def layer_table(readme: str) -> list[tuple[str, list[str]]]:
    """tx/README.md's layer table, bottom row first: ``[(layer, ["checks.py", "viz/", ...]), ...]``."""
    lines = readme.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == LAYERS_HEADING), None)
    assert start is not None, f"tx/README.md has no {LAYERS_HEADING!r} section"
    rows = []
    for line in lines[start + 1:]:
        if not line.strip() and not rows:
            continue  # the blank line under the heading
        if not line.startswith("|"):
            break  # the table ends at its first line that is not a row
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[0] in ("layer", "") or set(cells[0]) <= set("-: "):
            continue  # the header and its rule
        rows.append((cells[0], re.findall(r"`([^`]+)`", cells[1])))
    return rows


def claimed(entry: str) -> set[str]:
    """The modules one entry of the table stands for: ``"viz/"`` -> tx.viz and every module under it."""
    if entry.endswith("/"):
        package = "tx." + entry.rstrip("/").replace("/", ".")
        return {name for name in MODULES if name == package or name.startswith(package + ".")}
    name = "tx." + entry.removesuffix(".py").replace("/", ".")
    return {name} if name in MODULES else set()


README = TX / "README.md"
LAYER_ROWS = layer_table(README.read_text(encoding="utf-8"))


def is_main(name: str) -> bool:
    """A runnable package's ``__main__`` (``tx.train.__main__``): the command entry nothing imports."""
    return name.rpartition(".")[2] == "__main__"


def layer_of() -> dict[str, int]:
    """Each module's row in the table, 0 the bottom; ``tx`` itself counts as the highest row it imports."""
    layers = {name: i for i, (_, entries) in enumerate(LAYER_ROWS) for entry in entries for name in claimed(entry)}
    layers["tx"] = max(layers[name] for name in imports("tx"))
    return layers


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


def test_the_layer_table_is_read_from_tx_readme():
    """The parser finds the table's rows in order, with their modules (so a pass means something)."""
    names = [layer for layer, _ in LAYER_ROWS]
    assert len(names) >= 5 and len(set(names)) == len(names), names
    assert "checks.py" in LAYER_ROWS[0][1] and "viz/" in LAYER_ROWS[-1][1]
    assert claimed("viz/") >= {"tx.viz", "tx.viz.style"} and claimed("checks.py") == {"tx.checks"}
    assert claimed("no_such_module.py") == set()
    sample = "intro\n\n## Layers, bottom to top\n\n| layer | modules | what |\n| --- | --- | --- |\n" \
             "| low | `a.py`, `b/` | x `c.py` |\n| high | `d.py` | y |\n\nAfter: `e.py`\n"
    assert layer_table(sample) == [("low", ["a.py", "b/"]), ("high", ["d.py"])]


def test_every_module_is_in_exactly_one_row_of_the_layer_table():
    rows: dict[str, list[str]] = {}
    for layer, entries in LAYER_ROWS:
        for entry in entries:
            assert claimed(entry), f"tx/README.md's layer table names `{entry}` (row {layer!r}), which tx lacks"
            for name in claimed(entry):
                rows.setdefault(name, []).append(layer)
    missing = sorted(name for name in MODULES if name != "tx" and name not in rows)
    assert not missing, f"add these to a row of tx/README.md's {LAYERS_HEADING!r} table: {missing}"
    twice = {name: layers for name, layers in rows.items() if len(layers) > 1}
    assert not twice, f"in more than one row of tx/README.md's layer table: {twice}"


def test_imports_go_down_the_layer_table():
    """A module imports only modules of its own row of tx/README.md's table or of the rows below it."""
    layers, names = layer_of(), [layer for layer, _ in LAYER_ROWS]
    upward = [f"{name} ({names[layers[name]]}) imports {dep} ({names[layers[dep]]})"
              for name in sorted(MODULES) if name in layers and not is_main(name)
              for dep in sorted(imports(name)) if layers.get(dep, -1) > layers[name]]
    assert not upward, "imports up tx/README.md's layer table:\n" + "\n".join(upward)
    # The command entries sit above every row: nothing imports them.
    assert not [name for name in MODULES if any(is_main(dep) for dep in imports(name))]


def test_readme_maps_every_top_level_file_and_folder():
    root = TX.parent
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=root, capture_output=True, text=True)
    if top.returncode != 0 or Path(top.stdout.strip()).resolve() != root.resolve():
        pytest.skip(f"{root} is not the top of a git checkout (book-source.zip holds no .git): "
                    "nothing says what is tracked")
    listed = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True)
    tracked = {path.split("/")[0] for path in listed.stdout.splitlines()}
    text = (root / "README.md").read_text(encoding="utf-8")
    section = text.split("## The repository\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    mapped = {name.rstrip("/") for row in rows for name in re.findall(r"`([^`]+)`", row)}
    assert tracked - mapped == set(), "add these to README.md's map, \"The repository\""
    assert mapped - tracked == set(), "README.md's map names what git does not track"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_is_short_enough_to_read(name):
    lines = len(MODULES[name].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{MODULES[name]} has {lines} lines, over {MAX_LINES}: split it by what it does"
