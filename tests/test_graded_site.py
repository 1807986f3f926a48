"""_ext/graded_site.py: a graded build of the site holds no solution anywhere, and the release date's rule.

A tiny book (one notebook with stored outputs, an exercise and its gated solution, and a page
that links to book-source.zip) is built with Sphinx, myst-nb (execution off), sphinx-exercise
and the extension: first on the day before its solutions' release date, then again in the same
folders on that date, as a teacher rebuilds once the work is due. The first build must have
no trace of the solution in any file of its output; the second must show it.
"""

from __future__ import annotations

import base64
import importlib.util
import io
import os
import shutil
import struct
import subprocess
import sys
import zlib
from datetime import date
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXT = ROOT / "_ext"

# Markers only the solution holds; none ends in a suffix the search index's stemmer would cut.
PROSE, CODE, OUTPUT = "solprosexq", "solcodexq", "soloutputxq"
EXERCISE, CHECK = "exercisexq", "checkxq"
RELEASE = "2026-12-15"


def _png() -> bytes:
    """A 2x1 PNG of two made-up colours: the solution's figure."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    pixels = zlib.compress(b"\x00\x12\x34\x56\x9a\xbc\xde")
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", pixels) + chunk(b"IEND", b""))


PNG = _png()


def _notebook() -> nbformat.NotebookNode:
    v4 = nbformat.v4
    solution_code = v4.new_code_cell(f"def twice(x):\n    return 2 * x  # {CODE}\n\nprint(twice(21))", outputs=[
        v4.new_output("stream", name="stdout", text=f"42 {OUTPUT}\n"),
        v4.new_output("display_data", data={"image/png": base64.b64encode(PNG).decode(), "text/plain": "<Figure>"}),
    ], execution_count=2)
    return v4.new_notebook(cells=[
        v4.new_markdown_cell("# A chapter\n\nSome text before the exercises."),
        v4.new_markdown_cell(f"```{{exercise}} Twice\n:label: ex-twice\n\nWrite `twice(x)`, {EXERCISE}. "
                             "Hint: multiply by two.\n```"),
        v4.new_code_cell("def twice(x):\n    raise NotImplementedError", execution_count=1),
        v4.new_markdown_cell(f"```{{solution-start}} ex-twice\n:class: dropdown\n```\nThe {PROSE} way: double it."),
        solution_code,
        v4.new_markdown_cell("```{solution-end}\n```"),
        v4.new_code_cell(f"assert twice(2) == 4  # {CHECK}", execution_count=3,
                         outputs=[v4.new_output("stream", name="stdout", text="Correct\n")]),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})


CONF = f"""
import sys
sys.path.insert(0, {str(EXT)!r})
extensions = ["myst_nb", "sphinx_exercise", "graded_site"]
nb_execution_mode = "off"
html_sourcelink_suffix = ""  # as Jupyter Book has it: _sources/chapter.ipynb, the download button's file
exclude_patterns = ["_build"]
nitpicky = True
"""

INDEX = """# The book

The book's source, <a class="book-source" href="book-source.zip" download>book-source.zip</a>, is here.

```{toctree}
chapter
```
"""


def _build(src: Path, build: Path, **settings: str) -> Path:
    """Build the tiny book as HTML into ``build/html``, warnings as errors; fails on any warning."""
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace, patch_docutils

    warnings = io.StringIO()
    with patch_docutils(str(src)), docutils_namespace():  # as sphinx-build does: each build's nodes its own
        app = Sphinx(str(src), str(src), str(build / "html"), str(build / "doctrees"), "html",
                     confoverrides=settings, status=io.StringIO(), warning=warnings, warningiserror=True)
        app.build()
    assert warnings.getvalue() == ""
    return build / "html"


@pytest.fixture(scope="module")
def sites(tmp_path_factory) -> dict[str, Path]:
    """The tiny book built the day before its release date (a copy kept), then on the date in the same folders."""
    src = tmp_path_factory.mktemp("book")
    (src / "conf.py").write_text(CONF, encoding="utf-8")
    (src / "index.md").write_text(INDEX, encoding="utf-8")
    nbformat.write(_notebook(), src / "chapter.ipynb")
    build = tmp_path_factory.mktemp("build")
    settings = {"graded_site_solutions_after": RELEASE}
    hidden = _build(src, build, graded_site_date="2026-12-14", **settings)
    kept = shutil.copytree(hidden, tmp_path_factory.mktemp("hidden") / "html")
    shown = _build(src, build, graded_site_date=RELEASE, **settings)
    return {"hidden": kept, "shown": shown}


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_graded_site_holds_no_trace_of_the_solution(sites):
    files = _files(sites["hidden"])
    assert "chapter.html" in files and "searchindex.js" in files and "_sources/chapter.ipynb" in files
    secrets = [m.encode() for m in (PROSE, CODE, OUTPUT)] + [PNG, base64.b64encode(PNG)]
    leaks = [(name, secret[:20]) for name, data in files.items() for secret in secrets if secret in data]
    assert leaks == []


def test_a_graded_page_keeps_the_exercise_and_says_where_the_solution_went(sites):
    page = (sites["hidden"] / "chapter.html").read_text(encoding="utf-8")
    assert EXERCISE in page and "Hint: multiply by two." in page and CHECK in page
    line = "leaves out the solution until 15 December 2026."
    assert page.count(line) == 1 and 'class="tx-solution-withheld"' in page
    assert EXERCISE in (sites["hidden"] / "searchindex.js").read_text(encoding="utf-8")
    # The notebook a reader downloads: the same cells, the solution's three replaced by the line.
    nb = nbformat.read(sites["hidden"] / "_sources" / "chapter.ipynb", as_version=4)
    sources = [cell.source for cell in nb.cells]
    assert len(sources) == 5 and line in sources[3] and CHECK in sources[4] and EXERCISE in sources[1]


def test_a_graded_site_names_book_source_zip_without_linking_to_it(sites):
    hidden = (sites["hidden"] / "index.html").read_text(encoding="utf-8")
    shown = (sites["shown"] / "index.html").read_text(encoding="utf-8")
    assert 'href="book-source.zip"' not in hidden and "book-source.zip</span> (not on this edition" in hidden
    assert 'href="book-source.zip"' in shown and "not on this edition" not in shown


def test_on_the_release_date_the_rebuilt_site_shows_the_solution(sites):
    """The second build reads every page again (the decision changed), so the solution is back everywhere."""
    shown = sites["shown"]
    page = (shown / "chapter.html").read_text(encoding="utf-8")
    assert all(marker in page for marker in (PROSE, CODE, OUTPUT)) and "leaves out the solution" not in page
    assert PROSE in (shown / "searchindex.js").read_text(encoding="utf-8")
    assert CODE in (shown / "_sources" / "chapter.ipynb").read_text(encoding="utf-8")
    assert PNG in [p.read_bytes() for p in (shown / "_images").iterdir()]


@pytest.fixture(scope="module")
def graded_site():
    spec = importlib.util.spec_from_file_location("graded_site_under_test", EXT / "graded_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("graded, after, today, hidden", [
    ("", "", date(2026, 12, 14), False),  # the full site
    ("0", "", date(2026, 12, 14), False),
    ("1", "", date(2030, 1, 1), True),  # graded: whatever the date
    ("", RELEASE, date(2026, 12, 14), True),  # the day before
    ("", RELEASE, date(2026, 12, 15), False),  # on the date
    ("", RELEASE, date(2027, 1, 2), False),  # after it
])
def test_the_release_rule(graded_site, graded, after, today, hidden):
    assert graded_site.solutions_hidden(graded, after, today) is hidden


@pytest.mark.parametrize("after", ["15/12/2026", "2026-12-32", "20261215", "2026-2-3", "next week"])
def test_a_malformed_date_says_the_format(graded_site, after):
    with pytest.raises(ValueError, match=r"SOLUTIONS_AFTER is a date written YYYY-MM-DD, such as 2026-12-15"):
        graded_site.solutions_hidden("", after, date(2026, 1, 1))
    config = SimpleNamespace(graded_site="", graded_site_solutions_after=after, graded_site_date="")
    with pytest.raises(Exception, match="YYYY-MM-DD") as error:
        graded_site.decide(None, config)
    assert type(error.value).__name__ == "ConfigError"


def test_graded_takes_one_or_nothing_and_no_date(graded_site):
    with pytest.raises(ValueError, match="GRADED is 1"):
        graded_site.solutions_hidden("yes", "", date(2026, 1, 1))
    with pytest.raises(ValueError, match="give SOLUTIONS_AFTER alone"):
        graded_site.solutions_hidden("1", RELEASE, date(2026, 1, 1))


def test_markdown_sources_lose_their_solutions(graded_site):
    text = ("Before.\n\n:::{solution-start} ex-a\n:::\nsecret one\n\n````{code-cell}\nsecret_two()\n````\n\n"
            "```{solution-end}\n```\nAfter.\n\n```{solution} ex-b\nsecret three\n```\n\nThe end: `{solution-start}`.\n")
    stripped, count = graded_site.strip_markdown(text, "NOTE")
    assert count == 2 and "secret" not in stripped
    assert stripped == "Before.\n\n*NOTE*\n\nAfter.\n\n*NOTE*\n\n\nThe end: `{solution-start}`.\n"
    with pytest.raises(Exception, match="without its solution-end"):
        graded_site.strip_markdown("```{solution-start} ex-a\n```\nsecret\n", "NOTE")


def test_the_makefile_asks_the_same_question(tmp_path):
    """`python _ext/graded_site.py` prints the decision for the zip step, or stops on a malformed date."""
    def run(**settings):
        env = {**os.environ, "TX_GRADED": "", "TX_BUILD_DATE": "2026-12-14", **settings}
        return subprocess.run([sys.executable, str(EXT / "graded_site.py")], env=env, capture_output=True, text=True)
    hidden = run(TX_SOLUTIONS_AFTER=RELEASE)
    assert hidden.returncode == 0 and hidden.stdout == "hidden\n"
    wrong = run(TX_SOLUTIONS_AFTER="15.12.2026")
    assert wrong.returncode != 0 and wrong.stdout == "" and "YYYY-MM-DD" in wrong.stderr
