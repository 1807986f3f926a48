"""Grading a class: every student's code in a process of its own, every check in the grader's.

nbgrader's autograder runs a submission top to bottom in one Jupyter kernel, the checks beside
the student's code. Whatever runs first can change what runs after it: an answer cell can
replace the checker (``tx.exercises.ch10.check_adam_step = lambda fn: print("Correct")``),
keep a reference to the function a check forbids, print "Correct" itself, or make every later
cell a no-op (IPython's input transformers). No check that runs in that kernel can be sound.

The course's ``nbgrader_config.py`` puts :class:`tx.exercises.autograde.GradeInIsolation` in
place of nbgrader's ``Execute`` preprocessor. For each notebook it submits:

- the teacher's cells run in the grader (the read-only cells, and the autograder-tests cells
  with any hidden tests a teacher adds: nbgrader has already put back their source), in a
  process forked from one that ran the read-only cells once for the whole class;
- the student's answer cells run in a child of that process (a *sandbox*), with limits on its
  memory and time; before any answer runs there, what the exercise forbids (tx's own
  implementation of it, torch's shortcut) is swapped for code that refuses
  (:func:`tx.exercises.forbidding`), so no alias of it, taken before or after, works;
- a check calls the student's function through a proxy: the arguments go to the sandbox
  pickled; what comes back is read with ``torch.load(weights_only=True)``, data and never code;
  what the function changes in a layer it is given (its gradients, its weights) is copied back;
- the verdict is what the check does in the grader. Nothing the student's code prints or
  patches reaches it: the check cell's output in the graded notebook is written here.

A check that runs past ``timeout`` seconds, or whose sandbox runs out of memory or dies, gets a
one-line hint; the other exercises of the notebook are graded as usual. What this does not
stop: a student who copies a published answer (the book's solutions are public: the teachers'
page says where) and code that attacks the machine itself (files, other processes): grade in a
container or as a user who owns nothing else, as nbgrader's documentation advises.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import gc
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import traceback
from dataclasses import asdict
from typing import Any

from .sandbox import _TEXT_LIMIT, Limits, Sandbox, SandboxFailed, _run_cell, python_code

__all__ = ["Limits", "fingerprint", "grade_cells", "grade_notebook", "reaching", "Sandbox", "SandboxFailed"]


# ------------------------------------------------------------------------------ one notebook


def _used_names(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _resolve(node: ast.AST, namespace: dict[str, Any]) -> Any:
    """The object a dotted name (``tx.exercises.ch03.check_x``) names in ``namespace``, or None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in namespace:
        return None
    value = namespace[node.id]
    for part in reversed(parts):
        value = getattr(value, part, None)
    return value


def _checks(tree: ast.AST, namespace: dict[str, Any]) -> list[tuple[Any, set[str]]]:
    """``(checker, the names given to it)`` for every call in a check cell of one of tx's checkers."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            checker = _resolve(node.func, namespace)
            if callable(checker) and str(getattr(checker, "__module__", "")).startswith("tx.exercises"):
                names = {a.id for a in [*node.args, *(k.value for k in node.keywords)] if isinstance(a, ast.Name)}
                found.append((checker, names))
    return found


HINT_WIDTH = 88
"""Characters a line of a hint in the graded notebook holds: nbgrader's feedback shows a traceback
in a box that does not wrap, about 110 characters wide at 1280 pixels; the hint is wrapped here."""


def _error(ename: str, message: str) -> dict[str, Any]:
    import textwrap

    lines = textwrap.wrap(f"{ename}: {message}", HINT_WIDTH, break_long_words=True, break_on_hyphens=False)
    return {"output_type": "error", "ename": ename, "evalue": message, "traceback": lines or [ename]}


def _stream(text: str, name: str = "stdout") -> dict[str, Any]:
    return {"output_type": "stream", "name": name, "text": text}


def _partial(hint: str, passed: list[str], checks: list[tuple[Any, set[str]]],
             points: float | None) -> list[dict[str, Any]]:
    """A failed check's outputs: its hint, and the points of the parts it passed first (nbgrader reads a
    number shown as the cell's result as its score, so the partial score is shown so)."""
    import textwrap

    total = sum(len(getattr(checker, "parts", ())) or 1 for checker, _ in checks)
    if not passed or not total or not points:
        return [_error("Not yet", hint)]
    score = round(points * len(passed) / total, 2)
    text = (f"Not yet: {hint}\nPartial credit: {len(passed)} of {total} parts passed "
            f"({'; '.join(passed)}): {score:g} of {points:g} point{'' if points == 1 else 's'}.")
    lines = [line for paragraph in text.splitlines()
             for line in textwrap.wrap(paragraph, HINT_WIDTH, break_long_words=True, break_on_hyphens=False)]
    return [_stream("\n".join(lines) + "\n"),
            {"output_type": "execute_result", "execution_count": None, "metadata": {},
             "data": {"text/plain": f"{score:g}"}}]


def _run_check(namespace: dict[str, Any], source: str, answers: list[tuple[int, str]],
               limits: Limits, points: float | None = None) -> list[dict[str, Any]]:
    """One check cell, in the grader, the student's names standing for proxies: its outputs (the verdict).

    The student's names are those the cell gives to a checker of tx's (``check_x(answer)``), and
    any the grader's namespace does not define (a teacher's hidden test may call the answer
    itself); every other name is the grader's own, whatever the student's cells define. A check
    that fails after some of its checkers' parts passed earns those parts' share of ``points``.
    """
    from . import CheckFailed, counting_parts, forbidden

    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        return [_error("SyntaxError", f"the check cell does not parse: {e.msg} (line {e.lineno})")]
    local = dict(namespace)
    checks = _checks(tree, local)
    rules = [rule for checker, _ in checks if (rule := forbidden(checker)) is not None]
    wanted = set().union(*(names for _, names in checks)) | \
        {name for name in _used_names(tree) if name not in local and not hasattr(builtins, name)}
    printed = io.StringIO()
    sandbox = None
    passed: list[str] = []
    try:
        if wanted:
            sandbox = Sandbox(namespace, answers, rules, limits)
            for name in sorted(wanted):
                kind, value = sandbox.value(name)
                if kind == "callable":
                    local[name] = sandbox.function(name)
                elif kind == "value":
                    local[name] = value
                else:
                    local.pop(name, None)  # a NameError names it, as in the notebook
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed), \
                counting_parts() as passed:
            exec(compile(source, "<check cell>", "exec"), local)  # noqa: S102 - the teacher's check
    except SandboxFailed as e:
        return [_error("Not yet", str(e))]
    except CheckFailed as e:
        return _partial(str(e), passed, checks, points)
    except NameError as e:
        return [_error("Not yet", f"{e}: define it in the answer cell above (as the stub names it), then run "
                                  "that cell and this one.")]
    except Exception as e:  # noqa: BLE001 - a teacher's hidden test that fails
        message = " ".join(str(e).split())[:1000]
        return [_error(type(e).__name__, message or "a test in this cell failed.")]
    finally:
        if sandbox is not None:
            sandbox.close()
    text = printed.getvalue()
    return [_stream(text[:_TEXT_LIMIT])] if text else []


_BUILTINS = {"exec", "eval", "compile", "open", "getattr", "setattr", "delattr", "globals", "vars", "locals",
             "__import__", "breakpoint", "input", "sys", "os", "inspect", "gc", "types", "importlib", "builtins"}
"""Names an answer cell may not use unless it binds them itself: builtins that load or run code
other than the answer's own, or reach into objects by name, and modules a read-only cell may
have imported (``sys.modules``, ``inspect.currentframe``)."""
_ATTRIBUTES = {"ops", "hub", "reload", "import_module", "getsource", "f_back", "f_globals", "f_locals",
               "gi_frame", "cr_frame", "tb_frame",
               # modules that other modules hold (torch.os, numpy.sys): the system, files, processes
               "os", "sys", "posix", "subprocess", "shutil", "signal", "ctypes", "builtins", "importlib",
               "multiprocessing", "socket", "pathlib", "tempfile", "threading", "pickle", "marshal", "inspect",
               "gc", "resource", "mmap", "platform", "sysconfig", "runpy"}
"""Attributes an answer may not name, beside every one that starts with an underscore (torch's
private functions, the checkers' own references) other than ``_PLAIN_DUNDERS``."""
_PLAIN_DUNDERS = {"__init__", "__name__", "__call__", "__len__", "__getitem__", "__iter__", "__next__",
                  "__repr__", "__str__", "__eq__", "__hash__", "__lt__", "__contains__"}


def reaching(source: str) -> str | None:
    """What in ``source`` an answer cell may not use, or None: an import of a module outside what
    answers need (``tx.exercises.sandbox._MODULES`` and tx, not its checkers), a name of
    ``_BUILTINS`` the cell does not bind, an attribute of ``_ATTRIBUTES`` or a private one.

    This screen is not the guarantee (the checks and the verdict are out of the answer's reach
    whatever it does, and the sandbox can open no file): it keeps an answer from rebuilding tx's
    own function from tx's files or torch's private ones.
    """
    from .sandbox import _MODULES

    allowed = {name.split(".")[0] for name in _MODULES} | {"tx"}
    try:
        tree = ast.parse(python_code(source))
    except SyntaxError:
        return None
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} | \
        {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))} | \
        {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments) for a in n.args + n.kwonlyargs}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            for module in modules:
                if module.split(".")[0] not in allowed or module.startswith("tx.exercises"):
                    return f"import {module}"
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name.startswith("_") or (node.module == "tx" and alias.name == "exercises"):
                        return f"import {alias.name}"
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in _BUILTINS and node.id not in bound:
                return node.id
        elif isinstance(node, ast.Attribute):
            name = node.attr
            if name in _ATTRIBUTES or (name.startswith("_") and name not in _PLAIN_DUNDERS) or \
                    (name == "exercises" and isinstance(node.value, ast.Name) and node.value.id == "tx"):
                return name
    return None


def grade_notebook(cells: list[dict[str, Any]], namespace: dict[str, Any], limits: Limits) -> dict[int, list]:
    """``{cell index: outputs}`` for the answer and check cells of a notebook whose given cells ran in ``namespace``.

    ``cells`` are ``{"index", "role", "source"}`` with role "given", "answer" or "check" (and a
    check's ``"points"``, for partial credit). The
    answer cells run once in order in a sandbox of their own, for their printed outputs; a cell
    that does not finish there is left out of the sandboxes that each check then starts.
    """
    outputs: dict[int, list] = {}
    answers = []
    for cell in cells:
        if cell["role"] == "answer":
            found = reaching(cell["source"])
            if found:
                outputs[cell["index"]] = [_error("Not run", (
                    f"this cell uses `{found}`, which graded answers may not: it loads or runs code other than "
                    "your own, or reaches into tx's or torch's private parts. Write the answer with tensors, "
                    "numbers and functions of your own; the cell was left out."))]
            else:
                answers.append((cell["index"], cell["source"]))
    runnable: list[tuple[int, str]] = []
    todo = list(answers)
    while todo:
        try:
            sandbox = Sandbox(namespace, runnable + todo, [], limits, report_each=True)
            sandbox.close()
            done, failure = sandbox.cells, None
        except SandboxFailed as e:
            done, failure = e.cells, str(e)
        for index, _ in runnable:
            done.pop(index, None)
        for index, source in list(todo):
            if index in done:
                printed, error = done[index]
                outputs[index] = ([_stream(printed)] if printed else []) + ([_error("Error", error)] if error else [])
                runnable.append((index, source))
                todo.remove((index, source))
            else:  # the cell that did not finish: left out from here on
                outputs[index] = [_error("Not yet", failure or "this cell did not finish.")]
                todo.remove((index, source))
                break
    from . import course_variant

    with course_variant(limits.variant):
        for cell in cells:
            if cell["role"] == "check":
                outputs[cell["index"]] = _run_check(namespace, cell["source"], runnable, limits, cell.get("points"))
    return outputs


# ------------------------------------------------------------------------------ the class
# One process per nbgrader command (the *master*) imports torch and what the checks need, once;
# it forks a grader for each assignment notebook, which runs the notebook's given (read-only)
# cells once and then forks a grader for each student's notebook: a class of a hundred, and a
# course of fifteen assignments, pay for importing torch once (about 7 CPU-s with the rest).


def fingerprint() -> str:
    """tx's version and a hash of its source: what the students' tx and the grader's must share."""
    import hashlib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    try:
        from importlib.metadata import version

        release = version("tx")
    except Exception:  # noqa: BLE001 - tx run from a folder, not installed
        release = "source"
    return f"{release}+{digest.hexdigest()[:12]}"


def _master(channel: socket.socket) -> None:
    """``python -m tx.exercises.grading FD``: on each request read from ``channel``, fork a grader
    for one assignment notebook and send nbgrader its end of a new connection (SCM_RIGHTS)."""
    os.dup2(os.open(os.devnull, os.O_RDWR), 1)
    import matplotlib.pyplot  # noqa: F401 - the chapters' first cell imports it
    import torch

    # Modules torch imports on first use, which every grader would otherwise import again:
    # Adam's constructor imports torch._dynamo, broadcasting shapes in torch._refs imports
    # symbolic_shapes (and sympy); and what a sandbox imports before it runs an answer.
    import torch._dynamo  # noqa: F401
    import torch.fx.experimental.symbolic_shapes  # noqa: F401

    import tx.exercises  # noqa: F401
    from .sandbox import preload

    preload()
    torch.set_num_threads(1)
    # Every object so far out of the collector's reach: a forked grader's collections would
    # otherwise write to each of them and copy the pages that hold them (7% of the course's
    # check, measured with /usr/bin/time on four assignments).
    gc.freeze()
    requests = channel.makefile("r")
    for _ in requests:  # one line a grader
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            requests.close()
            channel.close()
            ours.close()
            try:
                _zygote(theirs)
            finally:
                os._exit(0)
        theirs.close()
        socket.send_fds(channel, [b"g"], [ours.fileno()])
        ours.close()
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:  # graders that have ended
                pass
    with contextlib.suppress(ChildProcessError):
        while True:
            os.wait()


def _zygote(connection: socket.socket) -> None:
    """A grader for one assignment notebook: run the given cells it is sent, then grade each notebook sent."""
    import torch

    reader, protocol = connection.makefile("r"), connection.makefile("w")
    work = tempfile.mkdtemp(prefix="tx-grader-")
    os.chdir(work)
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    given = json.loads(reader.readline())
    outputs = {}
    for cell in given:
        printed, error = _run_cell(namespace, cell["source"], f"<cell {cell['index']}>")
        outputs[cell["index"]] = ([_stream(printed)] if printed else []) + ([_error("Error", error)] if error else [])
    torch.set_num_threads(1)
    gc.freeze()  # what the given cells made too (see _master)
    protocol.write(json.dumps({"given": outputs}) + "\n")
    protocol.flush()
    for line in reader:
        request = json.loads(line)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                result = grade_notebook(request["cells"], namespace, Limits(**request["limits"]))
                data = json.dumps({"outputs": result}).encode()
            except BaseException:  # noqa: BLE001 - reported to nbgrader as the grader's own failure
                data = json.dumps({"error": traceback.format_exc()}).encode()
            with os.fdopen(write, "wb") as out:
                out.write(data)
            os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as source:
            data = source.read()
        os.waitpid(pid, 0)
        protocol.write((data.decode() if data else json.dumps({"error": "the grader's process stopped"})) + "\n")
        protocol.flush()
    shutil.rmtree(work, ignore_errors=True)  # nbgrader closed the connection: the class is graded


class _Master:
    def __init__(self) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg",
               "PYTHONUNBUFFERED": "1"}
        self.channel, theirs = socket.socketpair()
        self.process = subprocess.Popen([sys.executable, "-m", "tx.exercises.grading", str(theirs.fileno())],
                                        pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, env=env)
        theirs.close()

    def grader(self) -> socket.socket:
        """A new grader's connection."""
        self.channel.sendall(b"grader\n")
        _, fds, _, _ = socket.recv_fds(self.channel, 1, 1)
        if not fds:
            raise RuntimeError("tx's grader stopped before it answered (see the log above)")
        return socket.socket(fileno=fds[0])

    def close(self) -> None:
        self.channel.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


class _Zygote:
    def __init__(self, master: _Master, given: list[dict[str, Any]]) -> None:
        self.connection = master.grader()
        self.reader, self.writer = self.connection.makefile("r"), self.connection.makefile("w")
        self.given = self._ask(given)["given"]

    def _ask(self, message: Any) -> dict[str, Any]:
        self.writer.write(json.dumps(message) + "\n")
        self.writer.flush()
        line = self.reader.readline()
        if not line:
            raise RuntimeError("tx's grader stopped before it answered (see the log above)")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"tx's grader failed:\n{reply['error']}")
        return reply

    def grade(self, cells: list[dict[str, Any]], limits: Limits) -> dict[int, list]:
        outputs = {int(k): v for k, v in self._ask({"cells": cells, "limits": asdict(limits)})["outputs"].items()}
        outputs.update({int(k): v for k, v in self.given.items()})
        return outputs

    def close(self) -> None:
        for f in (self.writer, self.reader, self.connection):
            with contextlib.suppress(Exception):
                f.close()


_MASTER: list[_Master] = []
_ZYGOTES: dict[str, _Zygote] = {}


def _close_all() -> None:
    for zygote in _ZYGOTES.values():
        zygote.close()
    _ZYGOTES.clear()
    for master in _MASTER:
        master.close()
    _MASTER.clear()


def grade_cells(cells: list[dict[str, Any]], limits: Limits) -> dict[int, list]:
    """``{cell index: outputs}`` for a notebook's code cells (``{"index", "role", "source"}``), graded in isolation."""
    import atexit

    given = [c for c in cells if c["role"] == "given"]
    key = json.dumps([c["source"] for c in given])
    if key not in _ZYGOTES:
        if not _MASTER:
            atexit.register(_close_all)
            _MASTER.append(_Master())
        _ZYGOTES[key] = _Zygote(_MASTER[0], given)
    return _ZYGOTES[key].grade(cells, limits)


if __name__ == "__main__":
    _master(socket.socket(fileno=int(sys.argv[1])))
