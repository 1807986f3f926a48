"""Checkers for the book's exercises, and the learner edition without solutions.

Each chapter's exercises have a checker here, in ``tx.exercises.chNN``. A checker takes
the learner's answer (usually a function), compares it with tx's tested implementation
on inputs of its own, and either prints one line that says it is right or raises
``AssertionError`` with a hint: the expected shape, a value that differs, the property
that failed.

``python -m tx.exercises learner OUTDIR`` writes every chapter with the solutions
removed and outputs cleared (see :mod:`tx.exercises.learner`).
"""

from __future__ import annotations

import functools
import importlib
from typing import Any, Callable, TypeVar

import torch
from torch import Tensor

__all__ = ["call", "as_shape", "assert_tensor", "assert_number", "passed", "keeps_random_state"]

Checker = TypeVar("Checker", bound=Callable[..., Any])


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


def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call the learner's function; a stub still raising NotImplementedError becomes a hint."""
    if not callable(fn):
        raise AssertionError(f"expected a function, got {type(fn).__name__}; define it in the cell above.")
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        raise AssertionError(
            f"{getattr(fn, '__name__', 'your function')} still raises NotImplementedError: "
            "replace the `raise NotImplementedError` line with your code, run that cell, then this one."
        ) from None


def as_shape(got: Any, what: str = "the shape", length: int | None = None) -> tuple[int, ...]:
    """The learner's answer as a tuple of ints (``length`` of them, if given), or an AssertionError saying what to return."""
    count = {2: "two", 3: "three", 4: "four"}.get(length, str(length)) + " " if length else ""
    try:
        shape = tuple(int(n) for n in got)
    except (TypeError, ValueError):
        shape = None
    if shape is None or (length is not None and len(shape) != length):
        raise AssertionError(f"return {what} as a tuple of {count}integers, got {got!r}.")
    return shape


def assert_tensor(got: Any, expected: Tensor, what: str, atol: float = 1e-5, rtol: float = 1e-4) -> None:
    """AssertionError unless ``got`` is a tensor of ``expected``'s shape with close values; the hint says where."""
    if not isinstance(got, Tensor):
        raise AssertionError(f"{what} should be a torch.Tensor of shape {tuple(expected.shape)}, got {type(got).__name__}.")
    if got.shape != expected.shape:
        raise AssertionError(f"{what} has shape {tuple(got.shape)}; expected {tuple(expected.shape)}.")
    got, expected = got.detach().to(torch.float64), expected.detach().to(torch.float64)
    bad = ~torch.isclose(got, expected, atol=atol, rtol=rtol, equal_nan=True)
    if bool(bad.any()):
        index = tuple(int(i) for i in bad.nonzero()[0])
        raise AssertionError(
            f"{what} differs at index {index}: got {got[index].item():.6g}, expected {expected[index].item():.6g} "
            f"({int(bad.sum())} of {bad.numel()} entries differ)."
        )


def assert_number(got: Any, expected: float, what: str, tol: float = 1e-3) -> None:
    """AssertionError unless ``got`` is a number within ``tol`` of ``expected``."""
    if isinstance(got, Tensor) and got.numel() == 1:
        got = got.item()
    if not isinstance(got, (int, float)):
        raise AssertionError(f"{what} should be a number, got {type(got).__name__}.")
    if abs(got - expected) > tol:
        raise AssertionError(f"{what} is {got:.6g}; expected {expected:.6g} (within {tol}).")


def __getattr__(name: str) -> Any:
    # tx.exercises.ch03 and friends load on first use.
    if name.startswith("ch") or name == "learner":
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'tx.exercises' has no attribute {name!r}")
