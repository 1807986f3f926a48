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
import io
import json
import linecache
import os
import pickle
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass
from typing import Any, Callable

from . import CheckFailed as _CheckFailed

__all__ = ["Limits", "fingerprint", "grade_cells", "grade_notebook", "reaching", "Sandbox", "SandboxFailed"]

_FRAME_LIMIT = 64 << 20  # bytes: the most one message from a sandbox may hold
_TEXT_LIMIT = 4000  # characters of a cell's printed text kept for the feedback


@dataclass(frozen=True)
class Limits:
    """What one check may use: ``timeout`` seconds of wall time in all (the student's cells run
    first, then every call the check makes), and ``memory_mb`` megabytes of memory beyond what
    the grader's process holds when the sandbox starts."""

    timeout: float = 30.0
    memory_mb: int = 2048


# ------------------------------------------------------------------------------- messages
# A message is a JSON header and a binary blob: [4-byte header length][header][8-byte blob length][blob].
# The grader reads a sandbox's headers as JSON and its blobs with torch.load(weights_only=True) only.


def _send(sock: socket.socket, header: dict[str, Any], blob: bytes = b"") -> None:
    head = json.dumps(header).encode()
    sock.sendall(struct.pack(">I", len(head)) + head + struct.pack(">Q", len(blob)) + blob)


class _Gone(Exception):
    """The other end closed the connection, or sent what is not a message."""


class _Late(Exception):
    """The deadline passed before a whole message came."""


def _receive_exactly(sock: socket.socket, n: int, deadline: float | None) -> bytes:
    parts, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([sock], [], [], left)[0]:
                raise _Late
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise _Gone
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _receive(sock: socket.socket, deadline: float | None = None) -> tuple[dict[str, Any], bytes]:
    (n,) = struct.unpack(">I", _receive_exactly(sock, 4, deadline))
    if n > 1 << 20:
        raise _Gone
    try:
        header = json.loads(_receive_exactly(sock, n, deadline))
    except ValueError:
        raise _Gone from None
    (m,) = struct.unpack(">Q", _receive_exactly(sock, 8, deadline))
    if m > _FRAME_LIMIT or not isinstance(header, dict):
        raise _Gone
    return header, _receive_exactly(sock, m, deadline)


def _data(blob: bytes) -> Any:
    """What a sandbox sent: tensors, numbers, strings and containers of them, never code."""
    import torch

    return torch.load(io.BytesIO(blob), weights_only=True)


def _as_data(value: Any) -> bytes:
    """``value`` saved so that :func:`_data` can read it: containers made plain, tensors made torch.Tensor."""
    import torch

    def plain(v: Any, depth: int = 0) -> Any:
        if depth > 20:
            raise TypeError("nested too deeply")
        if isinstance(v, torch.Tensor):
            return v.detach().as_subclass(torch.Tensor).clone() if type(v) is not torch.Tensor or v.requires_grad \
                else v
        if isinstance(v, (bool, int, float, complex, str, bytes, type(None), torch.Size, torch.dtype)):
            return v
        if hasattr(v, "item") and hasattr(v, "dtype") and getattr(v, "shape", None) == ():  # a numpy scalar
            return v.item()
        if hasattr(v, "__array__") and hasattr(v, "dtype"):  # a numpy array
            return torch.as_tensor(v.__array__())
        if isinstance(v, dict):
            return {plain(k, depth + 1): plain(x, depth + 1) for k, x in v.items()}
        if isinstance(v, (list, tuple, set, frozenset)):
            kind = {list: list, tuple: tuple, set: set, frozenset: set}.get(type(v)) or \
                next(t for t in (list, tuple, set) if isinstance(v, t))
            items = [plain(x, depth + 1) for x in v]
            if kind is tuple and hasattr(v, "_fields"):  # a named tuple is a tuple
                return tuple(items)
            return kind(items)
        raise TypeError(type(v).__name__)

    buffer = io.BytesIO()
    torch.save(plain(value), buffer)
    return buffer.getvalue()


# ------------------------------------------------------------------------------ the sandbox
# Objects of tx.exercises' checkers that the student's function may call but must not hold:
# a class marks itself `by_reference = True`, and the sandbox gets a stand-in whose calls the
# grader answers (chapter 11's model, which counts what it is asked). A class whose state the
# function changes on purpose names it in `synced` (chapter A1's stream counts what was read).


class _Reference:
    """In the sandbox: a stand-in for a grader's object; calling it asks the grader."""

    def __init__(self, connection: socket.socket, key: int) -> None:
        self._connection, self._key = connection, key

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from . import CheckFailed

        _send(self._connection, {"op": "callback", "key": self._key}, _as_data((list(args), kwargs)))
        header, blob = _receive(self._connection)
        if header.get("op") == "callback-raised":
            raise CheckFailed(str(header.get("message")))
        return pickle.loads(blob)


def _walk(value: Any, path: tuple = (), depth: int = 0) -> Any:
    """``(path, object)`` for every nn.Module and every object with ``synced`` state inside ``value``."""
    from torch import nn

    if depth > 4:
        return
    if isinstance(value, nn.Module) or getattr(type(value), "synced", None):
        yield path, value
    if isinstance(value, nn.Module):
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _walk(item, path + (i,), depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, (str, int)):
                yield from _walk(item, path + (key,), depth + 1)


def _changes(args: list[Any], kwargs: dict[str, Any]) -> list[Any]:
    """What a call left in the layers and synced objects it was given, as data: [(path, state)]."""
    from torch import nn

    found = []
    for path, value in _walk([args, kwargs]):
        if isinstance(value, nn.Module):
            state = {"params": {n: p.detach() for n, p in value.named_parameters(remove_duplicate=False)},
                     "grads": {n: p.grad for n, p in value.named_parameters(remove_duplicate=False)
                               if p.grad is not None},
                     "buffers": {n: b for n, b in value.named_buffers(remove_duplicate=False)}}
        else:
            state = {}
        state["attrs"] = {name: getattr(value, name) for name in getattr(type(value), "synced", ())}
        found.append((list(path), state))
    return found


def _apply_changes(args: list[Any], kwargs: dict[str, Any], changes: Any) -> None:
    """In the grader: copy what the sandbox reported into the caller's own objects, shapes checked."""
    import torch
    from torch import nn

    from . import CheckFailed

    ours = dict((tuple(path), value) for path, value in _walk([args, kwargs]))
    for path, state in changes if isinstance(changes, list) else []:
        target = ours.get(tuple(path)) if isinstance(path, list) else None
        if target is None or not isinstance(state, dict):
            continue
        if isinstance(target, nn.Module):
            params = dict(target.named_parameters(remove_duplicate=False))
            buffers = dict(target.named_buffers(remove_duplicate=False))
            with torch.no_grad():
                for kind, where in (("params", params), ("buffers", buffers), ("grads", params)):
                    for name, tensor in (state.get(kind) or {}).items():
                        mine = where.get(name)
                        if mine is None or not isinstance(tensor, torch.Tensor) or tensor.shape != mine.shape:
                            raise CheckFailed(f"your function changed the shape of {name}: it should only "
                                              "update the values the layer holds.")
                        if kind == "grads":
                            mine.grad = tensor.to(mine.dtype)
                        else:
                            mine.copy_(tensor)
            for name, p in params.items():  # a gradient the function cleared
                if name not in (state.get("grads") or {}):
                    p.grad = None
        for name, value in (state.get("attrs") or {}).items():
            if name in getattr(type(target), "synced", ()):
                setattr(target, name, value)


class SandboxFailed(_CheckFailed):
    """A sandbox ran out of time or memory, or stopped: the message is the student's one-line hint.
    ``cells`` holds what the answer cells it had run printed, ``{index: (printed, error)}``."""

    def __init__(self, message: str, cells: dict[int, tuple[str, str | None]] | None = None) -> None:
        super().__init__(message)
        self.cells = dict(cells or {})


def _limit(memory_mb: int, seconds: float) -> None:
    """In the sandbox: its memory (address space), CPU time, file size and core dumps limited."""
    import resource

    with open("/proc/self/status") as status:
        held = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
    space = held + memory_mb * (1 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (space, space))
    cpu = int(seconds * 2) + 5  # a backstop: the grader kills it at the deadline
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _hint_for(fn_name: str, error: BaseException) -> str:
    from . import CheckFailed, raised_hint

    if isinstance(error, CheckFailed):
        return str(error)
    if isinstance(error, NotImplementedError):
        return (f"{fn_name} still raises NotImplementedError: replace the `raise NotImplementedError` line "
                "with your code.")
    if isinstance(error, MemoryError):
        return f"{fn_name} ran out of memory: the grader allows each exercise a fixed amount."
    return raised_hint(type("answer", (), {"__name__": fn_name})(), error)


def _run_cell(namespace: dict[str, Any], source: str, name: str) -> tuple[str, str | None]:
    """In the sandbox: exec one cell's code; (what it printed, a one-line error or None)."""
    printed = io.StringIO()
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            exec(compile(code, name, "exec"), namespace)  # noqa: S102 - the student's cell, in the sandbox
        error = None
    except SyntaxError as e:
        error = f"SyntaxError: {e.msg} (line {e.lineno})"
    except BaseException as e:  # noqa: BLE001 - whatever the cell raises, SystemExit included
        error = _hint_for("this cell", e).replace("this cell raised ", "")
    return printed.getvalue()[:_TEXT_LIMIT], error


def _serve(connection: socket.socket, namespace: dict[str, Any], answers: list[tuple[int, str]],
           forbidden: list[tuple[list[tuple[Any, str]], str]], limits: Limits, report_each: bool) -> None:
    """The sandbox's life: limits, then the forbidding, then the student's cells, then calls until the end."""
    import torch

    from . import forbidding

    os.setpgid(0, 0)  # its own process group: the grader stops what it starts too
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    _limit(limits.memory_mb, limits.timeout)
    torch.set_num_threads(1)
    work = tempfile.mkdtemp(prefix="tx-sandbox-")
    os.chdir(work)
    stack = contextlib.ExitStack()
    for targets, why in forbidden:
        stack.enter_context(forbidding(targets, why))
    for index, source in answers:
        printed, error = _run_cell(namespace, source, f"<answer cell {index}>")
        if report_each:
            _send(connection, {"op": "cell", "index": index, "printed": printed, "error": error})
    _send(connection, {"op": "ready"})
    references: dict[int, _Reference] = {}

    class _Unpickler(pickle.Unpickler):
        def persistent_load(self, key: Any) -> Any:
            return references.setdefault(key, _Reference(connection, key))

    while True:
        header, blob = _receive(connection)
        if header.get("op") != "call":
            return
        name = header["name"]
        if name not in namespace:
            _send(connection, {"op": "missing"})
            continue
        value = namespace[name]
        if not header.get("invoke"):
            if callable(value):
                _send(connection, {"op": "callable"})
            else:
                try:
                    _send(connection, {"op": "value"}, _as_data(value))
                except Exception as e:  # noqa: BLE001
                    _send(connection, {"op": "unreadable", "type": type(value).__name__, "why": str(e)[:200]})
            continue
        args, kwargs = _Unpickler(io.BytesIO(blob)).load()
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                result = value(*args, **kwargs)
        except NotImplementedError:  # the stub: the grader's call() words the hint, as in the notebook
            _send(connection, {"op": "not-implemented"})
            continue
        except BaseException as e:  # noqa: BLE001 - whatever the student's function raises is a hint
            _send(connection, {"op": "raised", "hint": _hint_for(name, e)})
            continue
        try:
            blob = _as_data((result, _changes(args, kwargs)))
        except Exception as e:  # noqa: BLE001
            _send(connection, {"op": "unreadable", "type": type(result).__name__, "why": str(e)[:200]})
            continue
        _send(connection, {"op": "result"}, blob)


class Sandbox:
    """A child process, forked from the grader, that holds the student's answers and answers calls.

    ``Sandbox(namespace, answers, forbidden, limits)`` forks: the child runs ``answers`` (the
    student's cells, ``[(cell index, source)]``) on a copy of ``namespace`` after forbidding
    ``forbidden``; the grader then calls ``sandbox.function(name)`` or asks ``sandbox.value(name)``.
    Everything the child sends is checked here; its deadline is ``limits.timeout`` seconds from
    the start. ``close()`` stops it.
    """

    def __init__(self, namespace: dict[str, Any], answers: list[tuple[int, str]],
                 forbidden: list[tuple[list[tuple[Any, str]], str]], limits: Limits,
                 report_each: bool = False) -> None:
        self.limits, self.deadline = limits, time.monotonic() + limits.timeout
        self.failure: str | None = None
        self.cells: dict[int, tuple[str, str | None]] = {}
        ours, theirs = socket.socketpair()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the sandbox
            code = 0
            try:
                ours.close()
                _serve(theirs, dict(namespace), answers, forbidden, limits, report_each)
            except BaseException:  # noqa: BLE001 - the grader sees the connection close
                code = 1
            finally:
                os._exit(code)
        theirs.close()
        self.pid, self.connection = pid, ours
        self._objects: dict[int, Any] = {}
        self._wait_ready(answers)

    def _wait_ready(self, answers: list[tuple[int, str]]) -> None:
        pending = [i for i, _ in answers]
        while True:
            header, _ = self._receive()
            if header.get("op") == "ready":
                return
            if header.get("op") == "cell" and header.get("index") in pending:
                printed, error = header.get("printed"), header.get("error")
                self.cells[header["index"]] = (str(printed or "")[:_TEXT_LIMIT], None if error is None else str(error))
                pending.remove(header["index"])
            else:
                self._fail("the grader could not read what your code sent.")

    def _fail(self, why: str) -> None:
        self.failure = why
        self.close()
        raise SandboxFailed(why, self.cells)

    def _receive(self) -> tuple[dict[str, Any], bytes]:
        if self.failure:
            raise SandboxFailed(self.failure)
        try:
            return _receive(self.connection, self.deadline)
        except _Late:
            self._fail(f"your code did not finish within {self.limits.timeout:g} s, the time the grader "
                       "allows each exercise: look for a loop that never ends, or work that grows too fast.")
        except (_Gone, OSError, ValueError, struct.error):
            self._fail(self._why_stopped())
        raise AssertionError("unreachable")

    def _why_stopped(self) -> str:
        try:
            _, status = os.waitpid(self.pid, 0)
            self.pid = 0
        except ChildProcessError:
            status = 0
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            if sig == signal.SIGKILL:
                return (f"your code was stopped (SIGKILL): most likely it used more memory than the "
                        f"{self.limits.memory_mb} MB the grader allows each exercise.")
            if sig == signal.SIGXCPU:
                return f"your code used more CPU time than the grader allows ({self.limits.timeout:g} s)."
            return f"your code stopped the grader's process for it (signal {signal.Signals(sig).name})."
        return "your code ended the grader's process for it (sys.exit, os._exit or a crash) before it answered."

    def _ask(self, header: dict[str, Any], blob: bytes = b"") -> tuple[dict[str, Any], bytes]:
        if self.failure:
            raise SandboxFailed(self.failure)
        try:
            _send(self.connection, header, blob)
        except OSError:
            self._fail(self._why_stopped())
        return self._receive()

    def value(self, name: str) -> tuple[str, Any]:
        """``("missing" | "callable" | "value", value)`` of ``name`` in the student's namespace."""
        from . import CheckFailed

        header, blob = self._ask({"op": "call", "name": name, "invoke": False})
        op = header.get("op")
        if op == "value":
            return "value", self._read(blob, name)
        if op == "unreadable":
            raise CheckFailed(f"`{name}` is a {str(header.get('type'))[:60]}, which the grader cannot read: "
                              "it reads tensors, numbers, strings, and lists, tuples, sets and dicts of them.")
        if op in ("missing", "callable"):
            return op, None
        self._fail("the grader could not read what your code sent.")
        raise AssertionError("unreachable")

    def _read(self, blob: bytes, name: str) -> Any:
        from . import CheckFailed

        try:
            return _data(blob)
        except Exception:  # noqa: BLE001 - whatever the sandbox sent that is not plain data
            raise CheckFailed(f"what {name} returned is not plain data the grader can read: return tensors, "
                              "numbers, strings, and lists, tuples, sets and dicts of them.") from None

    def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Call the student's ``name(*args, **kwargs)`` in the sandbox; CheckFailed with a hint if it raises."""
        from . import CheckFailed

        buffer = io.BytesIO()
        pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
        objects = self._objects

        def persistent_id(obj: Any) -> Any:
            if getattr(type(obj), "by_reference", False):
                objects[id(obj)] = obj
                return id(obj)
            return None

        pickler.persistent_id = persistent_id  # type: ignore[method-assign]
        pickler.dump((list(args), kwargs))
        header, blob = self._ask({"op": "call", "name": name, "invoke": True}, buffer.getvalue())
        while header.get("op") == "callback":
            target = objects.get(header.get("key"))
            try:
                call_args, call_kwargs = _data(blob)
                if target is None or not isinstance(call_args, list) or not isinstance(call_kwargs, dict):
                    raise CheckFailed("the grader could not read what your code sent.")
                reply = {"op": "callback-result"}, pickle.dumps(target(*call_args, **call_kwargs))
            except CheckFailed as e:
                reply = {"op": "callback-raised", "message": str(e)}, b""
            except Exception as e:  # noqa: BLE001 - a call the model could not answer
                reply = {"op": "callback-raised", "message": f"{type(e).__name__}: {e}"}, b""
            header, blob = self._ask(*reply)
        op = header.get("op")
        if op == "not-implemented":
            raise NotImplementedError
        if op == "raised":
            raise CheckFailed(str(header.get("hint", "your function raised an error."))[:1000])
        if op == "missing":
            raise CheckFailed(f"there is no `{name}`: define it in the answer cell above (as the stub names it).")
        if op == "unreadable":
            raise CheckFailed(f"{name} returned a {str(header.get('type'))[:60]}, which the grader cannot read: "
                              "return tensors, numbers, strings, and lists, tuples, sets and dicts of them.")
        if op != "result":
            self._fail("the grader could not read what your code sent.")
        data = self._read(blob, name)
        if not (isinstance(data, tuple) and len(data) == 2):
            self._fail("the grader could not read what your code sent.")
        result, changes = data
        _apply_changes(list(args), kwargs, changes)
        return result

    def function(self, name: str) -> Callable[..., Any]:
        """A proxy for the student's function ``name``: calling it calls it in the sandbox."""
        sandbox = self

        def answer(*args: Any, **kwargs: Any) -> Any:
            return sandbox.call(name, args, kwargs)

        answer.__name__ = answer.__qualname__ = name
        answer.in_isolation = True  # type: ignore[attr-defined]  # call() leaves forbidding to the sandbox
        return answer

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.connection.close()
        if self.pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            self.pid = 0


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


def _run_check(namespace: dict[str, Any], source: str, answers: list[tuple[int, str]],
               limits: Limits) -> list[dict[str, Any]]:
    """One check cell, in the grader, the student's names standing for proxies: its outputs (the verdict).

    The student's names are those the cell gives to a checker of tx's (``check_x(answer)``), and
    any the grader's namespace does not define (a teacher's hidden test may call the answer
    itself); every other name is the grader's own, whatever the student's cells define.
    """
    from . import CheckFailed, forbidden

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
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            exec(compile(source, "<check cell>", "exec"), local)  # noqa: S102 - the teacher's check
    except SandboxFailed as e:
        return [_error("Not yet", str(e))]
    except CheckFailed as e:
        return [_error("Not yet", str(e))]
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


_REACHING = {
    "reload", "import_module", "__import__", "exec", "eval", "compile", "open", "globals", "vars", "getattr",
    "setattr", "delattr", "_getframe", "f_back", "f_globals", "f_locals", "getsource", "FunctionType", "CodeType",
    "spec_from_file_location", "get_objects", "get_referrers",
    "importlib", "sys", "os", "builtins", "inspect", "types", "marshal", "pickle", "runpy", "code", "ctypes", "gc",
    "subprocess", "shutil", "signal", "socket", "resource",
}
"""Names that load or run code other than the answer's own, or reach into the grader's objects:
no exercise needs one, and an answer cell that uses one is not run. So is one that names a
double-underscore attribute other than :data:`_PLAIN_DUNDERS` (``().__class__.__bases__``). This
is a screen, not the guarantee (the checks and the verdict are out of the answer's reach
whatever it does): it keeps an answer from rebuilding tx's own function from tx's files."""

_PLAIN_DUNDERS = {"__init__", "__name__", "__main__", "__call__", "__len__", "__getitem__", "__iter__", "__next__",
                  "__repr__", "__str__", "__eq__", "__hash__", "__lt__", "__contains__"}


def reaching(source: str) -> str | None:
    """The first name in ``source`` of :data:`_REACHING` (as a name, an attribute or an import), or None."""
    try:
        tree = ast.parse("\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))))
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        names = [node.id] if isinstance(node, ast.Name) else [node.attr] if isinstance(node, ast.Attribute) else \
            [a.name.split(".")[0] for a in node.names] + [a.name.split(".")[-1] for a in node.names] \
            if isinstance(node, (ast.Import, ast.ImportFrom)) else []
        if isinstance(node, ast.ImportFrom) and node.module:
            names += node.module.split(".")
        found = next((n for n in names if n in _REACHING or (
            n.startswith("__") and n.endswith("__") and n not in _PLAIN_DUNDERS)), None)
        if found:
            return found
    return None


def grade_notebook(cells: list[dict[str, Any]], namespace: dict[str, Any], limits: Limits) -> dict[int, list]:
    """``{cell index: outputs}`` for the answer and check cells of a notebook whose given cells ran in ``namespace``.

    ``cells`` are ``{"index", "role", "source"}`` with role "given", "answer" or "check". The
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
                    "your own, or reaches into the grader's. Write the answer with tensors, numbers and "
                    "functions of your own; the cell was left out."))]
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
    for cell in cells:
        if cell["role"] == "check":
            outputs[cell["index"]] = _run_check(namespace, cell["source"], runnable, limits)
    return outputs


# ------------------------------------------------------------------------------ the class
# One process per assignment notebook runs its given (read-only) cells once, then forks a grader
# for each student's notebook: a class of a hundred pays for importing torch and tx once.


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


def _zygote() -> None:
    """``python -m tx.exercises.grading``: run the given cells sent on stdin, then grade each notebook sent."""
    protocol = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)
    os.chdir(tempfile.mkdtemp(prefix="tx-grader-"))
    import torch

    torch.set_num_threads(1)
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    given = json.loads(sys.stdin.readline())
    outputs = {}
    for cell in given:
        printed, error = _run_cell(namespace, cell["source"], f"<cell {cell['index']}>")
        outputs[cell["index"]] = ([_stream(printed)] if printed else []) + ([_error("Error", error)] if error else [])
    torch.set_num_threads(1)
    protocol.write(json.dumps({"given": outputs}) + "\n")
    protocol.flush()
    for line in sys.stdin:
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


class _Zygote:
    def __init__(self, given: list[dict[str, Any]]) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg",
               "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen([sys.executable, "-m", "tx.exercises.grading"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=env)
        self.given = self._ask(given)["given"]

    def _ask(self, message: Any) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
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
        with contextlib.suppress(Exception):
            self.process.stdin.close()  # type: ignore[union-attr]
            self.process.wait(timeout=10)
        if self.process.poll() is None:
            self.process.kill()


_ZYGOTES: dict[str, _Zygote] = {}


def _close_all() -> None:
    for zygote in _ZYGOTES.values():
        zygote.close()
    _ZYGOTES.clear()


def grade_cells(cells: list[dict[str, Any]], limits: Limits) -> dict[int, list]:
    """``{cell index: outputs}`` for a notebook's code cells (``{"index", "role", "source"}``), graded in isolation."""
    import atexit

    given = [c for c in cells if c["role"] == "given"]
    key = json.dumps([c["source"] for c in given])
    if key not in _ZYGOTES:
        if not _ZYGOTES:
            atexit.register(_close_all)
        _ZYGOTES[key] = _Zygote(given)
    return _ZYGOTES[key].grade(cells, limits)


if __name__ == "__main__":
    _zygote()
