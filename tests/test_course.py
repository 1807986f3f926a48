"""The teachers' course (tx.exercises.course): nbgrader notebooks from the chapters, graded by nbgrader.

The slow test, ``test_nbgrader_grades_the_solutions_full_and_the_release_zero``, runs
nbgrader's own ``generate_assignment`` and ``autograde`` on every chapter (in two halves, one
per test worker) and reads the scores from nbgrader's gradebook.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import math
import re
import shutil
import sys
from pathlib import Path

import pytest

from tx.exercises import CheckFailed
from tx.exercises.grading import fingerprint
from tx.exercises.course_check import RUNAWAY, STUDENTS, _run_nbgrader, check_course
from tx.exercises.course import (
    BEGIN, END, MANIFEST, POINTS, answer_source, asks_in_words, assignment_id, course_files, main, write_course,
)

from notebook_tools import ROOT, load, source, tags, toc_chapters

CHAPTERS = ROOT / "chapters"
ASSIGNMENTS = sorted(assignment_id(p) for p in toc_chapters())


@pytest.fixture(scope="module")
def course() -> dict[str, bytes]:
    return course_files(CHAPTERS)


def notebooks(files: dict[str, bytes]) -> dict[str, dict]:
    return {name: json.loads(data) for name, data in files.items() if name.endswith(".ipynb")}


def nbgrader(cell: dict) -> dict:
    return cell["metadata"]["nbgrader"]


def exercise_cells(path: Path) -> list[dict]:
    return [c for c in load(path)["cells"] if c["cell_type"] == "markdown"
            and re.search(r"^[`:]{3,}\{exercise\}", source(c), re.M)]


def exercise_labels(path: Path) -> list[str]:
    return re.findall(r"^:label:[ \t]*(ex-\S+)", "\n".join(
        source(c) for c in load(path)["cells"] if c["cell_type"] == "markdown"
        and re.search(r"^[`:]{3,}\{exercise\}", source(c), re.M)), re.M)


def test_every_chapter_is_an_assignment_of_its_exercises(course):
    books = {assignment_id(p): p for p in toc_chapters()}
    by_assignment = {name.split("/")[1]: nb for name, nb in notebooks(course).items()}
    assert sorted(by_assignment) == ASSIGNMENTS
    for a, nb in by_assignment.items():
        chapter = load(books[a])["cells"]
        labels = exercise_labels(books[a])
        answers = [c for c in nb["cells"] if nbgrader(c)["solution"] and c["cell_type"] == "code"]
        checks = [c for c in nb["cells"] if nbgrader(c)["grade"] and c["cell_type"] == "code"]
        assert [nbgrader(c)["grade_id"] for c in answers] == [f"{label}-answer" for label in labels], a
        assert [nbgrader(c)["grade_id"] for c in checks] == [f"{label}-check" for label in labels], a
        # An exercise that asks a question in words has a manually graded answer in words, after its check.
        asking = [label for label, cell in zip(labels, exercise_cells(books[a])) if asks_in_words(source(cell))]
        written = [c for c in nb["cells"] if nbgrader(c)["solution"] and c["cell_type"] == "markdown"]
        assert [nbgrader(c)["grade_id"] for c in written] == [f"{label}-words" for label in asking], a
        assert all(nbgrader(c)["grade"] and nbgrader(c)["points"] == POINTS for c in written), a
        ids = [nbgrader(c)["grade_id"] for c in nb["cells"]]
        assert all(ids.index(f"{label}-words") == ids.index(f"{label}-check") + 2 for label in asking), a
        # The checks are the book's, calling the book's checkers, worth POINTS each and read-only; a checker
        # that draws its inputs is called again in nbgrader's hidden tests, on the course's own inputs.
        books_checks = [source(c) for c in chapter if "check" in tags(c)]
        assert [source(c).split("\n### BEGIN HIDDEN TESTS")[0] for c in checks] == books_checks, a
        for cell, book in zip(checks, books_checks):
            hidden = re.findall(r"^(tx\.exercises\.\w+\.check_\w+)\((\w+), variant=\"course\"\)$", source(cell), re.M)
            drawn = [(name, arg) for name, arg in re.findall(r"^(tx\.exercises\.\w+\.check_\w+)\((\w+)\)$", book, re.M)
                     if getattr(importlib.import_module(name.rsplit(".", 1)[0]), name.rsplit(".", 1)[1]).drawn]
            assert hidden == drawn, (a, source(cell))
            assert ("### BEGIN HIDDEN TESTS" in source(cell)) == bool(drawn), a
        assert all(nbgrader(c)["points"] == POINTS and nbgrader(c)["locked"] for c in checks), a
        # An answer holds its stub's first lines, then the solution between the delimiters.
        stubs = [source(c) for c in chapter if "stub" in tags(c)]
        for answer, stub in zip(answers, stubs):
            text = source(answer)
            assert text.startswith(stub.rstrip().rsplit("\n", 1)[0] + "\n"), (a, text)
            assert text.count(BEGIN) == text.count(END) == 1 and text.index(BEGIN) < text.index(END), (a, text)
            assert not nbgrader(answer)["locked"] and not nbgrader(answer)["grade"]
        # Everything else read-only; every grade id unique, as nbgrader requires.
        others = [c for c in nb["cells"] if not nbgrader(c)["solution"]]
        assert all(nbgrader(c)["locked"] for c in others), a
        ids = [nbgrader(c)["grade_id"] for c in nb["cells"]]
        assert len(ids) == len(set(ids)), a
        # Every code cell parses, the course's own set-up cell included.
        from tx.exercises.sandbox import python_code

        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                compile(python_code(source(cell)), f"{a}: {nbgrader(cell)['grade_id']}", "exec")
        # No solution of the book's is in an assignment outside a solution region.
        outside = "\n".join(source(c) for c in others)
        assert "solution-start" not in outside and BEGIN not in outside, a


def test_an_assignment_holds_the_exercises_and_what_they_use_not_the_chapter(course):
    nb = notebooks(course)["source/ch09/09_final_linear_softmax.ipynb"]
    code = [source(c) for c in nb["cells"] if c["cell_type"] == "code"]
    chapter = [source(c) for c in load(CHAPTERS / "09_final_linear_softmax.ipynb")["cells"]
               if c["cell_type"] == "code"]
    assert code[1] == chapter[0], "the chapter's set-up cell (its imports and seed) comes first"
    assert len(code) < len(chapter) / 2, "an assignment is the exercises, not the whole chapter"
    assert nb["cells"][0]["source"].startswith("# Exercises of chapter 9: ")


def test_an_answer_cell_is_the_stub_with_the_solution_between_the_delimiters():
    stub = "def f(x):\n    # x [n] -> [n]\n    raise NotImplementedError"
    solution = "def f(x):\n    # x [n] -> [n]\n    y = x + 1\n\n    return y\n\n\nprint(f(1))  # a demo\n"
    assert answer_source(stub, solution) == (
        f"def f(x):\n    # x [n] -> [n]\n    {BEGIN}\n    y = x + 1\n\n    return y\n    {END}")
    # a stub at the top level: the whole rest of the solution is the answer
    assert answer_source("raise NotImplementedError", "x = 1\ny = 2") == f"{BEGIN}\nx = 1\ny = 2\n{END}"
    with pytest.raises(ValueError, match="must begin with its stub"):
        answer_source(stub, "def f(x):\n    # another comment\n    return x")
    with pytest.raises(ValueError, match="must end in `raise NotImplementedError`"):
        answer_source("def f(x):\n    return x", "def f(x):\n    return x")


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as exit_:
            code = exit_.code or 0
    return code, out.getvalue(), err.getvalue()


def test_writing_again_keeps_the_teachers_edits_and_says_so(tmp_path):
    course = tmp_path / "course"
    assert run([str(course), "--only", "ch03", "ch05"])[0] == 0
    config = course / "nbgrader_config.py"
    config.write_text(config.read_text() + 'c.CourseDirectory.course_id = "my-class"\n')
    notebook = course / "source/ch03/03_self_attention_vectors.ipynb"
    nb = json.loads(notebook.read_text())
    check = next(i for i, c in enumerate(nb["cells"]) if nbgrader(c)["grade"])
    nb["cells"][check]["source"] += "\nassert True  # a hidden test of mine"
    notebook.write_text(json.dumps(nb))
    # A points edit alone (nbgrader's metadata, the source untouched), in another assignment.
    other = course / "source/ch05/05_multi_head_attention.ipynb"
    nb5 = json.loads(other.read_text())
    graded = next(i for i, c in enumerate(nb5["cells"]) if nbgrader(c)["grade"])
    nb5["cells"][graded]["metadata"]["nbgrader"]["points"] = 2
    other.write_text(json.dumps(nb5))
    (course / "README.md").unlink()
    mine = {p: p.read_bytes() for p in (config, notebook, other)}
    code, out, err = run([str(course), "--only", "ch03", "ch05"])
    assert code == 0
    assert mine == {p: p.read_bytes() for p in mine}, "a teacher's edit was overwritten"
    assert "kept nbgrader_config.py: you changed it" in err
    assert f"kept source/ch03/03_self_attention_vectors.ipynb: you changed cell {check + 1}" in err
    assert f"kept source/ch05/05_multi_head_attention.ipynb: you changed cell {graded + 1}" in err
    assert (course / "README.md").exists() and "wrote 1 files" in out
    assert (course / MANIFEST).exists()
    # --force replaces them
    assert run([str(course), "--only", "ch03", "ch05", "--force"])[0] == 0
    assert config.read_bytes() != mine[config]


def test_the_course_s_variant_is_drawn_once_kept_and_never_in_a_release(tmp_path):
    course = tmp_path / "course"
    assert run([str(course), "--only", "ch03"])[0] == 0

    def variant() -> int:
        return int(re.search(r"^c\.GradeInIsolation\.variant = (\d+)$", (course / "nbgrader_config.py").read_text(),
                             re.M).group(1))

    first = variant()
    assert first >= 1
    assert run([str(course), "--only", "ch03"])[0] == 0 and variant() == first, "a re-run drew another"
    other = tmp_path / "other"
    assert run([str(other), "--only", "ch03", "--variant", "12345"])[0] == 0
    assert "c.GradeInIsolation.variant = 12345" in (other / "nbgrader_config.py").read_text()
    code, _, err = run([str(tmp_path / "bad"), "--variant", "0"])
    assert code == 2 and "--variant must be a whole number of at least 1" in err
    # A config the teacher changed is kept, but the lines the course owns follow a re-run: the variant
    # when one is given, and the tx it was written for.
    config = course / "nbgrader_config.py"
    config.write_text(config.read_text().replace('tx_fingerprint = "', 'tx_fingerprint = "old-')
                      + 'c.LateSubmissionPlugin.penalty_method = "zero"\n')
    code, _, err = run([str(course), "--only", "ch03", "--variant", "777"])
    assert code == 0 and variant() == 777 and 'penalty_method = "zero"' in config.read_text()
    assert f'tx_fingerprint = "{fingerprint()}"' in config.read_text()
    assert "kept nbgrader_config.py: you changed it; its tx_fingerprint and variant line updated" in err


def test_an_answer_in_words_holds_the_book_s_solution_for_the_teacher_only(course):
    nb = notebooks(course)["source/ch03/03_self_attention_vectors.ipynb"]
    words = next(c for c in nb["cells"] if nbgrader(c)["grade_id"] == "ex-ch03-score-words")
    assert "the scaled score is $1.5$" in source(words)  # the book's solution, in words


def test_a_chapter_without_exercises_is_skipped_with_a_message(tmp_path):
    chapters = tmp_path / "chapters"
    chapters.mkdir()
    shutil.copy(CHAPTERS / "02_tensors.ipynb", chapters)
    nb = load(CHAPTERS / "02_tensors.ipynb")
    nb["cells"] = [c for c in nb["cells"] if not {"stub", "solution", "check"} & set(tags(c))]
    (chapters / "15_no_exercises.ipynb").write_text(json.dumps(nb))
    code, out, _ = run([str(tmp_path / "course"), "--chapters", str(chapters)])
    assert code == 0
    assert "skipped 15_no_exercises.ipynb: it has no exercises" in out
    assert [p.name for p in (tmp_path / "course/source").iterdir()] == ["ch02"]


@pytest.mark.parametrize("argv, message", [
    (["--only", "ch99"], "no chapter for assignment ch99"),
    (["--chapters", "{tmp}/empty"], "no notebooks in"),
])
def test_bad_arguments_say_what_is_wrong(tmp_path, argv, message):
    (tmp_path / "empty").mkdir()
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code, _, err = run([str(tmp_path / "course")] + argv)
    assert code == 2 and message in err
    assert not (tmp_path / "course").exists(), "nothing is written after a bad argument"


def test_a_file_as_outdir_or_the_chapters_folder_is_refused(tmp_path):
    (tmp_path / "file").write_text("mine")
    code, _, err = run([str(tmp_path / "file")])
    assert code == 2 and "is a file, not a folder" in err and (tmp_path / "file").read_text() == "mine"
    with pytest.raises(ValueError, match="inside the chapters folder"):
        write_course(CHAPTERS / "course", CHAPTERS)


def hints_in_process(notebook: dict) -> dict[str, str]:
    """What each check says, run here on the unsolved notebook's answers: the learner edition's hints."""
    namespace: dict = {}
    said = {}
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                exec(source(cell), namespace)
            except CheckFailed as error:
                said[nbgrader(cell)["grade_id"]] = f"Not yet: {error}"
    return said


def test_nbgrader_grades_a_class_as_a_teacher_would(tmp_path):
    """Every student of the synthetic class (course_check.STUDENTS, and the runaway ones on one
    assignment) scores, exercise by exercise, what a teacher gives, on every assignment. One
    course for all of them, not two halves side by side: each nbgrader command and each grading
    master imports its packages once (about 45 CPU-s a half, bench/README.md)."""
    write_course(tmp_path / "course", CHAPTERS)
    scores = check_course(tmp_path / "course", scratch=tmp_path / "grading", also=submit_overflowing)
    assert sorted(scores) == ASSIGNMENTS
    books = {assignment_id(p): p for p in toc_chapters()}
    assert sum(set(RUNAWAY) <= set(s.students) for s in scores.values()) == 1
    for a, s in scores.items():
        checks = {f"{label}-check" for label in exercise_labels(books[a])}
        words = {f"{label}-words" for label, cell in zip(exercise_labels(books[a]), exercise_cells(books[a]))
                 if asks_in_words(source(cell))}
        assert set(s.max_points) == checks | words and all(p == POINTS for p in s.max_points.values()), a
        assert s.by_hand == words and set(s.autograded) == checks, a
        assert set(STUDENTS) <= set(s.students), a
        assert s.full_marks, f"{a}: the instructor's solutions lost points: {s.solved}"
        assert s.unsolved == dict.fromkeys(checks | words, 0.0), f"{a}: the unsolved release scored: {s.unsolved}"
        assert s.wrong == [], f"{a}: (student, exercise, points given, points a teacher gives): {s.wrong}"
        # The release a student gets: nbgrader's stub where each solution was, nothing of it left.
        release = next((tmp_path / "grading/release" / a).glob("*.ipynb"))
        released = json.loads(release.read_text())
        for cell in released["cells"]:
            if nbgrader(cell)["solution"] and cell["cell_type"] == "code":
                assert "raise NotImplementedError()" in source(cell) and BEGIN not in source(cell), a
            assert "HIDDEN TESTS" not in source(cell) and "variant" not in source(cell), a
            if nbgrader(cell)["solution"] and cell["cell_type"] == "markdown":  # an answer in words, empty
                assert source(cell).strip() == "YOUR ANSWER HERE", a
        # What nbgrader's feedback shows under each check is the hint the learner edition gives.
        assert s.hints == hints_in_process(released), a
    assert_partial_credit_through_nbgrader(tmp_path / "grading")
    # nbgrader's feedback for the students with hints: every hint fits its box at 1280 px.
    _run_nbgrader(["generate_feedback", "*", "--student=tx-[uwo]*", "--force"], tmp_path / "grading")
    pages = sorted((tmp_path / "grading/feedback").glob("tx-*/*/*.html"))
    # unsolved, unparseable and wrong, each assignment; the overflowing softmax of ch03
    assert len(pages) == 3 * len(ASSIGNMENTS) + 1, pages
    assert_hints_fit(pages)


def submit_overflowing(work: Path) -> None:
    """A student whose softmax overflows (ch03), submitted beside the class (check_course's ``also``)."""
    release = next((work / "release/ch03").glob("*.ipynb"))
    nb = json.loads(release.read_text())
    stub = "# YOUR CODE HERE\n    raise NotImplementedError()"
    answers = [c for c in nb["cells"] if nbgrader(c)["solution"] and "def softmax(" in source(c)]
    assert len(answers) == 1 and stub in source(answers[0])
    answers[0]["source"] = source(answers[0]).replace(stub, "e = scores.exp()\n    return e / e.sum()")
    (work / "submitted/tx-overflowing/ch03").mkdir(parents=True)
    (work / "submitted/tx-overflowing/ch03" / release.name).write_text(json.dumps(nb))


def assert_partial_credit_through_nbgrader(work: Path) -> None:
    """The overflowing softmax passes one of its check's four parts (two on the book's inputs, two on
    the course's): nbgrader records a quarter of the point and the feedback says why."""
    from nbgrader.api import Gradebook

    release = next((work / "release/ch03").glob("*.ipynb"))
    with Gradebook(f"sqlite:///{work / 'gradebook.db'}") as gradebook:
        graded = gradebook.find_submission_notebook(release.stem, "ch03", "tx-overflowing")
        scores = {g.name: g.score for g in graded.grades if g.name.endswith("-check")}
    assert scores == {"ex-ch03-score-check": 0, "ex-ch03-softmax-check": POINTS / 4, "ex-ch03-one-word-check": 0}
    autograded = json.loads(next((work / "autograded/tx-overflowing/ch03").glob("*.ipynb")).read_text())
    said = " ".join(" ".join("".join(o.get("text", "")) for c in autograded["cells"]
                             for o in c.get("outputs", [])).split())
    assert "Partial credit: 1 of 4 parts passed (ordinary scores)" in said


def assert_hints_fit(pages: list[Path]) -> None:
    """In headless Chromium at 1280 px, no output box of a feedback page is wider than the page shows,
    and the page asks nothing of the network: its math is drawn as MathML, with no MathJax."""
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT / "tests/site"))
    from sitekit import CHROMIUM_ARGS, chromium_path

    too_wide, hints, fetched, formulas = [], 0, [], 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("request", lambda r: fetched.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
        for html in pages:
            page.goto(html.as_uri())
            boxes = page.eval_on_selector_all(
                "pre", "els => els.map(e => [e.scrollWidth, e.clientWidth, e.textContent.slice(0, 60)])")
            hints += sum("Not yet" in text for _, _, text in boxes)
            too_wide += [(html.name, text) for wide, shown, text in boxes if wide > shown + 1]
            # every formula of the text is a MathML element the browser laid out, none left as TeX
            sizes = page.eval_on_selector_all(".text_cell_render math", "els => els.map(e => e.getBoundingClientRect().width)")
            formulas += len(sizes)
            assert all(width > 0 for width in sizes), html.name
            text = page.eval_on_selector_all(".text_cell_render", "els => els.map(e => e.innerText).join(' ')")
            assert not re.search(r"\$[^$\s]+\$|\\frac|\\sqrt", text), (html.name, text[:300])
        browser.close()
    assert hints >= len(pages), "the feedback pages show fewer hints than there are notebooks"
    assert not too_wide, f"hints wider than their box at 1280 px: {too_wide}"
    assert formulas >= len(pages), "the feedback pages show fewer formulas than there are notebooks"
    assert not fetched, f"a feedback page asks the network for {fetched[:3]}"


def test_the_teachers_page_quotes_what_the_grader_gives_a_wrong_softmax():
    """teachers.md shows what a student reads for a softmax that overflows, and the share of the point it
    earns: it must be what the course's grader writes for that answer, hidden test included."""
    from tx.exercises.course_cells import with_hidden_test
    from tx.exercises.grading import Limits, grade_cells

    page = (ROOT / "teachers.md").read_text(encoding="utf-8")
    quoted = re.search(r"```text\n(Not yet: .*?)\n```", page, re.S).group(1)
    answer = "def softmax(scores):\n    return scores.exp() / scores.exp().sum()"  # no largest score subtracted
    cells = [{"index": 0, "role": "given", "source": "import torch\nimport tx"},
             {"index": 1, "role": "answer", "source": answer},
             {"index": 2, "role": "check", "source": with_hidden_test("tx.exercises.ch03.check_softmax(softmax)"),
              "points": POINTS}]
    outputs = grade_cells(cells, Limits(timeout=120, memory_mb=512))[2]
    shown = "".join(o.get("text", "") for o in outputs if o["output_type"] == "stream")
    assert " ".join(quoted.split()) == " ".join(shown.split())
    score = next(o["data"]["text/plain"] for o in outputs if o["output_type"] == "execute_result")
    assert f"{float(score):g} of the point" in " ".join(page.split())


def test_the_time_limit_covers_the_slowest_measured_solution():
    """The course's per-exercise timeout is derived from bench/grading_cost.json: the constant it is
    made from must not be below the slowest solution measured there."""
    from tx.exercises import course

    measured = json.loads((ROOT / "bench/grading_cost.json").read_text())["solved_s_max"]
    assert course.SLOWEST_SOLUTION >= measured
    assert f"c.GradeInIsolation.timeout = {math.ceil(course.SLOWEST_SOLUTION * course.TIMEOUT_FACTOR)}" in \
        course.course_files(only=["ch03"])["nbgrader_config.py"].decode()


def test_the_course_writes_its_environment_from_the_book_s_locks(course):
    """requirements.txt: every package of the learner edition's lock and nbgrader's, each block (pin and
    hashes) as a lock has it; the Dockerfile installs it, then tx from the learner edition's wheel."""
    from tx.exercises.course_environment import lock_blocks

    wanted = course["requirements.txt"].decode()
    written = lock_blocks(wanted)
    learner = lock_blocks((ROOT / "requirements-learner.lock").read_text())
    book = lock_blocks((ROOT / "requirements.lock").read_text())
    assert set(learner) <= set(written) and {"nbgrader", "alembic", "sqlalchemy"} <= set(written)
    for name, (block, _) in written.items():
        pin = block.split("\n")[0].split(" ")[0]
        assert pin == book[name][0].split("\n")[0].split(" ")[0], name  # the version the book was tested with
        assert "--hash=sha256:" in block, name
    docker = course["Dockerfile"].decode()
    assert "--require-hashes --no-deps -r /tmp/requirements.txt" in docker and "tx-*.whl" in docker
    assert "FROM python:3.11" in docker
