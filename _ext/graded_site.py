"""A graded edition of the website: the exercises without their solutions.

A local Sphinx extension, loaded from ``_config.yml`` (``sphinx.local_extensions``), for a
teacher who grades a class with the book (teachers.md). ``make book GRADED=1`` builds the site
with every solution left out; ``make book SOLUTIONS_AFTER=2026-12-15`` leaves them out of a
build made before that date, and a build on or after it shows them (build again once the work
is due). The Makefile passes the settings as ``TX_GRADED``, ``TX_SOLUTIONS_AFTER`` and
``TX_BUILD_DATE`` (the date it decides by, fixed once for the whole of ``make book``); the
config values ``graded_site``, ``graded_site_solutions_after`` and ``graded_site_date`` read
them, and ``graded_site_hide`` holds the decision.

A solution is what sphinx-exercise's gated directives enclose: ``solution-start``, the cells
after it (text, code, outputs), ``solution-end``. sphinx-exercise's own ``hide_solutions``
drops only the start's node and leaves those cells on the page, so in a graded build:

* ``LeaveOutSolutions``, a transform that runs as each page is read, just after sphinx-exercise
  has merged a solution's cells into its node, puts one line in the solution's place. Everything
  later reads the page without it: the HTML, the search index, the images the page uses.
* The copies of the sources the site offers (``_sources/``, each notebook page's .ipynb
  download, any other .ipynb under the output folder) are rewritten after the build with the
  same line in place of each solution (``strip_notebook``, ``strip_markdown``).
* ``book-source.zip`` is not part of a graded site (the Makefile's ``book`` says why), so each
  page's link to it becomes its name and a note.

The output folder should start empty, as ``make book`` leaves it: a graded build over an
earlier full one would keep that build's image files.

Run as a script (``python _ext/graded_site.py``), it prints ``hidden`` or ``shown``, the
decision the build makes with the same settings, for the Makefile's zip step; a malformed
setting exits with a message that says the format.
"""

from __future__ import annotations

import os
import re
import sys
from datetime import date
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ConfigError, ExtensionError
from sphinx.transforms import SphinxTransform
from sphinx_exercise.nodes import solution_end_node, solution_node, solution_start_node

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
NOTE_CLASS = "tx-solution-withheld"
ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_date(text: str, setting: str) -> date | None:
    """A date written YYYY-MM-DD, or None for an empty setting; anything else is a ValueError that says the format."""
    text = text.strip()
    if not text:
        return None
    try:
        if not ISO_DATE.fullmatch(text):
            raise ValueError(text)
        return date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{setting} is a date written YYYY-MM-DD, such as 2026-12-15, not {text!r}") from None


def solutions_hidden(graded: str, after: str, today: date) -> bool:
    """Whether a build on ``today`` leaves the solutions out: always for ``graded`` "1", before ``after`` for a date."""
    release = parse_date(after, "SOLUTIONS_AFTER")
    if graded.strip() not in ("", "0", "1"):
        raise ValueError(f"GRADED is 1 (the solutions left out) or empty, not {graded!r}")
    if graded.strip() == "1":
        if release is not None:
            raise ValueError("GRADED=1 leaves the solutions out whatever the date: to publish them on a date, "
                             "give SOLUTIONS_AFTER alone")
        return True
    return release is not None and today < release


def note_text(after: str) -> str:
    """The line a graded page shows in place of a solution."""
    release = parse_date(after, "SOLUTIONS_AFTER")
    until = f" until {release.day} {MONTHS[release.month - 1]} {release.year}" if release else ""
    return f"This edition of the book, made for a graded course, leaves out the solution{until}."


def decide(app: Sphinx, config) -> None:
    """Set ``graded_site_hide`` from the settings (config-inited); a malformed one stops the build."""
    try:
        today = parse_date(config.graded_site_date, "TX_BUILD_DATE") or date.today()
        config.graded_site_hide = solutions_hidden(config.graded_site, config.graded_site_solutions_after, today)
    except ValueError as error:
        raise ConfigError(f"graded_site: {error}") from None


class LeaveOutSolutions(SphinxTransform):
    """In a graded build, each solution becomes one line that says it is left out."""

    default_priority = 11  # after sphinx-exercise's MergeGatedSolutions (10) gathered the solution's cells

    def apply(self, **kwargs) -> None:
        if not self.config.graded_site_hide:
            return
        # A start the merge did not pair (its end in another section) would leave its cells on the page.
        for stray in (*self.document.findall(solution_start_node), *self.document.findall(solution_end_node)):
            raise ExtensionError(f"graded_site: {self.env.docname}, line {stray.line}: a solution-start and its "
                                 "solution-end must be in the same section, or the solution shows in a graded build")
        text = note_text(self.config.graded_site_solutions_after)
        for solution in list(self.document.findall(solution_node)):
            note = nodes.paragraph("", text, classes=[NOTE_CLASS], ids=list(solution["ids"]))
            for node_id in note["ids"]:  # a link to the solution lands on the line
                self.document.ids[node_id] = note
            solution.parent.replace(solution, note)  # not replace_self, which gives the line the solution's classes


# --------------------------------------------------------------------------- the sources' copies

SOLUTION_DIRECTIVE = re.compile(r"\{(solution-start|solution-end|solution)\}")


def _solution_blocks(text: str) -> list[tuple[int, int, str]]:
    """(first line, line after, directive) of each top-level solution directive in MyST text."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.colon_fence import colon_fence_plugin

    blocks = []
    for token in MarkdownIt("commonmark").use(colon_fence_plugin).parse(text):
        match = SOLUTION_DIRECTIVE.match(token.info.strip()) if token.type in ("fence", "colon_fence") else None
        if match and token.map:
            blocks.append((token.map[0], token.map[1], match.group(1)))
    return blocks


def _strip_lines(text: str, inside: bool, note: str) -> tuple[str, bool, int]:
    """``text`` without its solutions' lines, whether a solution is still open at its end, and how many began."""
    lines, kept, at, begun = text.splitlines(keepends=True), [], 0, 0
    for first, after, directive in _solution_blocks(text):
        if not inside:
            kept += lines[at:first]
        if directive == "solution-end":
            if not inside:
                raise ExtensionError("graded_site: a solution-end without its solution-start")
            inside = False
        elif inside:
            raise ExtensionError("graded_site: a solution inside a solution")
        else:
            kept.append(f"*{note}*\n\n")
            begun += 1
            inside = directive == "solution-start"
        at = after
    if not inside:
        kept += lines[at:]
    return "".join(kept), inside, begun


def strip_markdown(text: str, note: str) -> tuple[str, int]:
    """MyST text with each solution replaced by ``note``; and how many there were."""
    stripped, inside, count = _strip_lines(text, False, note)
    if inside:
        raise ExtensionError("graded_site: a solution-start without its solution-end")
    return stripped, count


def strip_notebook(nb, note: str) -> int:
    """Replace each solution in a notebook (nbformat) by ``note``, in place; returns how many there were."""
    cells, inside, count = [], False, 0
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            if not inside:
                cells.append(cell)
            continue
        source, inside, begun = _strip_lines(cell.source, inside, note)
        count += begun
        if source.strip():
            cell.source = source.rstrip("\n")
            cells.append(cell)
    if inside:
        raise ExtensionError("graded_site: a solution-start without its solution-end")
    nb.cells = cells
    return count


def strip_published_sources(app: Sphinx, exception: Exception | None) -> None:
    """In a graded build, the copies of the sources under the output folder lose their solutions (build-finished)."""
    if exception is not None or not app.config.graded_site_hide or app.builder.format != "html":
        return
    import nbformat

    out, note = Path(app.outdir), note_text(app.config.graded_site_solutions_after)
    for path in sorted(out.rglob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        if strip_notebook(nb, note):
            nbformat.write(nb, path)
    for path in sorted((out / "_sources").rglob("*")):
        if path.suffix == ".ipynb" or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if not SOLUTION_DIRECTIVE.search(text):
            continue
        if path.name.endswith((".md", ".md.txt")):
            stripped, count = strip_markdown(text, note)
            if count:
                path.write_text(stripped, encoding="utf-8")
        elif ".. solution" in text:
            raise ExtensionError(f"graded_site: {path} has solutions in reStructuredText, which it cannot strip")


BOOK_SOURCE_LINK = re.compile(r'<a class="book-source"[^>]*>(?P<name>.*?)</a>', re.S)


def unlink_book_source(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """In a graded build, a link to book-source.zip, which the site leaves out, becomes the name and a note."""
    if app.config.graded_site_hide and isinstance(context.get("body"), str):
        context["body"] = BOOK_SOURCE_LINK.sub(
            r'<span class="book-source">\g<name></span> (not on this edition of the site)', context["body"])


def setup(app: Sphinx) -> dict:
    # From the Makefile's `make book GRADED=1` or `SOLUTIONS_AFTER=YYYY-MM-DD`; both empty: the full site.
    app.add_config_value("graded_site", os.environ.get("TX_GRADED", ""), "env", [str])
    app.add_config_value("graded_site_solutions_after", os.environ.get("TX_SOLUTIONS_AFTER", ""), "env", [str])
    # The day the build decides by (YYYY-MM-DD); empty: today.
    app.add_config_value("graded_site_date", os.environ.get("TX_BUILD_DATE", ""), "", [str])
    # The decision, set at config-inited: when it changes (the release date passed), every page is read again.
    app.add_config_value("graded_site_hide", False, "env", [bool])
    app.connect("config-inited", decide)
    app.add_transform(LeaveOutSolutions)
    app.connect("html-page-context", unlink_book_source)
    app.connect("build-finished", strip_published_sources)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    try:
        day = parse_date(os.environ.get("TX_BUILD_DATE", ""), "TX_BUILD_DATE") or date.today()
        graded, after = os.environ.get("TX_GRADED", ""), os.environ.get("TX_SOLUTIONS_AFTER", "")
        hidden = solutions_hidden(graded, after, day)
    except ValueError as error:
        sys.exit(f"make book: {error}")
    if graded.strip() == "1":
        print("graded site: the solutions are left out (GRADED=1)", file=sys.stderr)
    elif hidden:
        print(f"graded site: the solutions are left out until {after.strip()} (build date {day}): "
              "build again on or after it to show them", file=sys.stderr)
    elif after.strip():
        print(f"graded site: the solutions are shown (SOLUTIONS_AFTER={after.strip()}, build date {day})",
              file=sys.stderr)
    print("hidden" if hidden else "shown")
