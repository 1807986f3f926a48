"""Checkers for the book's exercises, and the learner edition without solutions.

Each chapter's exercises have a checker here, in ``tx.exercises.chNN``. A checker takes
the learner's answer (usually a function), compares it with tx's tested implementation
on inputs of its own, and either prints one line that says it is right or raises
:class:`CheckFailed` (an ``AssertionError``) with a hint: the expected shape, a value that
differs, the property that failed. In Jupyter a failed check shows only its hint, not a
traceback through this package.

``python -m tx.exercises learner OUTDIR`` writes every chapter with the solutions
removed and outputs cleared (see :mod:`tx.exercises.learner`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib
import linecache
import math
import sys
import sysconfig
import types
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

import torch
from torch import Tensor

__all__ = [
    "CheckFailed", "call", "as_shape", "assert_tensor", "assert_number", "as_number", "passed", "keeps_random_state",
    "forbidding", "forbids", "forbidden", "raised_hint", "learners_frame", "parts", "part", "counting_parts",
    "seeded", "course_variant",
]

Checker = TypeVar("Checker", bound=Callable[..., Any])


class CheckFailed(AssertionError):
    """An answer a checker rejected; its message is the hint.

    IPython shows an exception through ``_render_traceback_`` when it has one: a failed
    check then reads as one red line with the hint, instead of a traceback through the
    checker's internals, which tell the learner nothing about their own code.
    """

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[1;31mNot yet:\x1b[0m {self}"]


def passed(message: str) -> None:
    """Print the one line a correct answer earns."""
    print(f"Correct: {message}")


def keeps_random_state(checker: Checker) -> Checker:
    """Run ``checker`` with torch's global random state saved and restored afterwards.

    A checker builds layers and draws inputs; without this, checking an answer would
    change what the notebook's next random call gives, and a seeded chapter would no
    longer reproduce its numbers after an exercise.
    """

    @functools.wraps(checker)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with torch.random.fork_rng(devices=[]):
            return checker(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


# ------------------------------------------------------------------------------ graded parts
# A course grades an exercise in parts, easiest first (the worked example, then random sizes,
# then the edge case the hints name); an answer earns the parts its check passed before the
# first that failed. A learner's notebook sees none of this: a check stops at its first hint.

_PARTS: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("tx_exercises_parts", default=None)
_VARIANT: contextvars.ContextVar[int] = contextvars.ContextVar("tx_exercises_variant", default=0)
_COURSE: contextvars.ContextVar[int] = contextvars.ContextVar("tx_exercises_course", default=1)


def parts(*names: str, drawn: bool = False) -> Callable[[Checker], Checker]:
    """Declare a checker's graded parts, in the order it checks them; ``drawn`` when some of its
    inputs are drawn at random (through :func:`seeded`), so that a course can draw its own.

    The checker marks each part's end with :func:`part`. The wrapper it returns takes one more
    keyword, ``variant``: a non-zero ``variant`` draws other inputs, and ``variant="course"``
    (a course's hidden test) the inputs of the course being graded (:func:`course_variant`).
    """

    def decorate(checker: Checker) -> Checker:
        @functools.wraps(checker)
        def wrapper(*args: Any, variant: int | str = 0, **kwargs: Any) -> Any:
            token = _VARIANT.set(_COURSE.get() if variant == "course" else int(variant))
            try:
                return checker(*args, **kwargs)
            finally:
                _VARIANT.reset(token)

        wrapper.parts = names  # type: ignore[attr-defined]
        wrapper.drawn = drawn  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate


@contextlib.contextmanager
def part(name: str) -> Iterator[None]:
    """One graded part of a check: passed when the block ends without a hint."""
    yield
    record = _PARTS.get()
    if record is not None:
        record.append(name)


@contextlib.contextmanager
def counting_parts() -> Iterator[list[str]]:
    """The names of the parts passed within the block, as a list that grows (the course's grader)."""
    record: list[str] = []
    token = _PARTS.set(record)
    try:
        yield record
    finally:
        _PARTS.reset(token)


@contextlib.contextmanager
def course_variant(variant: int) -> Iterator[None]:
    """Within the block, a check's ``variant="course"`` is ``variant``: the course's grader sets its
    own (``c.GradeInIsolation.variant``), which students never see."""
    token = _COURSE.set(variant)
    try:
        yield
    finally:
        _COURSE.reset(token)


def seeded(seed: int) -> int:
    """The seed a checker draws its random inputs from: ``seed`` itself, except in a course's hidden
    test, whose ``variant`` mixes in so that the inputs are ones no published notebook shows."""
    variant = _VARIANT.get()
    return seed if variant == 0 else (seed * 1_000_003 + variant) % (2**31 - 1)


def _python_functions(value: Any) -> list[types.FunctionType]:
    """The Python functions behind ``value``: it, and what it wraps (``__wrapped__``), to the innermost."""
    found, seen = [], set()
    while value is not None and id(value) not in seen:
        seen.add(id(value))
        if isinstance(value, types.FunctionType):
            found.append(value)
        value = getattr(value, "__wrapped__", None)
    return found


def _refusing_code(label: str, why: str) -> types.CodeType:
    """The code of a function that raises CheckFailed("your function calls LABEL: WHY") whatever it is given.

    It names nothing from its globals (it runs with the globals of the function it stands in for):
    CheckFailed comes through ``__import__``.
    """
    message = f"your function calls {label}: {why}"
    namespace: dict[str, Any] = {}
    exec(compile("def refused(*args, **kwargs):\n"
                 f"    raise __import__('tx.exercises', fromlist=['CheckFailed']).CheckFailed({message!r})\n",
                 "<tx.exercises.forbidding>", "exec"), namespace)
    return namespace["refused"].__code__


@contextlib.contextmanager
def forbidding(targets: list[tuple[Any, str]], why: str) -> Iterator[None]:
    """Within the block, calling ``owner.name`` for any ``(owner, name)`` in ``targets`` raises CheckFailed.

    An exercise that says "without calling torch.softmax" checks it: the learner's function
    is called inside this block. The checker computes its own expected values outside it.
    Two things change within the block. The attribute itself is a stand-in that refuses; and
    where the target is a Python function (or wraps one), the function's own code is swapped
    for code that refuses, so that a reference taken before the block, under any name
    (``_merge = tx.subwords.merge_pair``), or a function that wraps it, refuses too.
    """
    # A class's inherited method is restored by deleting the stand-in, not by copying it down.
    saved = [(owner, name, getattr(owner, name), isinstance(owner, type) and name not in vars(owner))
             for owner, name in targets]
    swapped: list[tuple[types.FunctionType, types.CodeType, Any, Any]] = []

    def refuse(name: str) -> Callable[..., Any]:
        def refused(*args: Any, **kwargs: Any) -> Any:
            raise CheckFailed(f"your function calls {name}: {why}")
        return refused

    try:
        for owner, name, original, _ in saved:
            label = f"{getattr(owner, '__name__', type(owner).__name__)}.{name}"
            for function in _python_functions(original):
                if function.__code__.co_freevars:  # a closure's code cannot be swapped; what it wraps is
                    continue
                swapped.append((function, function.__code__, function.__defaults__, function.__kwdefaults__))
                function.__code__ = _refusing_code(label, why)
                function.__defaults__ = function.__kwdefaults__ = None
            setattr(owner, name, refuse(label))
        yield
    finally:
        for function, code, defaults, kwdefaults in reversed(swapped):
            function.__code__, function.__defaults__, function.__kwdefaults__ = code, defaults, kwdefaults
        for owner, name, original, inherited in reversed(saved):
            if inherited:
                delattr(owner, name)
            else:
                setattr(owner, name, original)


_RULE: contextvars.ContextVar[tuple[Any, str] | None] = contextvars.ContextVar("tx_exercises_rule", default=None)


def forbids(targets: Any, why: str) -> Callable[[Checker], Checker]:
    """A checker's rule: the learner's answer may not call ``targets`` (a list of ``(owner, name)``, or a
    function that returns one), ``why`` saying what to do instead.

    While the checker runs, :func:`call` calls the learner's function under :func:`forbidding`.
    The rule is also the checker's ``forbidden`` attribute: the course's grader
    (:mod:`tx.exercises.grading`) reads it to forbid the targets in the student's process before
    any of the student's code runs.
    """

    def decorate(checker: Checker) -> Checker:
        @functools.wraps(checker)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            token = _RULE.set((targets, why))
            try:
                return checker(*args, **kwargs)
            finally:
                _RULE.reset(token)

        wrapper.forbidden = (targets, why)  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate


def forbidden(checker: Callable[..., Any]) -> tuple[list[tuple[Any, str]], str] | None:
    """``(targets, why)`` of a checker's :func:`forbids` rule, its targets resolved; None if it has none."""
    rule = getattr(checker, "forbidden", None)
    return None if rule is None else _resolved(rule)


def _resolved(rule: tuple[Any, str]) -> tuple[list[tuple[Any, str]], str]:
    targets, why = rule
    return (targets() if callable(targets) else list(targets)), why


def tx_names(*names: str) -> list[tuple[Any, str]]:
    """``forbidding``'s targets for tx's own answer to an exercise: each name wherever tx offers it,
    at the top (``tx.attention``), in the module that defines it (``tx.attention.attention``) and
    in every other tx module that imported it (``tx.multi_head.attention``), under any name."""
    package = importlib.import_module("tx")
    targets = []
    for name in names:
        answer = getattr(package, name)
        importlib.import_module(answer.__module__)
        for module_name, module in sorted(sys.modules.items()):
            if module is None or not (module_name == "tx" or module_name.startswith("tx.")):
                continue
            targets += [(module, attr) for attr, value in sorted(vars(module).items()) if value is answer]
    return targets


def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call the learner's function; whatever it raises becomes a one-line hint.

    A stub still raising NotImplementedError gets "replace the raise line"; any other
    exception (an IndexError, a TypeError, ...) gets its type, its message and the line of
    the learner's code it came from (see :func:`raised_hint`), not a traceback through the
    checker. A CheckFailed raised inside (by :func:`forbidding`, say) passes unchanged.
    """
    if not callable(fn):
        raise CheckFailed(f"expected a function, got {type(fn).__name__}; define it in the cell above.")
    # The checker's rule (forbids); the course's grader applies it in the student's own process instead.
    rule = None if getattr(fn, "in_isolation", False) else _RULE.get()
    try:
        with forbidding(*_resolved(rule)) if rule else contextlib.nullcontext():
            return fn(*args, **kwargs)
    except NotImplementedError:
        raise CheckFailed(
            f"{getattr(fn, '__name__', 'your function')} still raises NotImplementedError: "
            "replace the `raise NotImplementedError` line with your code, run that cell, then this one."
        ) from None
    except CheckFailed:
        raise
    except Exception as error:  # noqa: BLE001 - whatever the learner's code raises is shown as a hint
        raise CheckFailed(raised_hint(fn, error)) from None


_TX = Path(__file__).resolve().parents[1]
_LIBRARIES = {Path(p).resolve() for key in ("stdlib", "platstdlib", "purelib", "platlib")
              if (p := sysconfig.get_paths().get(key))}
_MESSAGE_CHARS = 300  # the hint is one line; a long message is cut here


def _inside(filename: str, folders: Any) -> bool:
    try:
        path = Path(filename).resolve()
    except (OSError, ValueError):
        return False
    return any(path.is_relative_to(folder) for folder in folders)


def learners_frame(error: BaseException) -> tuple[str, int] | None:
    """``(filename, line number)`` of the learner's code that ``error`` came through, innermost first.

    The learner's code is a frame whose file is neither inside tx/ nor inside an installed
    library (torch, the standard library): a notebook cell (the file IPython writes for each cell) or a
    file of the learner's. Failing that, the innermost frame outside tx/. None if every
    frame is tx's own (or there is no traceback).
    """
    frames = []
    tb = error.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    outside_tx = [f for f in frames if not _inside(f[0], [_TX])]
    own = [f for f in outside_tx if not _inside(f[0], _LIBRARIES)]
    return (own or outside_tx or [None])[-1]


def _where(filename: str) -> str:
    """How Jupyter names a cell's code ("Cell In[7]"), else the file's name."""
    try:
        from IPython import get_ipython

        shell = get_ipython()
        if shell is not None:
            kind, name = shell.compile.format_code_name(filename) or (None, None)
            if kind:
                return f"{kind} {name}"
    except Exception:  # noqa: BLE001 - outside IPython, or an IPython without format_code_name
        pass
    return Path(filename).name


def raised_hint(fn: Callable[..., Any], error: BaseException) -> str:
    """One line: which exception the learner's function raised, its message, and the learner's line."""
    name = getattr(fn, "__name__", "your function")
    message = " ".join(str(error).split())
    if len(message) > _MESSAGE_CHARS:
        message = message[: _MESSAGE_CHARS - 1] + "…"
    what = f"{type(error).__name__}: {message}" if message else type(error).__name__
    frame = learners_frame(error)
    if frame is None:
        return f"{name} raised {what}."
    filename, lineno = frame
    code = linecache.getline(filename, lineno).strip()
    line = f"{_where(filename)}, line {lineno}" + (f": `{code}`" if code else "")
    return f"{name} raised {what} (in {line})"


def as_shape(got: Any, what: str = "the shape", length: int | None = None) -> tuple[int, ...]:
    """The learner's answer as a tuple of ints (``length`` of them, if given), or CheckFailed saying what to return."""
    count = {2: "two", 3: "three", 4: "four"}.get(length, str(length)) + " " if length else ""
    try:
        shape = tuple(int(n) for n in got)
        if any(isinstance(n, bool) or float(n) != int(n) for n in got):
            shape = None  # 2.5 (or True) is not a length
    except (TypeError, ValueError, OverflowError):
        shape = None
    if shape is None or (length is not None and len(shape) != length):
        raise CheckFailed(f"return {what} as a tuple of {count}integers, got {got!r}.")
    return shape


def assert_tensor(got: Any, expected: Tensor, what: str, atol: float = 1e-5, rtol: float = 1e-4,
                  dtype: torch.dtype | None = None) -> None:
    """CheckFailed unless ``got`` is a tensor of ``expected``'s shape with close values; the hint says where.

    ``nan`` and ``inf`` never pass where ``expected`` is finite. With ``dtype`` given, the
    answer must have that dtype too (a float where ids are asked for, say, is wrong).
    """
    if not isinstance(got, Tensor):
        raise CheckFailed(f"{what} should be a torch.Tensor of shape {tuple(expected.shape)}, got {type(got).__name__}.")
    if got.shape != expected.shape:
        raise CheckFailed(f"{what} has shape {tuple(got.shape)}; expected {tuple(expected.shape)}.")
    if dtype is not None and got.dtype != dtype:
        raise CheckFailed(f"{what} has dtype {got.dtype}; expected {dtype}.")
    got, expected = got.detach().to(torch.float64), expected.detach().to(torch.float64)
    bad_finite = ~torch.isfinite(got) & torch.isfinite(expected)
    if bool(bad_finite.any()):
        index = tuple(int(i) for i in bad_finite.nonzero()[0])
        raise CheckFailed(
            f"{what} holds {got[index].item()} at index {index}, where {expected[index].item():.6g} is expected "
            f"({int(bad_finite.sum())} of {bad_finite.numel()} entries are nan or inf): look for an overflow, "
            "a division by zero or the log of 0."
        )
    bad = ~torch.isclose(got, expected, atol=atol, rtol=rtol, equal_nan=True)
    if bool(bad.any()):
        index = tuple(int(i) for i in bad.nonzero()[0])
        raise CheckFailed(
            f"{what} differs at index {index}: got {got[index].item():.6g}, expected {expected[index].item():.6g} "
            f"({int(bad.sum())} of {bad.numel()} entries differ)."
        )


def as_number(got: Any, what: str) -> float:
    """``got`` as a finite float (from an int, a float or a one-element tensor), or CheckFailed saying what came back."""
    if isinstance(got, Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        shape = f" of shape {tuple(got.shape)}" if isinstance(got, Tensor) else ""
        raise CheckFailed(f"{what} should be one number, got {type(got).__name__}{shape}.")
    if not math.isfinite(got):
        raise CheckFailed(f"{what} is {got}, not a finite number: look for an overflow, a division by zero or the log of 0.")
    return float(got)


def as_count(got: Any, wrong: str) -> int:
    """``got`` as a whole number (an int, a whole float or a one-element tensor holding one); else
    CheckFailed(``wrong``), the checker's own words for what to return, ``{got!r}`` and ``{kind}`` filled in."""
    if isinstance(got, Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, float) and got.is_integer():
        got = int(got)
    if not isinstance(got, int) or isinstance(got, bool):
        raise CheckFailed(wrong.format(got=got, kind=type(got).__name__))
    return got


def assert_number(got: Any, expected: float, what: str, tol: float = 1e-3) -> None:
    """CheckFailed unless ``got`` is a finite number within ``tol`` of ``expected``."""
    value = as_number(got, what)
    if not abs(value - expected) <= tol:
        raise CheckFailed(f"{what} is {value:.6g}; expected {expected:.6g} (within {tol:.3g}).")


def __getattr__(name: str) -> Any:
    # tx.exercises.ch03 and friends (a1 for appendix A1) load on first use.
    if name.startswith("ch") or name == "learner" or (name[:1] == "a" and name[1:].isdigit()):
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'tx.exercises' has no attribute {name!r}")


# In Jupyter, a check cell whose answer cell failed says so in one line (tx.exercises.missing).
from .missing import install as _install_missing_hint  # noqa: E402

_install_missing_hint(learners_frame, CheckFailed)
