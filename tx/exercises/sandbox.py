"""The sandbox of :mod:`tx.exercises.grading`: a child process that holds a student's answers and answers calls.

The grader forks it (:class:`Sandbox`); in it the student's cells run under limits, after what
the exercise forbids has been swapped out; the grader then calls the student's functions
through proxies. Messages between them are a JSON header and a binary blob; the grader reads
the sandbox's blobs with ``torch.load(weights_only=True)`` only, so what comes back is data
(tensors, numbers, strings and containers of them), never code.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import linecache
import os
import pickle
import shutil
import signal
import socket
import struct
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable

from . import CheckFailed as _CheckFailed
from .confine import confine
from .wire import Gone, Late, as_data, data, receive, send

__all__ = ["Limits", "Sandbox", "SandboxFailed", "python_code"]

_TEXT_LIMIT = 4000  # characters of a cell's printed text kept for the feedback


@dataclass(frozen=True)
class Limits:
    """What one check may use: ``timeout`` seconds of wall time in all (the student's cells run
    first, then every call the check makes), and ``memory_mb`` megabytes of memory beyond what
    the grader's process holds when the sandbox starts."""

    timeout: float = 30.0  #: seconds of wall time for the answer cells and every call of one check
    memory_mb: int = 2048  #: megabytes of memory a sandbox may add to the grader's
    variant: int = 1  #: the course's own inputs, which a hidden test's ``variant="course"`` draws


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

        send(self._connection, {"op": "callback", "key": self._key}, as_data((list(args), kwargs)))
        header, blob = receive(self._connection)
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


_MODULES = ("math", "cmath", "collections", "itertools", "functools", "heapq", "bisect", "statistics", "random",
            "copy", "string", "re", "typing", "dataclasses", "numpy", "torch", "torch.nn", "torch.nn.functional")
"""The modules an answer may import (tx.exercises.grading's screen refuses others)."""
_PRELOADED = ("tokenizers", "tx.subwords", "tx.data")
"""Modules a check's arguments may need when they are unpickled in the sandbox, where no file opens."""


def preload() -> None:
    """Import what an answer may import and what a check's arguments need (a pickled SubwordVocab
    needs tokenizers): in the grading master once, and in each sandbox before it can open no file."""
    for name in _MODULES + _PRELOADED:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def _highest_fd() -> int:
    try:
        return max(int(name) for name in os.listdir("/proc/self/fd"))
    except (OSError, ValueError):
        return 1024


def _limit(memory_mb: int, seconds: float, files: int) -> None:
    """In the sandbox: its memory (address space), CPU time, open files, file size and core dumps limited."""
    import resource

    with open("/proc/self/status") as status:
        held = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
    space = held + memory_mb * (1 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (space, space))
    cpu = int(seconds * 2) + 5  # a backstop: the grader kills it at the deadline
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))


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


def python_code(source: str) -> str:
    """A cell's source as Python: its IPython magics and shell lines (``%...``, ``!...``) blanked, so
    that line numbers stay the cell's."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n"))


def _run_cell(namespace: dict[str, Any], source: str, name: str) -> tuple[str, str | None]:
    """In the sandbox: exec one cell's code; (what it printed, a one-line error or None)."""
    printed = io.StringIO()
    code = python_code(source)
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
           forbidden: list[tuple[list[tuple[Any, str]], str]], limits: Limits, report_each: bool,
           work: str) -> None:
    """The sandbox's life: limits, then the forbidding, then the student's cells, then calls until the end."""
    import torch

    from . import forbidding

    os.setpgid(0, 0)  # its own process group: the grader stops what it starts too
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1) if os.environ.get("TX_GRADING_DEBUG") else (0, 1, 2):
        os.dup2(null, fd)
    torch.set_num_threads(1)
    os.chdir(work)  # a folder of its own, which the grader removes (the sandbox itself can remove nothing)
    preload()  # while files can still be opened
    as_data((torch.ones(1), {"a": [1.0]}))  # what torch.save imports on first use, likewise
    font_manager = sys.modules.get("matplotlib.font_manager")
    if font_manager is not None:  # a font lookup that fails here would rewrite the user's font cache with what
        font_manager.json_dump = lambda *args, **kwargs: None  # a process that can open no file finds: nothing
    # Every file the process holds closed but the connection and /dev/null (the grader's pipes to
    # nbgrader and to its own process among them), then no new one: no file, socket or /proc
    # entry can be opened from here (the gradebook included).
    if connection.fileno() != 3:  # the connection becomes file 3, the highest a sandbox holds
        os.dup2(connection.fileno(), 3)
        moved, connection = connection, socket.socket(fileno=3)
        moved.close()
    for fd in range(4, _highest_fd() + 1):
        with contextlib.suppress(OSError):
            os.close(fd)
    _limit(limits.memory_mb, limits.timeout, files=4)
    confine()  # and no call that needs no file: unlink, rename, kill, fork (tx.exercises.confine)
    stack = contextlib.ExitStack()
    for targets, why in forbidden:
        stack.enter_context(forbidding(targets, why))
    for index, source in answers:
        printed, error = _run_cell(namespace, source, f"<answer cell {index}>")
        if report_each:
            send(connection, {"op": "cell", "index": index, "printed": printed, "error": error})
    send(connection, {"op": "ready"})
    references: dict[int, _Reference] = {}

    class _Unpickler(pickle.Unpickler):
        def persistent_load(self, key: Any) -> Any:
            return references.setdefault(key, _Reference(connection, key))

    while True:
        header, blob = receive(connection)
        if header.get("op") != "call":
            return
        name = header["name"]
        if name not in namespace:
            send(connection, {"op": "missing"})
            continue
        value = namespace[name]
        if not header.get("invoke"):
            if callable(value):
                send(connection, {"op": "callable"})
            else:
                try:
                    send(connection, {"op": "value"}, as_data(value))
                except Exception as e:  # noqa: BLE001
                    send(connection, {"op": "unreadable", "type": type(value).__name__, "why": str(e)[:200]})
            continue
        args, kwargs = _Unpickler(io.BytesIO(blob)).load()
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                result = value(*args, **kwargs)
        except NotImplementedError:  # the stub: the grader's call() words the hint, as in the notebook
            send(connection, {"op": "not-implemented"})
            continue
        except BaseException as e:  # noqa: BLE001 - whatever the student's function raises is a hint
            send(connection, {"op": "raised", "hint": _hint_for(name, e)})
            continue
        try:
            blob = as_data((result, _changes(args, kwargs)))
        except Exception as e:  # noqa: BLE001
            send(connection, {"op": "unreadable", "type": type(result).__name__, "why": str(e)[:200]})
            continue
        send(connection, {"op": "result"}, blob)


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
        self.work = tempfile.mkdtemp(prefix="tx-sandbox-")
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
                _serve(theirs, dict(namespace), answers, forbidden, limits, report_each, self.work)
            except BaseException:  # noqa: BLE001 - the grader sees the connection close
                code = 1
                if os.environ.get("TX_GRADING_DEBUG"):  # the sandbox's own failure, for tx's developers
                    import traceback

                    with contextlib.suppress(Exception):
                        os.write(2, traceback.format_exc().encode())
            finally:
                os._exit(code)
        theirs.close()
        self.pid, self.connection = pid, ours
        self._objects: dict[int, Any] = {}
        self._wait_ready(answers)

    def _wait_ready(self, answers: list[tuple[int, str]]) -> None:
        pending = [i for i, _ in answers]
        while True:
            header, _ = self.receive()
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

    def receive(self) -> tuple[dict[str, Any], bytes]:
        if self.failure:
            raise SandboxFailed(self.failure)
        try:
            return receive(self.connection, self.deadline)
        except Late:
            self._fail(f"your code did not finish within {self.limits.timeout:g} s, the time the grader "
                       "allows each exercise: look for a loop that never ends, or work that grows too fast.")
        except (Gone, OSError, ValueError, struct.error):
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
            send(self.connection, header, blob)
        except OSError:
            self._fail(self._why_stopped())
        return self.receive()

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
            return data(blob)
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
                call_args, call_kwargs = data(blob)
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
        sent = self._read(blob, name)
        if not (isinstance(sent, tuple) and len(sent) == 2):
            self._fail("the grader could not read what your code sent.")
        result, changes = sent
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
        shutil.rmtree(self.work, ignore_errors=True)
