"""One chapter as its learner edition: solutions out, MyST made plain Markdown, checks that let Run All go on.

The notebook-transforming half of :mod:`tx.exercises.learner`, which writes the whole
edition (README, manifest, zip) and re-exports every name here. The book's website numbers
equations and exercises as this module does (``_ext/book_site.py`` imports
:func:`equation_numbers` and :func:`number_equation_labels` through ``tx.exercises.learner``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

__all__ = [
    "EXPECTED_FAILURES", "SETUP_CELL", "chapter_label", "is_solution_cell", "strip_solutions", "equation_numbers",
    "CODE_EQUATION_LABEL", "number_equation_labels", "citations", "to_markdown", "learner_notebook",
    "HIDDEN", "hide_scaffolding",
]

EXPECTED_FAILURES = (
    "*Under each exercise, a check cell tests your function. Until you have solved the exercise, "
    "its check fails with a short hint in red: that is expected, and Run All goes on past it to the "
    "end of the notebook. Run All also goes on past your answer's own cell if it raises an error; "
    "the check under it then fails and says why. A solved exercise's check prints a line that "
    "starts with \"Correct\".*"
)

SETUP_CELL = '''\
# This notebook needs tx, the book's Python package. If this cell fails, see README.md
# next to this notebook: it sets everything up in two commands (install.py).
try:
    import tx
except ModuleNotFoundError:
    raise ModuleNotFoundError(
        "this notebook needs the book's package `tx` and its requirements. In this notebook's "
        "folder run `python3.11 -m venv .venv` and `.venv/bin/python install.py` (from a clone of "
        "the book's repository: `make lab`), then choose that environment's Python as this "
        "notebook's kernel. README.md, next to this notebook, says more."
    ) from None
print(f"tx is installed: {tx.__file__}")'''

_DIRECTIVE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}[ \t]*(?P<arg>.*)$")
_OPTION = re.compile(r"^:(?P<key>[\w-]+):[ \t]*(?P<value>.*)$")
_ROLE = re.compile(r"\{(?P<name>[\w:-]+)\}`(?P<content>[^`]*)`")
_LABELLED_MATH = re.compile(r"\$\$(?P<body>.+?)\$\$[ \t]*\((?P<label>[^()\s]+)\)", re.S)
_TARGET = re.compile(r"^\([\w:.-]+\)=[ \t]*\n?", re.M)
_ADMONITIONS = {"note", "tip", "hint", "important", "warning", "caution", "attention", "danger", "error", "seealso"}


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def is_solution_cell(cell: dict[str, Any]) -> bool:
    """True for a solution code cell and for the solution-start / solution-end directive cells."""
    if "solution" in cell.get("metadata", {}).get("tags", []):
        return True
    text = _source(cell).lstrip()
    return cell["cell_type"] == "markdown" and (
        text.startswith("```{solution-start}") or text.startswith("```{solution-end}")
        or text.startswith(":::{solution-start}") or text.startswith(":::{solution-end}")
    )


def strip_solutions(notebook: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``notebook`` (nbformat JSON) without solutions, outputs or execution counts."""
    cells = []
    for cell in notebook["cells"]:
        if is_solution_cell(cell):
            continue
        cell = json.loads(json.dumps(cell))
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
        cells.append(cell)
    return {**notebook, "cells": cells}


# ----------------------------------------------------------------- references


def equation_numbers(chapters: Path) -> dict[str, str]:
    """Every labelled equation of the chapters, ``{label: "3.2"}``, numbered as the website numbers them.

    Jupyter Book numbers a chapter's labelled equations in order, after the chapter's
    number: the second labelled equation of chapter 3 is (3.2). An appendix's are numbered
    after its label (:func:`chapter_label`), as ``_ext/book_site.py`` numbers them on the
    website: the first labelled equation of appendix A1 is (A1.1).
    """
    numbers: dict[str, str] = {}
    for path in sorted(chapters.glob("*.ipynb")):
        chapter = chapter_label(path.name)
        if chapter is None:
            continue
        n = 0
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "markdown":
                continue
            text = _source(cell)
            labels = [m.group("label") for m in _LABELLED_MATH.finditer(text)]
            labels += re.findall(r"^`{3,}\{math\}.*\n(?::[\w-]+:.*\n)*?:label:[ \t]*(\S+)", text, re.M)
            for label in labels:
                n += 1
                numbers[label] = f"{chapter}.{n}"
    return numbers


# as a chapter's code names an equation: eq-ch10-cross-entropy, or an appendix's, eq-a1-global-mean
CODE_EQUATION_LABEL = re.compile(r"\beq-(?:ch\d\d|a\d+)-[\w-]*\w")


def number_equation_labels(code: str, equations: dict[str, str]) -> str:
    """``code`` with each equation label it names (a comment ``# eq-chNN-name``, or
    ``# eq-aN-name`` in an appendix) as the reader knows the equation.

    The chapters tie a line of code to the equation it computes by the equation's label, which
    stays right when equations are added; a reader sees "equation (10.5)". A label that no
    chapter defines is left as it is.
    """
    def shown(match: re.Match) -> str:
        label = match.group()
        return f"equation ({equations[label]})" if label in equations else label

    return CODE_EQUATION_LABEL.sub(shown, code)


def _last_names(field: str) -> list[str]:
    names = []
    for person in re.split(r"\s+and\s+", field.strip()):
        last = person.split(",")[0] if "," in person else person.split()[-1]
        names.append(re.sub(r"[{}\\]", "", last).strip())
    return names


def citations(bib: Path) -> dict[str, tuple[str, str]]:
    """``{key: (authors, year)}`` from a BibTeX file: "Vaswani et al.", "Ba and Hinton", "Alammar"."""
    entries: dict[str, tuple[str, str]] = {}
    if not bib.exists():
        return entries
    text = bib.read_text(encoding="utf-8")
    for match in re.finditer(r"@\w+\s*\{\s*([^,\s]+)\s*,(.*?)\n\}", text, re.S):
        key, body = match.groups()
        author = re.search(r"\bauthor\s*=\s*\{(.*?)\}\s*,?\s*$", body, re.M | re.S)
        year = re.search(r"\byear\s*=\s*\{?(\d{4})", body)
        names = _last_names(author.group(1)) if author else [key]
        if len(names) == 1:
            who = names[0]
        elif len(names) == 2:
            who = f"{names[0]} and {names[1]}"
        else:
            who = f"{names[0]} et al."
        entries[key] = (who, year.group(1) if year else "n.d.")
    return entries


# ----------------------------------------------------------------- MyST to Markdown


def _role(name: str, content: str, equations: dict[str, str], cites: dict[str, tuple[str, str]]) -> str:
    """The plain Markdown for one MyST role."""
    if name == "eq":
        return f"({equations[content]})" if content in equations else content
    if name.startswith("cite"):
        keys = [k.strip() for k in content.split(",") if k.strip()]
        found = [cites.get(k, (k, "")) for k in keys]
        if name in ("cite:t", "cite:ts"):
            return "; ".join(f"{who} ({year})" for who, year in found)
        inside = "; ".join(f"{who}, {year}" if year else who for who, year in found)
        # Already within parentheses ("(section 3.1 of {cite:p}`x`)"), it brings none of its own.
        return inside if name == "cite:p-bare" else f"({inside})"
    if name == "math":
        return f"${content}$"
    if name.startswith("glue"):
        # A value the website pastes in from a cell's result; here the reader sees its name and can print it.
        return f"`{content.split(':')[0].strip()}`"
    if name == "numref":
        shown = re.match(r"^(.*?)\s*<[^<>]+>$", content, re.S)
        return shown.group(1).replace("%s", "").replace("{number}", "").strip() if shown else "the figure"
    if name in ("ref", "numref", "doc", "term", "download", "abbr") or ":" in name:
        shown = re.match(r"^(.*?)\s*<[^<>]+>$", content, re.S)
        return shown.group(1) if shown else content
    return content


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.strip("\n").split("\n"))


def _directive(name: str, arg: str, options: dict[str, str], body: str) -> str:
    """The plain Markdown for one MyST directive whose body is already converted."""
    body = body.strip("\n")
    if name == "exercise":
        return f"### Exercise: {arg}".rstrip(": ") + ("\n\n" + body if body else "")
    if name in ("solution", "solution-start", "solution-end"):
        return ("**Solution**\n\n" + body) if body else ""
    if name in _ADMONITIONS:
        return _quote(f"**{name.capitalize() if name != 'seealso' else 'See also'}**\n\n{body}")
    if name in ("admonition", "dropdown", "margin", "sidebar", "topic"):
        return _quote(f"**{arg}**\n\n{body}" if arg else body)
    if name == "math":
        label = options.get("label")
        return f"$$\n{body}\n$$" if not label else f"$$\n{body}\n$$ ({label})"
    if name in ("figure", "image"):
        alt = options.get("alt", body.split("\n")[0] if body else "")
        return f"![{alt}]({arg})" + (f"\n\n*{body}*" if name == "figure" and body else "")
    if name.startswith("glue"):
        return f"*(The website shows `{arg}` here: it is computed by a code cell of this notebook.)*"
    if name in ("code", "code-block", "code-cell", "literalinclude"):
        return f"```{arg}\n{body}\n```" if name != "literalinclude" else f"See `{arg}`."
    heading = f"**{arg}**\n\n" if arg else ""
    return heading + body


def _directives(text: str) -> str:
    """Replace every MyST directive (``` or ::: fences, nested ones too) with plain Markdown."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = _DIRECTIVE.match(lines[i].strip())
        if not match:
            out.append(lines[i])
            i += 1
            continue
        fence, name, arg = match.group("fence"), match.group("name"), match.group("arg").strip()
        i += 1
        options: dict[str, str] = {}
        while i < len(lines) and (option := _OPTION.match(lines[i].strip())):
            options[option.group("key")] = option.group("value").strip()
            i += 1
        body = []
        closing = re.compile(rf"^{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        while i < len(lines) and not closing.match(lines[i].strip()):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        out.append(_directive(name, arg, options, _directives("\n".join(body))))
    return "\n".join(out)


def _bare_if_in_parentheses(match: re.Match) -> str:
    """The role's name, or "cite:p-bare" for a parenthetical citation inside a parenthesis its paragraph opened."""
    name = match.group("name")
    if name != "cite:p":
        return name
    before = match.string[: match.start()]
    paragraph = before[before.rfind("\n\n") + 1:]
    depth = 0
    for char in re.sub(r"\$[^$]*\$", "", paragraph):  # parentheses in math do not count
        depth = depth + 1 if char == "(" else max(0, depth - 1) if char == ")" else depth
    return "cite:p-bare" if depth else name


_SITE_FILE_LINK = re.compile(r'<a class="book-source"[^>]*>(?P<name>[^<]*)</a>')


def to_markdown(text: str, equations: dict[str, str], cites: dict[str, tuple[str, str]]) -> str:
    """A markdown cell's MyST as plain Markdown: directives, roles, labels and equation numbers."""
    text = _directives(text)

    def tag(match: re.Match) -> str:
        label, body = match.group("label"), match.group("body")
        number = equations.get(label)
        return f"$${body.rstrip()} \\tag{{{number}}}\n$$" if number else f"$${body}$$"

    text = _LABELLED_MATH.sub(tag, text)
    text = _TARGET.sub("", text)
    # a link to a file the website serves (book-source.zip) has nothing to point at in a workbook
    text = _SITE_FILE_LINK.sub(r"\g<name> (on the book's website)", text)
    # "(see {eq}`x`)" is fine, but "({eq}`x`)" would read ((3.1)) once the role brings its own parentheses.
    text = re.sub(r"\((\{eq\}`[^`]*`)\)", r"\1", text)
    text = _ROLE.sub(lambda m: _role(_bare_if_in_parentheses(m), m.group("content"), equations, cites), text)
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n")


# ----------------------------------------------------------------- the edition


HIDDEN = {
    "remove-cell": {"source_hidden": True, "outputs_hidden": True},
    "remove-input": {"source_hidden": True},
    "hide-input": {"source_hidden": True},
    "hide-output": {"outputs_hidden": True},
}
"""What JupyterLab collapses for each tag the website uses to hide a cell, its code, or (folded
behind a toggle) its code or its output: code that only lays a table out, source an exercise
asks the reader to write."""


def hide_scaffolding(cell: dict[str, Any]) -> None:
    """Collapse in JupyterLab what the website hides or folds: a ``remove-cell`` cell, a
    ``remove-input`` or ``hide-input`` cell's code, a ``hide-output`` cell's output.

    Such a cell keeps the prose true (its asserts) or writes it (``display(Markdown(...))``);
    the learner's notebook still runs it, folded away under the cell it belongs to, as the
    standard ``jupyter.source_hidden`` / ``jupyter.outputs_hidden`` metadata asks.
    """
    for tag, hidden in HIDDEN.items():
        if tag in cell.get("metadata", {}).get("tags", []):
            cell["metadata"]["jupyter"] = {**cell["metadata"].get("jupyter", {}), **hidden}


SPOILER = re.compile(r"is\s+folded\s+below[;:]\s+open\s+it\s+once\s+you\s+have\s+written\s+yours")
"""How a chapter introduces tx's own listing of an exercise's answer, folded on the website."""
SPOILER_NOTE = "is in the cell below as a comment: run it once you have written yours"


def keep_answer_listing_unrun(cell: dict[str, Any]) -> None:
    """A listing of tx's answer to an exercise (the code cell after :data:`SPOILER`) as a comment:
    Run All would show it, open, beside the exercise it answers; the learner runs it when ready."""
    code = _source(cell).strip()
    cell["source"] = ("# tx's own answer to an exercise of this chapter. Once you have written\n"
                      "# yours, delete the \"# \" before the line below and run this cell:\n"
                      + "\n".join(f"# {line}" for line in code.splitlines()))


def chapter_label(name: str) -> str | None:
    """How the website numbers a notebook's exercises: "3" for ``03_...ipynb``, "A1" for an appendix's
    ``A1_...ipynb`` (``_ext/book_site.py`` numbers its exercises A1.1, A1.2, ...); None for any other name."""
    match = re.match(r"(\d{2}|[A-Z]\d+)_", name)
    if not match:
        return None
    return str(int(match.group(1))) if match.group(1).isdigit() else match.group(1)


def learner_notebook(notebook: dict[str, Any], equations: dict[str, str], cites: dict[str, tuple[str, str]],
                     chapter: int | str | None = None, slow: str | None = None) -> dict[str, Any]:
    """The learner edition of one chapter (nbformat JSON): no solutions, plain Markdown, checks that let Run All go on.

    With ``chapter`` (:func:`chapter_label`), exercises are numbered as the website numbers them: "Exercise 3.2
    (Softmax)", "Exercise A1.1 (...)".
    With ``slow`` (from :func:`tx.exercises.learner.slow_note`), a note under the title says the notebook takes
    over two minutes to run.
    """
    notebook = strip_solutions(notebook)
    cells = []
    exercises = 0

    def number(match: re.Match) -> str:
        nonlocal exercises
        exercises += 1
        return f"### Exercise {chapter}.{exercises} ({match.group(1)})"

    spoiler_next = False
    for cell in notebook["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        if cell["cell_type"] == "code" and spoiler_next:
            keep_answer_listing_unrun(cell)
        spoiler_next = cell["cell_type"] == "markdown" and bool(SPOILER.search(_source(cell))) or \
            (spoiler_next and cell["cell_type"] != "code")
        if cell["cell_type"] == "markdown":
            text = SPOILER.sub(SPOILER_NOTE, to_markdown(_source(cell), equations, cites))
            if chapter is not None:
                text = re.sub(r"^### Exercise: (.+)$", number, text, flags=re.M)
            # The Exercises heading may close a longer cell (the Summary's, say): the note goes under it.
            text = re.sub(r"^(## Exercises\b.*)$", lambda m: f"{m.group(1)}\n\n{EXPECTED_FAILURES}", text,
                          count=1, flags=re.M | re.I)
            cell["source"] = text
        else:
            cell["source"] = number_equation_labels(_source(cell), equations)
        if "check" in tags:
            # The website hides a check's output; in Jupyter the verdict is the point.
            cell.setdefault("metadata", {})["tags"] = [t for t in tags if t != "remove-output"] + ["raises-exception"]
        elif "stub" in tags:
            # The learner's answer cell: a half-written answer may raise as it runs, and Run All
            # should still reach the other exercises.
            cell.setdefault("metadata", {})["tags"] = tags + ["raises-exception"]
        hide_scaffolding(cell)
        cells.append(cell)
    first_code = next((i for i, c in enumerate(cells) if c["cell_type"] == "code"), len(cells))
    setup = {"cell_type": "code", "execution_count": None, "id": "tx-learner-setup",
             "metadata": {"tags": ["setup"]}, "outputs": [], "source": SETUP_CELL}
    cells.insert(first_code, setup)
    if slow:
        note = {"cell_type": "markdown", "id": "tx-learner-slow", "metadata": {},
                "source": f"*{slow}*"}
        cells.insert(1, note)
    return {**notebook, "cells": cells}
