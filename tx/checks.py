"""Small argument checks shared by tx's public functions: one line per check at the call site.

Each raises ``TypeError`` (wrong kind of value) or ``ValueError`` (right kind, wrong value)
with a message that names the argument, says what it got and what it accepts. They read
only Python values and tensor shapes, never tensor contents, so they cost next to nothing.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from torch import Tensor

__all__ = ["check_int", "check_float", "check_bool", "check_tensor", "check_same", "check_heads"]


def check_int(name: str, value: Any, low: int | None = None, high: int | None = None) -> None:
    """``value`` is an int (not a bool) with ``low <= value <= high`` (either bound optional)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}.")
    _check_range(name, value, low, high)


def check_float(
    name: str, value: Any, low: float | None = None, high: float | None = None,
    low_open: bool = False, high_open: bool = False,
) -> None:
    """``value`` is a finite real number in the interval [low, high]; ``*_open`` excludes that end."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}.")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}.")
    _check_range(name, value, low, high, low_open, high_open)


def check_bool(name: str, value: Any) -> None:
    """``value`` is True or False."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}.")


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    """Raise ValueError unless ``value`` is one of ``choices``, listing them."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}.")


def check_tensor(name: str, value: Any, dims: int | tuple[int, ...] | None = None, floating: bool = False) -> None:
    """``value`` is a tensor with ``dims`` dimensions (one count, or a tuple of those allowed), floating-point if asked."""
    if not isinstance(value, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}.")
    allowed = (dims,) if isinstance(dims, int) else dims
    if allowed is not None and value.dim() not in allowed:
        want = " or ".join(str(d) for d in allowed)
        raise ValueError(f"{name} must have {want} dimensions, got shape {tuple(value.shape)}.")
    if floating and not value.is_floating_point():
        raise TypeError(f"{name} must hold floating-point numbers, got {value.dtype}; convert it with `.float()`.")


def check_same(what: str, a_name: str, a: Any, b_name: str, b: Any, hint: str) -> None:
    """``a == b``, else a ValueError that shows both values and ``hint`` (what to do)."""
    if a != b:
        raise ValueError(f"{what} must agree: {a_name} is {a} but {b_name} is {b}. {hint}")


def check_heads(d_model: int, n_heads: int) -> None:
    """``d_model`` and ``n_heads`` are positive ints and ``d_model`` splits evenly into ``n_heads`` heads."""
    check_int("d_model", d_model, low=1)
    check_int("n_heads", n_heads, low=1)
    if d_model % n_heads != 0:
        raise ValueError(
            f"d_model={d_model} is not divisible by n_heads={n_heads}: every head gets "
            f"d_model / n_heads features. Choose n_heads among the divisors of {d_model}."
        )


def _check_range(
    name: str, value: float, low: float | None, high: float | None, low_open: bool = False, high_open: bool = False
) -> None:
    below = low is not None and (value <= low if low_open else value < low)
    above = high is not None and (value >= high if high_open else value > high)
    if not (below or above):
        return
    if low is not None and high is not None:
        want = f"in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
    elif low is not None:
        want = f"{'more than' if low_open else 'at least'} {low}"
    else:
        want = f"{'less than' if high_open else 'at most'} {high}"
    raise ValueError(f"{name} must be {want}, got {value}.")
