"""The learner edition: no solutions, plain Markdown, a learner's work kept.

Run All in real JupyterLab is tests/lab/test_jupyterlab.py (every chapter with `make lab-test`,
three with `make test`); what a chapter's Run All needs of its exercises is checked here for
every chapter, from the code (test_run_all_needs_no_answer)."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import zipfile

import nbformat
import pytest

from notebook_tools import CHAPTERS, ROOT, load, role, source, tags
from tx.exercises.learner import (
    MANIFEST, SETUP_CELL, citations, equation_numbers, learner_files, learner_notebook, main,
    number_equation_labels, strip_solutions, to_markdown, write_learner_edition,
)

NOTEBOOKS = sorted(CHAPTERS.glob("*.ipynb"))
# What only Jupyter Book understands: a directive fence, a role, a target label, an equation label.
RAW_MYST = {
    "directive": re.compile(r"^\s*(`{3,}|:{3,})\{[\w:-]+\}", re.M),
    "role": re.compile(r"\{[\w:-]+\}`"),
    "target": re.compile(r"^\([\w:.-]+\)=", re.M),
    "equation label": re.compile(r"\$\$\s*\([\w:.-]+\)"),
    "directive option": re.compile(r"^:(label|class|name|tags):", re.M),
}
# How code names an equation: a chapter's (eq-ch10-cross-entropy) or an appendix's (eq-a1-global-mean).
EQUATION_IN_CODE = re.compile(r"\beq-(?:ch\d\d|a\d+)-[\w-]*\w")


@pytest.fixture(scope="module")
def edition() -> dict[str, bytes]:
    return learner_files(CHAPTERS)


def notebook(edition: dict[str, bytes], name: str) -> dict:
    return json.loads(edition[name])


# ----------------------------------------------------------------- solutions


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
def test_no_solution_and_every_check_may_fail(edition, path):
    cells = notebook(edition, path.name)["cells"]
    assert not [c for c in cells if "solution" in c["metadata"].get("tags", [])]
    checks = [c for c in cells if "check" in c["metadata"].get("tags", [])]
    assert checks and all("raises-exception" in c["metadata"]["tags"] for c in checks)
    stubs = [c for c in cells if "stub" in c["metadata"].get("tags", [])]
    assert len(stubs) == len(checks) and all("raises-exception" in c["metadata"]["tags"] for c in stubs)
    assert not [c for c in cells if "remove-output" in c["metadata"].get("tags", []) and "check" in c["metadata"]["tags"]]
    exercises = [c for c in cells if c["cell_type"] == "markdown" and re.search(r"^## Exercises", c["source"], re.M)]
    assert len(exercises) == 1
    note = exercises[0]["source"].split("## Exercises", 1)[1]
    assert "expected" in note and "Run All" in note and "your answer's own cell" in note


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_a_check_whose_answer_does_not_parse_says_so_in_one_line(edition, path):
    # Issue 47: an answer cell with a syntax error defines nothing, and its check cell stopped on
    # Python's NameError. For every exercise: the stub, broken on its first line, then its check
    # (tx.exercises.missing.hint, what the check cell shows in Jupyter; the kernel's own wiring
    # is tests/test_exercises.py's, test_in_a_kernel_a_check_whose_answer_failed_says_why_in_one_line).
    from tx.exercises.missing import hint

    cells = notebook(edition, path.name)["cells"]
    given = [c["source"] for c in cells if c["cell_type"] == "code" and not {"stub", "check"} & set(_tags(c))]
    stubs = [c for c in cells if "stub" in _tags(c)]
    checks = [c for c in cells if "check" in _tags(c)]
    for stub, check in zip(stubs, checks):
        tree = ast.parse(stub["source"])
        name = next(n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)))
        broken = stub["source"].replace(f"{name}(", f"{name}(:", 1)
        said = hint(name, check["source"], [*given, broken])
        assert said is not None and "\n" not in said, (path.name, name, check["source"])
        assert said.startswith(f"{name} is not defined: the cell that defines it has a SyntaxError on line "), said


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_run_all_shows_no_answer_of_tx_s(edition, path):
    # Issue 47: the listings of tx's own answers, folded on the website ("open it once you have
    # written yours"), opened in JupyterLab as soon as Run All ran them, under the exercises
    # they answer. In the learner edition such a listing is a comment until the learner runs it.
    book = load(path)["cells"]
    learner = notebook(edition, path.name)["cells"]
    answers = [c for c, before in zip(book[1:], book) if c["cell_type"] == "code" and "show_source" in source(c)
               and re.search(r"open\s+it\s+once\s+you\s+have\s+written\s+yours", source(before))]
    listed = [c for c in learner if c["cell_type"] == "code" and "show_source(" in c["source"]]
    for cell in answers:
        call = source(cell).strip()
        (mine,) = [c for c in listed if call in c["source"]]
        assert all(line.startswith("#") for line in mine["source"].splitlines()), mine["source"]
        assert f"# {call}" in mine["source"]
    said = " ".join(c["source"] for c in learner if c["cell_type"] == "markdown")
    assert not re.search(r"folded\s+below[;:]\s+open\s+it\s+once", said)


# ----------------------------------------------------------------- plain Markdown


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_no_raw_myst_markup_in_the_markdown(edition, path):
    for cell in notebook(edition, path.name)["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        for what, pattern in RAW_MYST.items():
            found = pattern.search(cell["source"])
            assert not found, f"raw MyST {what} in {path.name}: {cell['source'][max(0, found.start() - 80):found.end() + 80]!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_no_citation_in_brackets_within_brackets(edition, path):
    # "(section 3.1 of (Vaswani et al., 2017))" reads badly; so does "(... [VSP+17]) on the website".
    for cell in notebook(edition, path.name)["cells"]:
        if cell["cell_type"] == "markdown":
            nested = re.search(r"\([^()]*\([A-Z][^()]*\b\d{4}\)", cell["source"])
            assert not nested, f"{path.name}: {nested.group(0)!r}"
    for cell in load(path)["cells"]:
        if cell["cell_type"] == "markdown":
            for paragraph in source(cell).split("\n\n"):
                depth = 0
                for piece in re.split(r"(\{cite:p\}`[^`]*`)", re.sub(r"\$[^$]*\$", "", paragraph)):
                    assert not (piece.startswith("{cite:p}") and depth), f"{path.name}: {paragraph!r}"
                    depth += piece.count("(") - piece.count(")")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_every_exercise_has_its_title_as_a_heading(edition, path):
    titles = [m.group(1).strip() for c in load(path)["cells"] if c["cell_type"] == "markdown"
              for m in re.finditer(r"^(?:```|:::)\{exercise\}[ \t]*(.+)$", source(c), re.M)]
    text = "\n".join(c["source"] for c in notebook(edition, path.name)["cells"] if c["cell_type"] == "markdown")
    assert titles
    # as the website numbers them: 3.1, 3.2, ... in chapter 3; A1.1, A1.2, ... in the appendix
    chapter = str(int(path.name[:2])) if path.name[:2].isdigit() else path.name.split("_")[0]
    for n, title in enumerate(titles, start=1):
        assert f"### Exercise {chapter}.{n} ({title})" in text


def test_directives_roles_and_labels_become_markdown():
    equations = {"eq-ch03-softmax": "3.4"}
    cites = {"vaswani2017": ("Vaswani et al.", "2017"), "ba2016": ("Ba et al.", "2016")}
    text = to_markdown(
        "```{exercise} Softmax\n:label: ex-ch03-softmax\n\nWrite it with {eq}`eq-ch03-softmax`, "
        "as in {cite:p}`vaswani2017,ba2016`; {cite:t}`vaswani2017` say so.\n```\n\n"
        "(eq-ch03-softmax)=\n$$\nw = e^s\n$$ (eq-ch03-softmax)\n\n"
        ":::{note}\nA note with {math}`x^2` and a {ref}`link <sec-x>`.\n:::\n\n"
        "```{admonition} Why?\n:class: tip\nBecause.\n```",
        equations, cites,
    )
    assert text.startswith("### Exercise: Softmax\n\nWrite it with (3.4), as in (Vaswani et al., 2017; Ba et al., 2016); "
                           "Vaswani et al. (2017) say so.")
    assert "$$\nw = e^s \\tag{3.4}\n$$" in text
    assert to_markdown("as ({eq}`eq-ch03-softmax`) says", equations, cites) == "as (3.4) says"  # not ((3.4))
    # Not "(section 3.1 of (Vaswani et al., 2017))": one pair of brackets.
    assert to_markdown("(section 3.1 of {cite:p}`vaswani2017`; $f(x)$) and {cite:p}`ba2016`", equations, cites) == (
        "(section 3.1 of Vaswani et al., 2017; $f(x)$) and (Ba et al., 2016)")
    # the website's own files are not beside a workbook: their name stays, the link goes
    assert to_markdown('in <a class="book-source" href="../book-source.zip" download>book-source.zip</a>',
                       equations, cites) == "in book-source.zip (on the book's website)"
    glued = to_markdown("It has {glue:text}`n_params:,` weights, see {numref}`Figure %s <fig-ch03-x>`.\n\n"
                        "```{glue:figure} fig_x\n:name: fig-x\nThe caption.\n```", equations, cites)
    assert glued.startswith("It has `n_params` weights, see Figure.")
    assert "computed by a code cell" in glued and not any(p.search(glued) for p in RAW_MYST.values()), glued
    assert "> **Note**\n>\n> A note with $x^2$ and a link." in text
    assert "> **Why?**\n>\n> Because." in text
    assert not any(p.search(text) for p in RAW_MYST.values()), text


def test_equations_are_numbered_by_chapter_in_order():
    numbers = equation_numbers(CHAPTERS)
    for path in NOTEBOOKS:
        # 3.1, 3.2, ... in chapter 3; A1.1, A1.2, ... in the appendix, as the website numbers them
        chapter = str(int(path.name[:2])) if path.name[:2].isdigit() else path.name.split("_")[0]
        labels = re.findall(r"\$\$\s*\((eq-[\w-]+)\)", path.read_text(encoding="utf-8"))
        assert [numbers[label] for label in labels] == [f"{chapter}.{n}" for n in range(1, len(labels) + 1)]


def test_an_appendix_numbers_its_equations_after_its_label(tmp_path):
    def chapter(*labels: str) -> str:
        cells = [{"cell_type": "markdown", "metadata": {}, "source": f"$$\nx\n$$ ({label})\n"} for label in labels]
        return json.dumps({"cells": cells})

    (tmp_path / "03_softmax.ipynb").write_text(chapter("eq-ch03-a", "eq-ch03-b"))
    (tmp_path / "A1_scale.ipynb").write_text(chapter("eq-a1-mean", "eq-a1-sum"))
    (tmp_path / "notes.ipynb").write_text(chapter("eq-notes"))  # neither a chapter nor an appendix
    assert equation_numbers(tmp_path) == {"eq-ch03-a": "3.1", "eq-ch03-b": "3.2", "eq-a1-mean": "A1.1",
                                          "eq-a1-sum": "A1.2"}
    assert number_equation_labels("s / n  # eq-a1-mean, eq-a1-none", equation_numbers(tmp_path)) == (
        "s / n  # equation (A1.1), eq-a1-none")
    assert to_markdown("$$\nx\n$$ (eq-a1-mean)\n\nby ({eq}`eq-a1-mean`)", equation_numbers(tmp_path), {}) == (
        "$$\nx \\tag{A1.1}\n$$\n\nby (A1.1)")
    # and the appendix's own equation, in the edition as on the website
    assert equation_numbers(CHAPTERS)["eq-a1-global-mean"] == "A1.1"


def test_code_names_equations_by_number(edition):
    numbers = equation_numbers(CHAPTERS)
    assert number_equation_labels("x = y  # eq-ch03-softmax, then eq-ch99-none", {"eq-ch03-softmax": "3.4"}) == (
        "x = y  # equation (3.4), then eq-ch99-none")
    labelled = 0
    for path in NOTEBOOKS:
        book = json.loads(path.read_text(encoding="utf-8"))
        labelled += sum(bool(EQUATION_IN_CODE.search(source(c))) for c in book["cells"] if c["cell_type"] == "code")
        learner = notebook(edition, path.name)
        for cell in learner["cells"]:
            if cell["cell_type"] == "code":
                assert not EQUATION_IN_CODE.search(source(cell)), (path.name, source(cell))
    assert labelled > 10  # the chapters' code does name equations, and every label is known
    assert set(EQUATION_IN_CODE.findall("".join(
        source(c) for p in NOTEBOOKS for c in json.loads(p.read_text(encoding="utf-8"))["cells"]
        if c["cell_type"] == "code"))) <= set(numbers)


def test_every_cited_key_has_an_author_and_a_year():
    cites = citations(ROOT / "references.bib")
    assert cites["vaswani2017"] == ("Vaswani et al.", "2017")
    assert cites["alammar2018"] == ("Alammar", "2018")
    for path in NOTEBOOKS:
        for keys in re.findall(r"\{cite:\w+\}`([^`]+)`", path.read_text(encoding="utf-8")):
            for key in keys.split(","):
                assert key.strip() in cites, f"{path.name} cites {key}, which references.bib lacks"


# ----------------------------------------------------------------- set-up


def test_the_edition_comes_with_a_readme_and_a_set_up_cell(edition, tmp_path):
    readme = edition["README.md"].decode()
    assert "python3.11 -m venv .venv" in readme and "install.py" in readme and "jupyter lab" in readme
    for path in NOTEBOOKS:
        cells = notebook(edition, path.name)["cells"]
        first_code = next(c for c in cells if c["cell_type"] == "code")
        assert first_code["source"] == SETUP_CELL
    zip_path = tmp_path / "edition.zip"
    write_learner_edition(tmp_path / "out", CHAPTERS, zip_path)
    with zipfile.ZipFile(zip_path) as archive:
        names = {n.rsplit("/", 1)[-1] for n in archive.namelist()}
        modes = {oct(info.external_attr >> 16 & 0o777) for info in archive.infolist()}
    assert names == {"README.md", "install.py", "requirements-learner.lock", "requirements-learner.txt",
                     "jupyterlab-settings.json"} | {
        p.name for p in NOTEBOOKS}
    assert modes == {"0o644"}, modes  # issue 47: 0600 left a copy unpacked for a class its owner's alone


def test_the_set_up_cell_says_what_to_install_when_tx_is_missing():
    saved = sys.modules["tx"]
    sys.modules["tx"] = None  # `import tx` now fails as it does where tx is not installed
    try:
        with pytest.raises(ModuleNotFoundError, match="install.py.*make lab") as info:
            exec(SETUP_CELL, {})
    finally:
        sys.modules["tx"] = saved
    assert info.value.__cause__ is None and "README.md" in str(info.value)


# ----------------------------------------------------------------- a learner's work is kept


def test_running_again_keeps_a_learners_edits(tmp_path, capsys):
    out = tmp_path / "mine"
    written, kept = write_learner_edition(out, CHAPTERS)
    assert len(written) == len(NOTEBOOKS) + 1 and not kept and (out / MANIFEST).exists()
    mine = out / NOTEBOOKS[2].name
    nb = nbformat.read(mine, as_version=4)
    nb.cells[-1].source = "my answer"
    nbformat.write(nb, mine)
    edited = mine.read_bytes()
    (out / NOTEBOOKS[0].name).unlink()  # a deleted notebook comes back

    main(["learner", str(out)])
    assert mine.read_bytes() == edited
    output = capsys.readouterr()
    assert "wrote 1 files" in output.out
    assert f"kept {NOTEBOOKS[2].name}: you changed cell {len(nb.cells)}" in output.err and "--force" in output.err
    assert (out / NOTEBOOKS[0].name).exists()

    main(["learner", str(out), "--force"])
    assert mine.read_bytes() != edited and "my answer" not in mine.read_text()


def _edited(path, change) -> bytes:
    nb = nbformat.read(path, as_version=4)
    change(nb)
    nbformat.write(nb, path)
    return path.read_bytes()


def _as_if_run(nb) -> None:
    """What Run All and JupyterLab's autosave leave: outputs, execution counts, metadata, new cell ids."""
    for n, cell in enumerate(nb.cells):
        cell.metadata["collapsed"] = False
        cell.id = f"run-{n}"
        if cell.cell_type == "code":
            cell.execution_count = n + 1
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"run output {n}\n")]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.9"}


def _stubs(nb) -> list[int]:
    return [i for i, c in enumerate(nb.cells) if "stub" in c.metadata.get("tags", [])]


def test_a_notebook_only_run_gets_the_new_edition_and_an_edited_one_is_kept(tmp_path, capsys):
    chapters = tmp_path / "book" / "chapters"
    shutil.copytree(CHAPTERS, chapters, ignore=shutil.ignore_patterns(".*"))
    out = tmp_path / "mine"
    write_learner_edition(out, chapters)
    run_only, edited = out / "05_multi_head_attention.ipynb", out / "03_self_attention_vectors.ipynb"
    _edited(run_only, _as_if_run)
    answer = _stubs(nbformat.read(edited, as_version=4))[0]

    def answer_and_run(nb):
        nb.cells[answer].source = nb.cells[answer].source.replace("raise NotImplementedError", "return 1.0")
        _as_if_run(nb)

    mine = _edited(edited, answer_and_run)
    for name in (run_only.name, edited.name):  # a new edition of both chapters
        _edited(chapters / name, lambda nb: setattr(nb.cells[0], "source", nb.cells[0].source + "\n\nA new sentence."))

    main(["learner", str(out), "--chapters", str(chapters)])
    err = capsys.readouterr().err
    assert "A new sentence." in run_only.read_text() and "run output" not in run_only.read_text()
    assert edited.read_bytes() == mine
    # The kept notebook is named with its edited cell, numbered as the learner counts, and its exercise.
    assert f"kept {edited.name}: you changed cell {answer + 1} (exercise 3.1's answer)" in err
    assert run_only.name not in err


def test_an_older_manifest_of_whole_file_digests_still_keeps_edits_and_updates_the_rest(tmp_path):
    import hashlib

    out = tmp_path / "mine"
    write_learner_edition(out, CHAPTERS)
    old = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in out.iterdir() if p.name != MANIFEST}
    (out / MANIFEST).write_text(json.dumps(old))
    run_only, edited, untouched = (out / NOTEBOOKS[i].name for i in (4, 2, 6))
    _edited(run_only, _as_if_run)
    answer = _stubs(nbformat.read(edited, as_version=4))[0]
    mine = _edited(edited, lambda nb: setattr(nb.cells[answer], "source", "def mine(): return 1"))
    written, kept = done = write_learner_edition(out, CHAPTERS)
    assert [p.name for p in written] == [run_only.name]  # its cells are the edition's: only run
    assert [p.name for p in kept] == [edited.name] and edited.read_bytes() == mine
    assert f"you changed cell {answer + 1}" in done.why[edited.name] and "older version" in done.why[edited.name]
    assert isinstance(json.loads((out / MANIFEST).read_text())[untouched.name]["cells"], list)  # upgraded


def test_a_notebook_nobody_changed_gets_the_new_edition(tmp_path):
    chapters = tmp_path / "book" / "chapters"
    shutil.copytree(CHAPTERS, chapters, ignore=shutil.ignore_patterns(".*"))
    out = tmp_path / "mine"
    write_learner_edition(out, chapters)
    target = chapters / NOTEBOOKS[3].name
    nb = nbformat.read(target, as_version=4)
    nb.cells[0].source += "\n\nA new sentence."
    nbformat.write(nb, target)
    written, kept = write_learner_edition(out, chapters)
    assert [p.name for p in written] == [target.name] and not kept
    assert "A new sentence." in (out / target.name).read_text()


def test_a_notebook_the_tool_did_not_write_is_never_replaced(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / NOTEBOOKS[0].name).write_text("{}")
    written, kept = write_learner_edition(out, CHAPTERS)
    assert [p.name for p in kept] == [NOTEBOOKS[0].name]
    assert (out / NOTEBOOKS[0].name).read_text() == "{}"


def test_make_lab_opens_a_working_copy_and_runs_as_root():
    dry = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    lab = [line for line in dry.splitlines() if "jupyter lab" in line]
    assert len(lab) == 1 and "chapters" not in lab[0], dry
    assert "tx.exercises learner workbook" in dry and "--ServerApp.root_dir=workbook" in lab[0]
    import os

    assert ("--allow-root" in lab[0]) == (os.geteuid() == 0)


# ----------------------------------------------------------------- Run All past a raising answer


def _run_all(learner_nb, tmp_path):
    """Run All in a fresh kernel, once: allow_errors=False, so any cell that fails without the
    raises-exception tag stops the run. (Every chapter's Run All in real JupyterLab is
    tests/lab; this one checks the tags with nbclient, which honours them too.)"""
    from nbclient import NotebookClient

    nb = nbformat.read(learner_nb, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=False,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    return nb


def test_run_all_goes_on_past_an_answer_cell_that_raises(tmp_path):
    # A half-written answer that raises as its cell runs: the rest of the notebook still runs,
    # with allow_errors=False, as JupyterLab's Run All does with the raises-exception tag.
    name = "03_self_attention_vectors.ipynb"
    written, _ = write_learner_edition(tmp_path, CHAPTERS)
    (learner_nb,) = [p for p in written if p.name == name]
    nb = nbformat.read(learner_nb, as_version=4)
    first_stub = next(c for c in nb.cells if "stub" in c.metadata.get("tags", []))
    first_stub.source += "\n\n[1, 2, 3][7]  # a line that raises IndexError\n"
    nbformat.write(nb, learner_nb)
    nb = _run_all(learner_nb, tmp_path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), "Run All stopped before the end"
    (raised,) = [o for o in first_stub_of(nb).outputs if o.output_type == "error"]
    assert raised.ename == "IndexError"
    checks = [c for c in code if "check" in c.metadata.get("tags", [])]
    assert len(checks) >= 2
    for cell in checks:  # every check ran, the first one's included, and gave its hint
        (error,) = [o for o in cell.outputs if o.output_type == "error"]
        assert error.ename == "CheckFailed" and "still raises NotImplementedError" in error.evalue


def first_stub_of(nb) -> nbformat.NotebookNode:
    return next(c for c in nb.cells if "stub" in c.metadata.get("tags", []))


# ----------------------------------------------------------------- hidden cells


def _tags(cell: dict) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def _names(code: str) -> tuple[set[str], set[str]]:
    """The names a cell binds at its top level, and every name it reads."""
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in code.splitlines())
    tree = ast.parse(code)
    bound = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            continue
        for sub in ast.walk(node):
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(sub.name)
            elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                bound.add(sub.id)
            elif isinstance(sub, ast.alias):
                bound.add((sub.asname or sub.name).split(".")[0])
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return bound, read


def run_all_needs(cells: list[dict]) -> list[str]:
    """Cells of a chapter that would fail in the learner edition's Run All, read from the code:
    a cell (other than a check) that reads a name only a solution defines, or that uses an
    exercise's function, which raises NotImplementedError until the learner writes it."""
    learner, solution, stub, problems = set(), set(), set(), []
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        kinds = set(tags(cell))
        bound, read = _names(source(cell))
        read -= bound  # a name the cell binds itself (a first read before it binds is not seen)
        if "solution" in kinds:
            solution |= bound
            continue
        if not {"stub", "check"} & kinds:
            first = next((line for line in source(cell).splitlines() if line.strip()), "")
            if (read & solution) - learner:
                problems.append(f"cell {index} ({first}) reads {sorted((read & solution) - learner)}, "
                                "which only a solution defines")
            if read & stub:
                problems.append(f"cell {index} ({first}) uses {sorted(read & stub)}, the learner's "
                                "unwritten answer")
        if "stub" in kinds:
            stub |= bound
        learner |= bound
    return problems


def test_run_all_needs_no_answer_finds_what_would_fail():
    code = lambda text, *tags: {"cell_type": "code", "metadata": {"tags": list(tags)}, "source": text}  # noqa: E731
    cells = [code("import torch\nx = torch.ones(3)"),
             code("def double(v):\n    raise NotImplementedError", "stub"),
             code("def double(v):\n    return 2 * v\nanswer = double(x)", "solution"),
             code("check(double)", "check"),
             code("print(x.sum())"),
             code("print(answer)"),
             code("y = double(x)"),
             code("%%time\nanswer = 1\nprint(answer)"),
             code("%%time\nprint(double(answer))")]
    assert run_all_needs(cells) == [
        "cell 5 (print(answer)) reads ['answer'], which only a solution defines",
        "cell 6 (y = double(x)) uses ['double'], the learner's unwritten answer",
        "cell 8 (%%time) uses ['double'], the learner's unwritten answer",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_run_all_needs_no_answer(path):
    # What the JupyterLab test finds by running (cells that failed, besides the checks), for
    # the chapters `make test` does not run there; the build runs the same cells with answers.
    assert run_all_needs(load(path)["cells"]) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_what_the_website_hides_is_folded_away_in_jupyterlab(edition, path):
    cells = notebook(edition, path.name)["cells"]
    chapter = load(path)["cells"]
    for tag, hidden in [("remove-cell", {"source_hidden": True, "outputs_hidden": True}),
                        ("remove-input", {"source_hidden": True}),
                        ("hide-input", {"source_hidden": True}),
                        ("hide-output", {"outputs_hidden": True})]:
        folded = [c for c in cells if tag in _tags(c)]
        assert len(folded) == len([c for c in chapter if tag in _tags(c)])  # none dropped
        for cell in folded:
            assert cell["metadata"]["jupyter"] == hidden, source(cell)
    shown = [c for c in cells if not {"remove-cell", "remove-input", "hide-input", "hide-output"} & set(_tags(c))]
    assert not [c for c in shown if c["metadata"].get("jupyter")]


def test_a_hidden_cell_is_folded_and_still_runs(tmp_path):
    # The hidden cell's assert keeps the prose true in the learner's notebook too: Run All runs
    # it (and would stop on a false one), folded away under the cell it checks.
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# A chapter"),
        nbformat.v4.new_code_cell("x = 2\nprint(x)"),
        nbformat.v4.new_code_cell("assert x == 2  # the prose says two\ny = x + 1",
                                  metadata={"tags": ["remove-cell"]}),
        nbformat.v4.new_code_cell("from IPython.display import Markdown, display\n"
                                  "display(Markdown(f'**{y}**'))",
                                  metadata={"tags": ["remove-input"]}),
        nbformat.v4.new_code_cell("print(y)"),
    ]
    learner = learner_notebook(json.loads(nbformat.writes(nb)), {}, {}, chapter=1)
    by_source = {source(c).split("\n")[0]: c for c in learner["cells"] if c["cell_type"] == "code"}
    hidden = by_source["assert x == 2  # the prose says two"]
    assert hidden["metadata"]["jupyter"] == {"source_hidden": True, "outputs_hidden": True}
    assert hidden["metadata"]["tags"] == ["remove-cell"]
    writes = by_source["from IPython.display import Markdown, display"]
    assert writes["metadata"]["jupyter"] == {"source_hidden": True}
    assert "jupyter" not in by_source["x = 2"]["metadata"]
    path = tmp_path / "chapter.ipynb"
    path.write_text(json.dumps(learner), encoding="utf-8")
    ran = _run_all(path, tmp_path)
    code = [c for c in ran.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code)
    assert [o.text for o in code[-1].outputs] == ["3\n"]  # y, which only the hidden cell defines
    # A false assert in a hidden cell stops Run All as it would the build.
    hidden["source"] = "assert x == 3"
    path.write_text(json.dumps(learner), encoding="utf-8")
    with pytest.raises(Exception, match="AssertionError"):
        _run_all(path, tmp_path)


# ----------------------------------------------------------------- the command


def test_the_command_says_what_is_wrong_with_its_folder(capsys):
    with pytest.raises(SystemExit) as info:
        main(["learner", str(CHAPTERS)])
    assert info.value.code == 2 and "choose another OUTDIR" in capsys.readouterr().err


def test_a_file_as_outdir_or_a_folder_as_zip_is_refused_before_anything_is_written(tmp_path, capsys):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    with pytest.raises(SystemExit) as info:
        main(["learner", str(a_file)])
    assert info.value.code == 2 and "is a file, not a folder" in capsys.readouterr().err
    assert a_file.read_text() == "mine"
    out = tmp_path / "edition"
    with pytest.raises(SystemExit) as info:
        main(["learner", str(out), "--zip", str(tmp_path)])
    assert info.value.code == 2 and "give the zip file's name" in capsys.readouterr().err
    assert not out.exists(), "nothing is written when an argument is wrong"


# ----------------------------------------------------------------- how long Run All takes


def test_every_notebook_has_a_measured_run_all_time():
    # The chapter pages show it at their exercises (_ext/book_site.py); a missing one fails the build.
    from tx.exercises.learner import run_all_times

    times = run_all_times()
    assert sorted(times["chapters"]) == [p.name for p in NOTEBOOKS]
    # A notebook the bench stopped after its time-out has a lower bound instead.
    assert all((t["run_all_s"] or t["at_least_s"]) > 0 for t in times["chapters"].values())
    assert times["machine"]["cores"] >= 1 and isinstance(times["under_load"], bool)


def test_a_slow_notebook_says_so_under_its_title(tmp_path):
    from tx.exercises.learner import duration, run_all_sentence, slow_note

    book = tmp_path / "book"
    shutil.copytree(CHAPTERS, book / "chapters", ignore=shutil.ignore_patterns(".*"))
    (book / "bench").mkdir()
    slow, quick = NOTEBOOKS[10].name, NOTEBOOKS[2].name
    times = {"chapters": {slow: {"run_all_s": 187.6}, quick: {"run_all_s": 41.0}}, "machine": {"cores": 2},
             "under_load": False}
    (book / "bench" / "run_all_times.json").write_text(json.dumps(times))
    files = learner_files(book / "chapters")
    first = json.loads(files[slow])["cells"][1]
    assert first["cell_type"] == "markdown" and first["source"] == f"*{slow_note(slow, times)}*"
    assert "takes over 2 minutes" in first["source"] and f"Run All took {duration(187.6)}" in first["source"]
    assert duration(187.6) == "3 min 8 s" and duration(41.0) == "41 s"
    assert not any("takes over" in c["source"] for c in json.loads(files[quick])["cells"] if c["cell_type"] == "markdown")
    times["chapters"][slow] = {"run_all_s": None, "at_least_s": 1800.0}  # the bench's time-out stopped it
    assert run_all_sentence(slow, times) == "Run All of this notebook took over 30 min (it was stopped there) " \
        "on the book's CI machine (2 CPU cores)"
    assert slow_note(slow, times) is not None
