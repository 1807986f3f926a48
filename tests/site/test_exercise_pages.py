"""The exercises on the built website: the task, the stub, the check's code, and no verdict.

On the website every check runs under its solution, so its output would read "Correct: ..."
right under the unsolved stub and give the answer away; the check cells' ``remove-output``
tag hides it. These tests read the built pages (_build/html) and the learner edition's zip;
the last one clicks each solution's bar in headless Chromium.
"""

from __future__ import annotations

import re
import zipfile

import pytest

from sitekit import HTML, toc_pages

CHAPTERS = [p for p in toc_pages() if p.startswith("chapters/")]


def page_text(docname: str) -> str:
    path = HTML / f"{docname}.html"
    if not path.is_file():
        pytest.fail(f"no {path}: run `make book` first.")
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("docname", CHAPTERS)
def test_checks_are_shown_but_not_their_verdict(docname):
    html = page_text(docname)
    calls = re.findall(r"check_\w+", re.sub(r"<[^>]+>", "", html))
    assert calls, "the page shows no check cell"
    assert "Correct:" not in html, "a check's verdict is on the page, under the unsolved stub"


@pytest.mark.parametrize("docname", CHAPTERS)
def test_equations_are_numbered_as_the_learner_edition_numbers_them(docname):
    # The learner edition writes {eq} references as numbers of its own making: they must be the site's.
    from tx.exercises.learner import CHAPTERS as SOURCES, equation_numbers

    from tx.exercises.learner_notebook import chapter_label

    # (10.2) in a chapter, (A1.1) in an appendix
    site = re.findall(r'class="eqno">\(([A-Z]?\d+(?:\.\d+)+)\)', page_text(docname))
    label = chapter_label(docname.split("/")[-1])
    ours = [n for n in equation_numbers(SOURCES).values() if n.split(".")[0] == label]
    assert site == ours
    if not _numbered(docname):  # the appendix has its one equation, numbered A1.1 on both
        assert ours, f"{docname}: no numbered equation"


def _numbered(docname: str) -> bool:
    return docname.split("/")[-1][:2].isdigit()


def test_the_zip_holds_a_readme_with_the_set_up():
    path = HTML / "learner-edition.zip"
    if not path.is_file():
        pytest.fail(f"no {path}: run `make book` first.")
    with zipfile.ZipFile(path) as archive:
        readmes = [n for n in archive.namelist() if n.endswith("/README.md")]
        assert len(readmes) == 1
        readme = archive.read(readmes[0]).decode()
    assert "install.py" in readme and "jupyter lab" in readme  # tests/site/test_learner_zip.py runs them


@pytest.mark.parametrize("docname", CHAPTERS)
def test_exercises_are_numbered_as_the_learner_edition_numbers_them(docname):
    import json

    from tx.exercises.learner import learner_files

    name = docname.split("/")[-1] + ".ipynb"
    cells = json.loads(learner_files()[name])["cells"]
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", page_text(docname)))
    if not _numbered(docname):  # an appendix: A1.1, A1.2, ... on the site and in the learner edition alike
        assert not re.search(r"Exercise \d+ \(", text), "an appendix's exercise numbered as chapter 1's"
    ours = [m.group(1) for c in cells if c["cell_type"] == "markdown"
            for m in re.finditer(r"^### (Exercise (?:[A-Z]\d+|\d+)\.\d+) \(", c["source"], re.M)]
    site = list(dict.fromkeys(re.findall(r"(Exercise (?:[A-Z]\d+|\d+)\.\d+) \(", text)))
    assert ours and site == ours


@pytest.mark.parametrize("docname", CHAPTERS)
def test_the_exercises_offer_the_learner_edition_and_the_run_all_time(docname):
    # bench/run_all_times.json is the measurement; the page must say that chapter's figure.
    from urllib.parse import urljoin

    from tx.exercises.learner import duration, run_all_sentence, run_all_times, slow_note

    html = page_text(docname)
    section = re.search(r'<section id="exercises">.*', html, re.S)
    assert section, "the page has no Exercises section"
    note = re.search(r'<p class="tx-learner-edition">(.*?)</p>', section.group(0), re.S)
    assert note, "no learner-edition note under the Exercises heading"
    (href,) = re.findall(r'href="([^"]+)"', note.group(1))
    target = urljoin(f"file://{HTML}/{docname}.html", href)
    assert target == f"file://{HTML}/learner-edition.zip" and (HTML / "learner-edition.zip").is_file()
    name = docname.split("/")[-1] + ".ipynb"
    times = run_all_times()
    entry = times["chapters"][name]
    seconds = entry["run_all_s"] if entry["run_all_s"] is not None else entry["at_least_s"]  # a lower bound: timed out
    slow = slow_note(name, times, what="This chapter's notebook")
    before_exercises = html[: section.start()]
    assert (slow is not None) == ("tx-run-time" in before_exercises)
    # the time once a page: under the title of a slow chapter, under Exercises for the others
    where = before_exercises if slow is not None else note.group(1)
    assert duration(seconds) in where and html.count(f"took {duration(seconds)}") == 1
    if slow is not None:
        assert slow in before_exercises and "took" not in note.group(1)
    else:
        assert run_all_sentence(name, times, subject="Run All of this chapter's notebook") in note.group(1)


# A solution is shown when a part of it past its title bar is drawn: a box of some size, not
# hidden (what Playwright's is_visible asks of an element).
SHOWN_JS = ("s => [...s.querySelectorAll(':scope > :not(.admonition-title)')].some(b => {"
            " const r = b.getBoundingClientRect();"
            " return r.width > 0 && r.height > 0 && getComputedStyle(b).visibility !== 'hidden'; })")


@pytest.mark.parametrize("width", ["visits", "phone_visits"], ids=["desktop", "phone"])
@pytest.mark.parametrize("docname", CHAPTERS)
def test_a_click_on_a_solutions_title_opens_that_solution(request, docname, width):
    # Issue 24: a solution's bar says "Solution to Exercise N.N", and "Exercise N.N" was
    # sphinx-exercise's link to the exercise. A click on it jumped there, threw
    # "ReferenceError: button is not defined" in togglebutton.js on a first click, and on a
    # later one toggled the solution used before. A reader's click anywhere on the bar must
    # open that solution, and only it, and a second click close it.
    # The page every test shares at this width (conftest.py): each solution opened is closed
    # again, as the page was.
    visit = request.getfixturevalue(width)(docname)
    page = visit.page
    solutions = page.locator("article .solution.dropdown")
    count = solutions.count()
    assert count, "a chapter without solutions (each chapter ends with exercises)"

    def shown() -> list[bool]:
        # One call for every solution, in the page: a round trip to ask each part of each
        # solution cost Chromium 0.1 to 0.25 CPU-s a click (a forced layout for each question)
        return solutions.evaluate_all(f"els => els.map({SHOWN_JS})")

    assert not any(shown()), "a solution is open before any click"
    # At 1280 px every solution; at 390 px the one whose title is longest, the one most wrapped:
    # the click's handling is the same script for every solution, and what a phone changes is
    # where the title's text lies (each solution clicked twice cost about 0.8 CPU-s at each width)
    titles = solutions.evaluate_all("els => els.map(s => s.querySelector('.admonition-title').innerText.length)")
    which = range(count) if width == "visits" else [max(range(count), key=titles.__getitem__)]
    for i in which:
        title = solutions.nth(i).locator(":scope > .admonition-title")
        text = title.locator(":scope > a").first  # "Exercise N.N (...)", sphinx-exercise's link
        assert text.count(), f"solution {i + 1}: no exercise named in its title"
        name = " ".join(title.inner_text().split())
        for click, opened in (("first", True), ("second", False)):
            text.scroll_into_view_if_needed()
            # Where a reader clicks: the middle of the text's first line (on a phone it wraps).
            x, y = text.evaluate(
                "e => { const r = e.getClientRects()[0]; return [r.x + r.width / 2, r.y + r.height / 2]; }"
            )
            page.mouse.click(x, y)
            # Until the solution clicked is shown (or hidden), or 5 s: the assertions below
            # say what happened instead
            solutions.nth(i).evaluate(
                f"(s, opened) => new Promise(done => {{ const start = Date.now(); (function poll() {{"
                f" if (({SHOWN_JS})(s) === opened || Date.now() - start > 5000) done();"
                f" else requestAnimationFrame(poll); }})(); }})", opened)
            assert page.url == visit.url, f"the {click} click on {name!r} went to {page.url}"
            assert not visit.page_errors, f"the {click} click on {name!r}: {visit.page_errors}"
            expected = [opened and n == i for n in range(count)]
            now = shown()
            assert now == expected, f"after the {click} click on {name!r} the solutions shown are {now}, not {expected}"
    assert not visit.problems(), "\n".join(visit.problems())
