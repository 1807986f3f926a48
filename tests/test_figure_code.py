"""The code a chapter shows teaches: drawing and table-building take at most a tenth of it.

A reader should see the lesson's computation, not plotting plumbing (issue 45). So, for
every chapter, this counts the *visible* code lines (non-blank lines of the code cells the
page shows: not tagged ``remove-cell``, ``remove-input``, ``hide-input`` or ``hide-cell``)
and, among them, the *drawing* lines: code that only draws a figure, builds a table or
Markdown/HTML for display, or drives an explorer. The exercises' cells (tagged ``stub``,
``solution`` or ``check``) are left out of both counts: they are the exercise, which
tests/test_notebooks.py checks as such, and the page folds their solutions away.

How a line is classified, so that the count is honest and cannot drop silently:

* a statement that calls a drawing API draws: ``plt.``, ``matplotlib.``, ``tx.viz.`` (but
  ``show_source``, which shows the lesson's own code), ``tx.explorer.``, an Axes or Figure
  method (``.set_title``, ``.imshow``, ``.bar``, ...), ``display``, ``Markdown``, ``HTML``,
  a chapter's own function that draws; a loop or function whose body only draws counts
  with its header;
* a statement whose every result is used only by drawing statements, in any cell of the
  chapter, draws too: the rows of a Markdown table, a figure's labels, an explorer's
  ``draw`` function and its controls. Not a check (``assert``, ``torch.testing``) or a
  statement that runs tx's code (the model, decoding, evaluation): those are the lesson,
  even where only a figure shows their result;
* a cell tagged ``figure`` counts whole as drawing (for what the two rules cannot see).

A shown cell may call drawing APIs on 2 lines at most (a short call to a tx.viz helper)
unless it is tagged ``figure``. A longer drawing belongs in a tested tx.viz helper, or in a
cell folded with ``hide-input`` (behind a 'Show code' toggle on the website, folded in the
learner edition), which leaves both counts.
"""

from __future__ import annotations

import ast

import pytest

from notebook_tools import CHAPTERS, load, source, tags

NOTEBOOKS = sorted(CHAPTERS.glob("*.ipynb"))
MAX_SHARE = 0.10  # of a chapter's visible code lines that may draw or format
MAX_UNTAGGED = 2  # lines calling drawing APIs a cell may hold without the 'figure' tag
HIDDEN = {"remove-cell", "remove-input", "hide-input", "hide-cell"}
EXERCISE = {"stub", "solution", "check"}

# what draws, called as itself or as NAME.attribute (and the names a chapter imports from them)
DRAW_APIS = {"plt", "matplotlib", "tx.viz", "tx.explorer", "IPython.display",
             "display", "Markdown", "HTML", "Latex", "SVG", "Image"}
NOT_DRAWING = {"tx.viz.show_source", "show_source"}  # shows tx's own code: the lesson itself
DRAW_METHODS = {
    "imshow", "matshow", "pcolormesh", "plot", "bar", "barh", "bar_label", "scatter", "hist",
    "fill_between", "axhline", "axvline", "hlines", "vlines", "annotate", "text", "legend",
    "colorbar", "suptitle", "subplots", "subplot_mosaic", "add_subplot", "add_patch",
    "tick_params", "invert_xaxis", "invert_yaxis", "twinx", "twiny", "set_title",
    "set_xlabel", "set_ylabel", "set_xlim", "set_ylim", "set_xticks", "set_yticks",
    "set_xticklabels", "set_yticklabels", "set_xscale", "set_yscale", "set_aspect",
    "set_clim", "set_color", "set_visible", "savefig", "margins", "grid", "axis", "loglog",
    "semilogx", "semilogy", "stairs", "errorbar", "fill", "contour", "contourf", "stem",
    "boxplot", "violinplot", "pie", "arrow", "table", "add_artist", "subfigures", "set",
    "set_major_locator", "set_major_formatter",
}
GROW = {"append", "extend", "insert", "update", "add", "setdefault", "sort"}  # change a name in place


def _dotted(node: ast.AST) -> str:
    """``a.b.c`` for a chain of names and attributes (``?`` for any other head)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return _dotted(node.func) + "()"
    if isinstance(node, ast.Subscript):
        return _dotted(node.value) + "[]"
    return "?"


def _is_drawing_call(node: ast.AST, apis: set[str] = DRAW_APIS) -> bool:
    """Whether ``node`` calls one of ``apis`` (DRAW_APIS, what a chapter imports from them
    and its own functions that draw), or a method of an Axes, Figure or artist."""
    if not isinstance(node, ast.Call):
        return False
    name = _dotted(node.func)
    if name in NOT_DRAWING:
        return False
    parts = name.split(".")
    if any(".".join(parts[:n]) in apis for n in range(1, len(parts) + 1)):
        return True
    # a method of an Axes, Figure or artist: ax.set_title(...), grid[0].bar(...)
    return (isinstance(node.func, ast.Attribute) and node.func.attr in DRAW_METHODS
            and not name.startswith(("torch.", "tx.", "np.", "math.", "textwrap.")))


def _calls_drawing(node: ast.AST, apis: set[str] = DRAW_APIS) -> bool:
    return any(_is_drawing_call(n, apis) for n in ast.walk(node))


def _imported_apis(stmt: ast.stmt) -> set[str]:
    """The names an import binds to a drawing API: ``plt``, ``FancyBboxPatch``, ``attention_grid``."""
    if isinstance(stmt, ast.ImportFrom) and stmt.module:
        if any(stmt.module == a or stmt.module.startswith(a + ".") for a in DRAW_APIS):
            return {a.asname or a.name for a in stmt.names}
        return {a.asname or a.name for a in stmt.names if f"{stmt.module}.{a.name}" in DRAW_APIS}
    if isinstance(stmt, ast.Import):
        return {a.asname for a in stmt.names if a.asname and a.name.split(".")[0] == "matplotlib"}
    return set()


def _blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement blocks inside a compound statement (none for a simple one)."""
    blocks = [getattr(stmt, f, None) for f in ("body", "orelse", "finalbody")]
    blocks += [h.body for h in getattr(stmt, "handlers", [])]
    return [b for b in blocks if isinstance(b, list) and b]


def _neutral(stmt: ast.stmt) -> bool:
    """A docstring, ``pass`` or ``return name``: part of whatever its block does."""
    return (isinstance(stmt, ast.Pass)
            or isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            or isinstance(stmt, ast.Return) and isinstance(stmt.value, (type(None), ast.Name)))


def _span(stmt: ast.stmt) -> set[int]:
    first = min([d.lineno for d in getattr(stmt, "decorator_list", [])] + [stmt.lineno])
    return set(range(first, stmt.end_lineno + 1))


def _drawing_lines(stmts: list[ast.stmt], apis: set[str] = DRAW_APIS) -> tuple[set[int], bool]:
    """(lines of the statements that call a drawing API, whether all of them do)."""
    lines, every = set(), True
    for stmt in stmts:
        if not _blocks(stmt):
            if _calls_drawing(stmt, apis):
                lines |= _span(stmt)
            elif not _neutral(stmt):
                every = False
            continue
        inner, all_draw = set(), True
        for block in _blocks(stmt):
            block_lines, block_all = _drawing_lines(block, apis)
            inner |= block_lines
            all_draw &= block_all
        if all_draw and inner:  # a loop or function that only draws: its header too
            lines |= _span(stmt)
        else:
            lines |= inner
            every = False
    return lines, every


SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
          ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _binds(stmt: ast.AST) -> tuple[set[str], set[str]]:
    """(names a statement binds anew, names it fills in place: ``rows.append(...)``,
    ``x[i] = ...``, ``x += ...``); the locals of a function or comprehension are its own."""
    new, grown, todo = set(), set(), [stmt]
    while todo:
        node = todo.pop()
        if isinstance(node, SCOPES):
            if hasattr(node, "name"):
                new.add(node.name)
            if node is not stmt:
                continue
            todo += node.decorator_list
            continue
        if isinstance(node, ast.AugAssign):
            grown.add(_dotted(node.target).split(".")[0].split("[")[0])
            todo.append(node.value)
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            new.add(node.id)
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store):
            grown.add(_dotted(node).split(".")[0].split("[")[0])
        elif isinstance(node, ast.alias):
            new.add((node.asname or node.name).split(".")[0])
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in GROW and isinstance(node.func.value, ast.Name)):
            grown.add(node.func.value.id)
        todo += ast.iter_child_nodes(node)
    return new, grown


def _reads(node: ast.AST) -> set[str]:
    """Names a statement reads from outside it: a function's parameters and locals, and a
    comprehension's loop variables, are their own."""
    if isinstance(node, ast.Name):
        return {node.id} if isinstance(node.ctx, ast.Load) else set()
    children = list(ast.iter_child_nodes(node))
    reads = set().union(*(_reads(c) for c in children))
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = node.args
        own = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x}
        for stmt in node.body if isinstance(node.body, list) else []:
            own |= _binds(stmt)[0]
        reads -= own
    elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        reads -= {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
    return reads


def _bound_first(stmt: ast.stmt) -> set[str]:
    """Names a statement binds before it reads them (in the order Python runs it), so that
    its reads are of its own values: a loop's variable, ``x = ...`` then ``f(x)``."""
    first: dict[str, bool] = {}  # name -> whether its first use binds it

    def walk(node: ast.AST) -> None:
        if isinstance(node, SCOPES) and node is not stmt:
            if hasattr(node, "name"):
                first.setdefault(node.name, True)
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for name in _reads(node):
                    first.setdefault(name, False)
            return
        if isinstance(node, ast.Name):
            first.setdefault(node.id, isinstance(node.ctx, ast.Store))
            return
        if isinstance(node, ast.alias):
            first.setdefault((node.asname or node.name).split(".")[0], True)
            return
        if isinstance(node, ast.AugAssign):
            first.setdefault(_dotted(node.target).split(".")[0].split("[")[0], False)
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            children = [node.value, *(node.targets if isinstance(node, ast.Assign) else [node.target])]
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            children = [node.iter, node.target, *node.body, *node.orelse]
        else:
            children = list(ast.iter_child_nodes(node))
        for child in children:
            if child is not None:
                walk(child)

    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    walk(stmt)
    return {name for name, bound in first.items() if bound}


def _lesson(stmt: ast.stmt) -> bool:
    """Whether a statement checks something or runs tx's own code (not its figures)."""
    for node in ast.walk(stmt):
        if isinstance(node, ast.Assert):
            return True
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name.startswith("torch.testing.") or (
                    name.startswith("tx.") and not name.startswith(("tx.viz.", "tx.explorer."))):
                return True
    return False


def drawing(cells: list[dict]) -> dict[int, tuple[set[int], set[int], set[int]]]:
    """{cell index: (its non-blank line numbers, those that draw, those that call a drawing
    API)} for a chapter's code cells."""
    # (cell index, statement, names bound, filled, read, bound first) in the chapter's order
    units = []
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "code":
            try:
                body = ast.parse(source(cell)).body
            except SyntaxError:  # IPython syntax (%timeit): no statement of it is read
                body = []
            units += [(i, s, *_binds(s), _reads(s), _bound_first(s)) for s in body]
    apis = DRAW_APIS.union(*(_imported_apis(s) for _, s, *_ in units))
    apis |= {s.name for _, s, *_ in units if isinstance(s, ast.FunctionDef) and _calls_drawing(s, apis)}
    # a cell that writes a sentence of the prose (remove-input) or checks it (remove-cell)
    # is the lesson's: what it reads is not drawing
    prose = {i for i, cell in enumerate(cells) if {"remove-input", "remove-cell"} & set(tags(cell))}
    draws = [u[0] not in prose and _calls_drawing(u[1], apis) for u in units]
    by_use = [False] * len(units)
    changed = True
    while changed:  # a result used only by drawing statements is drawing too
        changed = False
        for u, (_, stmt, new, grown, _, _) in enumerate(units):
            if by_use[u] or not new | grown:
                continue
            users = []
            for name in new | grown:
                for v in range(u + 1, len(units)):
                    _, _, v_new, _, v_reads, v_first = units[v]
                    if name in v_first:
                        break  # bound anew before it is read: later reads are of that
                    if name in v_reads:
                        users.append(v)
                    if name in v_new:
                        break
            if all(draws[v] for v in users) and (users or draws[u]) and (draws[u] or not _lesson(stmt)):
                draws[u] = by_use[u] = changed = True
    found = {}
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "code":
            code = {n for n, line in enumerate(source(cell).splitlines(), 1) if line.strip()}
            found[i] = (code, set(code) if "figure" in tags(cell) else set(), set())
    for u, (i, stmt, *_) in enumerate(units):
        if draws[u]:
            calls = _drawing_lines([stmt], apis)[0] & found[i][0]
            found[i][1].update((_span(stmt) & found[i][0]) if by_use[u] else calls)
            found[i][2].update(calls)
    return found


def classify(cells: list[dict]) -> dict[int, tuple[int, int]]:
    """{cell index: (non-blank lines, drawing lines among them)} for a chapter's code cells."""
    return {i: (len(code), len(lines)) for i, (code, lines, _) in drawing(cells).items()}


def shown(cell: dict) -> bool:
    """Whether the page shows the cell's code, outside the exercises."""
    return cell["cell_type"] == "code" and not (HIDDEN | EXERCISE) & set(tags(cell))


def measure(path) -> tuple[int, int, dict[int, tuple[int, int]]]:
    """(visible code lines, drawing lines among them, {shown cell: (lines, drawing)})."""
    cells = load(path)["cells"]
    counts = {i: c for i, c in classify(cells).items() if shown(cells[i])}
    return sum(n for n, _ in counts.values()), sum(d for _, d in counts.values()), counts


def table() -> str:
    rows = [f"{'chapter':<32}{'visible':>8}{'drawing':>8}{'share':>7}"]
    for path in NOTEBOOKS:
        visible, drawing, _ = measure(path)
        rows.append(f"{path.stem:<32}{visible:>8}{drawing:>8}{drawing / max(visible, 1):>7.0%}")
    return "\n".join(rows)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_drawing_code_is_a_tenth_of_what_the_page_shows(path):
    visible, drawing, counts = measure(path)
    cells = load(path)["cells"]
    worst = sorted(((d, i) for i, (_, d) in counts.items() if d), reverse=True)[:5]
    assert drawing <= MAX_SHARE * visible, (
        f"{path.name}: {drawing} of {visible} visible code lines draw or format "
        f"({drawing / visible:.0%}; at most {MAX_SHARE:.0%}). Move the drawing into a tested "
        f"tx.viz helper, or fold the cell (hide-input). Most drawing: "
        + ", ".join(f"cell {i} ({cells[i].get('id')}) {d}" for d, i in worst) + f"\n{table()}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_a_cell_that_draws_more_than_a_short_call_is_tagged_figure(path):
    cells = load(path)["cells"]
    untagged = [f"cell {i} ({cells[i].get('id')}): {len(calls)} lines call drawing APIs"
                for i, (_, _, calls) in drawing(cells).items()
                if shown(cells[i]) and len(calls) > MAX_UNTAGGED and "figure" not in tags(cells[i])]
    assert not untagged, (
        f"{path.name}: cells that draw on more than {MAX_UNTAGGED} lines without the 'figure' tag "
        "(move the drawing into a tx.viz helper, fold the cell with hide-input, or tag it 'figure' "
        "to count it whole):\n" + "\n".join(untagged))


def _cells(*texts: str, tag: str | None = None) -> list[dict]:
    return [{"cell_type": "code", "source": t, "metadata": {"tags": [tag] if tag else []}} for t in texts]


def test_the_classifier_counts_a_figure_s_plumbing_and_not_the_lesson():
    lesson = "w = q @ k.T\nprint(w.sum())\ntx.viz.show_source(tx.attention)\n"
    assert classify(_cells(lesson)) == {0: (3, 0)}
    plot = "fig, ax = plt.subplots()\nax.bar(words, w)\n\nax.set_title('w')\n"
    assert classify(_cells(plot)) == {0: (3, 3)}
    loop = "for ax, w in zip(axes, ws):\n    ax.bar(words, w)\n    ax.set_ylim(0, 1)\n"
    assert classify(_cells(loop)) == {0: (3, 3)}
    # a computation beside a drawing is lesson code where the lesson uses its result ...
    mixed = "for w in ws:\n    z = w @ v\n    ax.bar(words, z)\n"
    assert classify(_cells(mixed, "print(z)")) == {0: (3, 1), 1: (1, 0)}
    # ... and plumbing where only a figure or an explorer does
    draw = "def draw(word):\n    i = words.index(word)\n    return tx.viz.heatmap(w[i])\n"
    assert classify(_cells(draw, "tx.explorer.explore(draw, word=tx.explorer.Choice(words))")) == {
        0: (3, 3), 1: (1, 1)}
    boxes = "from matplotlib.patches import Rectangle\nbox = Rectangle((0, 0), 1, 1)\n"
    assert classify(_cells(boxes, "def outline(ax):\n    ax.add_patch(box)\n", "outline(axes[0])")) == {
        0: (2, 2), 1: (2, 2), 2: (1, 1)}
    assert classify(_cells("rows = [1, 2]\n", tag="figure")) == {0: (1, 1)}
    assert classify(_cells("optimizer.step()\ntorch.set_printoptions(precision=2)\n")) == {0: (2, 0)}
    assert classify(_cells("print(textwrap.fill(text, 79))\n")) == {0: (1, 0)}
    assert classify(_cells("%timeit f()\n")) == {0: (1, 0)}


def test_the_classifier_follows_a_table_s_rows_to_where_they_are_shown():
    build = "rows = ['| a | b |']\nfor x in xs:\n    rows.append(f'| {x} | {x * x} |')\n"
    assert classify(_cells(build, "display(Markdown('\\n'.join(rows)))")) == {0: (3, 3), 1: (1, 1)}
    # ... but rows a check also reads are the lesson's
    assert classify(_cells(build, "display(Markdown('\\n'.join(rows)))", "assert len(rows) == 3")) == {
        0: (3, 0), 1: (1, 1), 2: (1, 0)}
    # what tx computes, or a check reads, is the lesson even where only a table shows it
    run = "hyps = tx.evaluate.translate(model, src)\nrows = [(h, len(h)) for h in hyps]\n"
    assert classify(_cells(run, "display(tx.viz.markdown_table(['h', 'n'], rows))")) == {
        0: (2, 1), 1: (1, 1)}
    # the 'figure' tag is asked of a cell by its calls to drawing APIs, not by its rows
    table = "rows = [(h, len(h)) for h in hyps]\nrows.sort()\ndisplay(Markdown(table_of(rows)))\n"
    _, lines, calls = drawing(_cells(table))[0]
    assert (len(lines), len(calls)) == (3, 1)
    # a name bound anew starts over: the first w is the lesson's, the second the figure's
    cells = _cells("w = q @ k.T\nprint(w)\n", "w = w.T\nax.imshow(w)\n")
    assert classify(cells) == {0: (2, 0), 1: (2, 2)}
