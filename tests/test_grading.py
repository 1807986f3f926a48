"""Grading in isolation (tx.exercises.grading): the student's code runs in a sandbox process, the checks in
the grader's, and nothing the student's code does reaches the verdict.

Each test grades one small notebook (given cells, answer cells, check cells) with ``grade_cells``,
as the course's nbgrader step does; the given cells are the same in every test, so one grader
process serves them all. The whole course, through nbgrader, is tests/test_course.py's.
"""

from __future__ import annotations

import io
import os
import pickle
import tempfile

import pytest
import torch

from tx.exercises.grading import Limits, fingerprint, grade_cells, reaching
from tx.exercises.wire import data as _data

GIVEN = "import torch\nimport tx\nimport tx.exercises.ch12\nfrom tx.subwords import SubwordVocab"
CHECK = "tx.exercises.ch12.check_count_pairs(count_pairs)"
RIGHT = '''
def count_pairs(words):
    counts = {}
    for pieces, n in words.items():
        for pair in zip(pieces, pieces[1:]):
            counts[pair] = counts.get(pair, 0) + n
    return counts
'''
# Room that no load reaches, for the tests of what is graded; the runaway test has its own short limit.
LIMITS = Limits(timeout=60, memory_mb=256)
RUNAWAY = Limits(timeout=3, memory_mb=256)


def grade(*answers: str, checks: tuple[str, ...] = (CHECK,), points: float | None = None,
          limits: Limits = LIMITS) -> list[list[dict]]:
    """The outputs of each check cell, the answers in the cells before them (one check per answer, or all
    the checks after all the answers); each check worth ``points``."""
    cells = [{"index": 0, "role": "given", "source": GIVEN}]
    for answer in answers:
        cells.append({"index": len(cells), "role": "answer", "source": answer})
    for check in checks:
        cells.append({"index": len(cells), "role": "check", "source": check, "points": points})
    outputs = grade_cells(cells, limits)
    return [outputs[c["index"]] for c in cells if c["role"] == "check"]


def verdict(outputs: list[dict]) -> str:
    """"Correct: ..." or "Not yet: ..." (or another error's name and message)."""
    for output in outputs:
        if output["output_type"] == "error":
            return f"{output['ename']}: {output['evalue']}"
    return "".join(o.get("text", "") for o in outputs).strip()


def test_a_right_answer_passes_and_an_unsolved_one_gets_the_notebooks_hint():
    assert verdict(grade(RIGHT)[0]).startswith("Correct:")
    unsolved = verdict(grade("def count_pairs(words):\n    raise NotImplementedError")[0])
    assert unsolved.startswith("Not yet: count_pairs still raises NotImplementedError: replace the")


@pytest.mark.parametrize("gaming", [
    # replace the checker, and print what a pass prints
    "import tx.exercises.ch12\ntx.exercises.ch12.check_count_pairs = lambda fn: print('Correct: yes')\n"
    "print('Correct: count_pairs counts every neighbouring pair.')\ndef count_pairs(words):\n    return {}",
    # make the checks' failures something else
    "import tx.exercises\ntx.exercises.CheckFailed = type('Nothing', (Exception,), {})\n"
    "def count_pairs(words):\n    return {}",
    # IPython's input transformers: every later cell a no-op, in a kernel
    "try:\n    get_ipython().input_transformers_cleanup.append(lambda lines: [])\nexcept NameError:\n    pass\n"
    "def count_pairs(words):\n    return {}",
], ids=["checker-replaced", "failure-replaced", "input-transformer"])
def test_nothing_an_answer_does_reaches_the_verdict(gaming):
    assert verdict(grade(gaming)[0]).startswith("Not yet:")


@pytest.mark.parametrize("alias", [
    "from tx.subwords import count_pairs",
    "import tx\ncount_pairs = tx.subwords.count_pairs",
    "from tx.subwords import count_pairs as _mine\ndef count_pairs(words):\n    return dict(_mine(words))",
    "import tx.subwords\n_keep = [tx.subwords.count_pairs]\ndef count_pairs(words):\n    return _keep[0](words)",
], ids=["import", "alias", "wrapper-prebound", "kept-in-a-list"])
def test_tx_s_own_answer_refuses_under_any_name(alias):
    said = verdict(grade(alias)[0])
    assert said.startswith("Not yet: your function calls tx.subwords.count_pairs"), said


@pytest.mark.parametrize("rebuilding", [
    "import importlib, tx.subwords\ncount_pairs = importlib.reload(tx.subwords).count_pairs",
    # code in a string, run by a module that takes one (the red team's first way in)
    "import timeit\n_g = {}\ntimeit.Timer('import tx.subwords as s; G[0] = s', globals={'G': _g}).timeit(1)\n"
    "count_pairs = _g[0].count_pairs",
    "from tx.exercises.ch12 import _hidden_words\ndef count_pairs(words):\n    return {}",  # a checker's own
    "def count_pairs(words):\n    return torch._C._VariableFunctions.softmax(words, -1)",  # torch's private
    "import torch\ndef count_pairs(words):\n    torch.os.kill(-1, 9)",  # a module that another module holds
], ids=["reload", "string-run-by-timeit", "checker-internals", "torch-private", "torch-os"])
def test_an_answer_that_reaches_for_other_code_is_not_run(rebuilding):
    said = verdict(grade(rebuilding)[0])
    assert said.startswith("Not yet:"), said
    assert reaching(rebuilding) is not None


def test_the_screen_leaves_an_answer_s_own_names_alone():
    assert reaching(RIGHT) is None
    assert reaching("def f(words):\n    for code, n in words.items():\n        types = [code]\n    return types") is None
    assert reaching("x = ().__class__.__bases__") in {"__class__", "__bases__"}


def test_a_sandbox_can_open_no_file(tmp_path):
    target = tmp_path / "written.pt"
    writer = f"def count_pairs(words):\n    torch.save(torch.ones(1), {str(target)!r})\n    return {{}}"
    said = verdict(grade(writer)[0])
    assert said.startswith("Not yet:") and not target.exists(), said


def test_a_sandbox_can_change_no_file_and_signal_no_other_process(tmp_path):
    # What needs no open file: a path (the gradebook through /proc/<grader>/cwd) or a process id. The
    # sandbox itself is called here, without the screen that would not run this cell at all.
    from tx.exercises.sandbox import Sandbox

    target = tmp_path / "gradebook.db"
    target.write_text("the class's grades")
    attack = f"""
import os
def attack():
    said = []
    for name, act in [("unlink", lambda: os.unlink({str(target)!r})),
                      ("rename", lambda: os.rename({str(target)!r}, {str(target)!r} + ".gone")),
                      ("chmod", lambda: os.chmod({str(target)!r}, 0)),
                      ("kill the grader", lambda: os.kill(os.getppid(), 0)),
                      ("kill every process", lambda: os.kill(-1, 0)),
                      ("fork", lambda: os.fork() or os._exit(0))]:
        try:
            act()
            said.append(name + ": done")
        except OSError as error:
            said.append(name + ": " + error.strerror)
    return said
"""
    sandbox = Sandbox({"__builtins__": __builtins__}, [(1, attack)], [], LIMITS)
    try:
        said = sandbox.function("attack")()
    finally:
        sandbox.close()
    # the folder it worked in, which it could not remove itself, is gone with it (a class of 100 left
    # thousands behind before)
    assert sandbox.work.startswith(tempfile.gettempdir()) and not os.path.exists(sandbox.work)
    assert said == [f"{name}: Operation not permitted" for name in
                    ("unlink", "rename", "chmod", "kill the grader", "kill every process", "fork")]
    assert target.read_text() == "the class's grades" and oct(target.stat().st_mode)[-3:] != "000"


def test_runaway_answers_get_a_hint_and_the_others_keep_their_points():
    loop = "def count_pairs(words):\n    while True:\n        pass"
    hog = "def merge_pair(words, pair):\n    hoard = []\n    while True:\n        hoard.append(torch.ones(1 << 20))"
    stuck = "while True:  # the cell never ends\n    pass"
    right_rate = ("def unknown_rate(vocab, sentences):\n    ids = [i for s in sentences for i in "
                  "vocab.encode(s, add_bos=False, add_eos=False)]\n    return ids.count(vocab.unk_id) / len(ids)")
    checks = (CHECK, "tx.exercises.ch12.check_merge_pair(merge_pair)",
              "tx.exercises.ch12.check_unknown_rate(unknown_rate)")
    said = [verdict(o) for o in grade(loop, hog, stuck, right_rate, checks=checks, limits=RUNAWAY)]
    assert "did not finish within 3 s" in said[0], said[0]
    assert "memory" in said[1], said[1]
    assert said[2].startswith("Correct:"), said[2]  # the cell that never ends was left out, not the notebook


def test_what_a_sandbox_sends_is_read_as_data_never_code():
    class Evil:
        def __reduce__(self):
            return (print, ("ran the sender's code",))

    with pytest.raises(pickle.UnpicklingError):
        _data(pickle.dumps(Evil(), protocol=2))
    buffer = io.BytesIO()
    torch.save({("a", "b"): 3, "t": torch.ones(2)}, buffer)
    assert _data(buffer.getvalue())[("a", "b")] == 3


def test_an_answer_returning_an_object_gets_a_hint():
    said = verdict(grade("class Counts(dict):\n    pass\ndef count_pairs(words):\n    return Counts()")[0])
    assert said.startswith("Not yet:"), said


def test_the_fingerprint_is_tx_s_version_and_source():
    release, digest = fingerprint().split("+")
    assert release and len(digest) == 12 and int(digest, 16) >= 0


NAIVE_SOFTMAX = "import torch\ndef softmax(scores):\n    e = torch.exp(scores)\n    return e / e.sum()"


def nbgrader_score(outputs: list[dict], points: float) -> float:
    """The score nbgrader's autograder gives a graded code cell with these outputs."""
    import nbformat
    from nbgrader.utils import determine_grade

    cell = nbformat.v4.new_code_cell("", metadata={"nbgrader": {"grade": True, "solution": False, "points": points,
                                                                "grade_id": "check"}})
    cell.outputs = [nbformat.from_dict(o) for o in outputs]
    return determine_grade(cell)[0]


def test_a_check_that_fails_after_some_parts_earns_their_share_and_shows_the_hint():
    # Exercise 3.2 has two parts, ordinary scores and scores that overflow exp: a softmax that does
    # not subtract the largest score passes the first only. Its hint comes first, then the share.
    check = "tx.exercises.ch03.check_softmax(softmax)"
    outputs = grade(NAIVE_SOFTMAX, checks=(check,), points=2)[0]
    assert nbgrader_score(outputs, 2) == 1
    text = verdict(outputs)
    assert text.startswith("Not yet: your softmax of") and "holds inf or nan" in text
    assert "Partial credit: 1 of 2 parts passed (ordinary scores): 1 of 2 points." in " ".join(text.split())
    # with the hidden test's second call on other inputs, the share is one of four parts
    hidden = check + "\ntx.exercises.ch03.check_softmax(softmax, variant=7)"
    assert nbgrader_score(grade(NAIVE_SOFTMAX, checks=(hidden,), points=2)[0], 2) == 0.5
    # the right answer still earns every point, a wrong one none
    right = "import torch\ndef softmax(s):\n    e = torch.exp(s - s.max())\n    return e / e.sum()"
    assert nbgrader_score(grade(right, checks=(hidden,), points=2)[0], 2) == 2
    assert nbgrader_score(grade("def softmax(s):\n    return s", checks=(hidden,), points=2)[0], 2) == 0


def test_an_answer_fitted_to_the_book_s_inputs_earns_only_the_visible_check():
    # The table of every input the visible check asks and tx's answer to it: what a student could
    # build by running tx's public checker. The hidden test asks the course's own inputs instead.
    import tx.exercises.ch03 as ch03

    table = {}

    def recording(scores):
        weights = (scores - scores.max()).exp() / (scores - scores.max()).exp().sum()
        table[tuple(round(x, 3) for x in scores.tolist())] = weights.tolist()
        return weights

    ch03.check_softmax(recording)
    fitted = ("import torch\nTABLE = " + repr(table) + "\ndef softmax(s):\n"
              "    return torch.tensor(TABLE[tuple(round(x, 3) for x in s.tolist())])")
    check = "tx.exercises.ch03.check_softmax(softmax)"
    hidden = check + "\ntx.exercises.ch03.check_softmax(softmax, variant=\"course\")"
    assert nbgrader_score(grade(fitted, checks=(check,), points=2)[0], 2) == 2
    outputs = grade(fitted, checks=(hidden,), points=2)[0]
    assert nbgrader_score(outputs, 2) == 1
    assert "KeyError" in verdict(outputs)


def test_a_student_s_own_limits_replace_the_course_s_and_nothing_else():
    # A teacher gives one student more time (an accommodation); the synthetic runaway students
    # of the course's check are graded under shorter limits the same way.
    from tx.exercises.autograde import GradeInIsolation

    grader = GradeInIsolation(timeout=30, memory_mb=2048, variant=7,
                              student_limits={"ada": {"timeout": 90}, "tx-runaway-*": {"timeout": 12, "memory_mb": 512},
                                              "*": {"memory_mb": 1024}})
    assert grader.limits("ada") == Limits(timeout=90, memory_mb=2048, variant=7)
    assert grader.limits("tx-runaway-loop") == Limits(timeout=12, memory_mb=512, variant=7)
    assert grader.limits("bob") == Limits(timeout=30, memory_mb=1024, variant=7)  # the first match counts
    assert GradeInIsolation(timeout=30).limits("ada").timeout == 30
    with pytest.raises(ValueError, match=r"names \['time'\]: give only 'timeout'"):
        GradeInIsolation(student_limits={"ada": {"time": 90}}).limits("ada")
