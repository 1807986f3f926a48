"""Argument checks for tx's public entry points, and ``guarded``, which runs them.

The functions a chapter teaches hold the computation only. Their checks live beside them,
in a function of the same arguments, and :func:`~tx.checks.guarded` runs that check before the body:
once per call from the user, never again inside it. A model's ``forward`` checks the token
ids; the layers it calls then trust what they are given, and the same layers called
directly by a reader check their own input.

Each raises ``TypeError`` (wrong kind of value) or ``ValueError`` (right kind, wrong value)
with a message that names the argument, says what it got and what it accepts. Most read
only Python values, tensor shapes and dtypes, so they cost next to nothing; two read tensor
contents: :func:`check_tokens` (one pass over the ids) and :func:`check_finite_weights` (a
pass over every weight, for load time, never for a decoding step).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import numbers
from typing import Any, Callable, Iterable, Iterator

import torch
from torch import Tensor, nn

__all__ = [
    "check_int", "check_float", "check_bool", "check_tensor", "check_same", "check_heads", "check_tokens",
    "check_dtype", "check_finite_weights", "ID_DTYPES", "guarded", "checked_once", "check_choice",
]

ID_DTYPES = (torch.long, torch.int32)  # the index types torch's embedding lookup reads

_checked = contextvars.ContextVar("tx_checked", default=False)  # inside a guarded call: its check has run


def guarded(check: Callable[..., None]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a function so that ``check(*args, **kwargs)`` runs before it, once per outside call.

    Inside a guarded call, every other guarded function runs without its check: the outer
    check has vouched for what flows in (``Transformer.forward`` checks the ids, so its
    attention layers skip theirs). Checks are skipped while torch.compile or the ONNX
    exporter traces the code: they read Python values, which would break the graph, and the
    caller checked its input before compiling or exporting.
    """

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            if torch.compiler.is_compiling() or torch.jit.is_tracing() or _checked.get():
                return fn(*args, **kwargs)
            check(*args, **kwargs)
            with checked_once():
                return fn(*args, **kwargs)

        return run

    return decorate


@contextlib.contextmanager
def checked_once() -> Iterator[None]:
    """Inside the block guarded functions skip their checks, as they do inside a guarded call.

    For a loop that has checked its input once and calls a guarded function at every step,
    as tx's decoding loops do (a benchmark of one decoding step uses it to time what they run).
    """
    token = _checked.set(True)
    try:
        yield
    finally:
        _checked.reset(token)


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


def check_tokens(tokens: Any, vocab_size: int, max_len: int, name: str, start: int = 0) -> None:
    """Raise a clear error unless ``tokens`` is a non-empty [B, L] tensor of valid ids (torch.long or torch.int32).

    ``start`` is the position of the first token (a decoding step after ``start`` cached ones).
    """
    if not isinstance(tokens, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of token ids, got {type(tokens).__name__}.")
    if tokens.dtype not in ID_DTYPES:
        if tokens.is_floating_point() or tokens.is_complex() or tokens.dtype == torch.bool:
            how = "Encode text with the model's vocabulary (tx.data.Vocab or tx.subwords.SubwordVocab), or convert "
        else:
            how = "Convert "
        raise TypeError(
            f"{name} must hold integer token ids as torch.long (or torch.int32), the types an embedding lookup "
            f"reads; got {tokens.dtype}. {how}ids stored as {tokens.dtype} with `.long()`."
        )
    if tokens.dim() != 2:
        raise ValueError(f"{name} must have shape [batch, length], got {tuple(tokens.shape)}.")
    if tokens.numel() == 0:
        raise ValueError(
            f"{name} is empty (shape {tuple(tokens.shape)}): give at least one sentence of at least one token."
        )
    if start + tokens.size(1) > max_len:
        raise ValueError(
            f"{name} reaches position {start + tokens.size(1)} but the model's max_len is {max_len}. "
            "Shorten the sequence, or build the model with a larger max_len."
        )
    low, high = (int(t) for t in torch.aminmax(tokens))  # one pass over the ids
    if low < 0 or high >= vocab_size:
        bad = low if low < 0 else high
        raise ValueError(
            f"{name} holds token id {bad}, outside the vocabulary of {vocab_size} tokens "
            f"(ids 0..{vocab_size - 1}). Encode with the vocabulary the model was built for."
        )


def check_dtype(name: str, value: Tensor, weights: Tensor, owner: str = "the model") -> None:
    """``value`` holds numbers of the same dtype as ``weights`` (any, under torch.autocast, which converts them)."""
    if value.dtype == weights.dtype or torch.is_autocast_enabled(value.device.type):
        return
    raise TypeError(
        f"{name} holds {value.dtype} numbers but {owner}'s weights are {weights.dtype}; a matrix product "
        f"needs both alike. Convert it with `.to({weights.dtype})`, or the model with `.to({value.dtype})`."
    )


def check_finite_weights(weights: nn.Module | Iterable[tuple[str, Tensor]], where: str) -> None:
    """Raise ValueError naming every tensor that holds NaN or inf: a model's parameters and buffers, or (name, tensor) pairs.

    A pass over every weight: call it where a model is loaded or handed over, not per step.
    """
    if isinstance(weights, nn.Module):
        weights = (*weights.named_parameters(), *weights.named_buffers())
    bad = []
    for name, t in weights:
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            nan = int(torch.isnan(t).sum())
            bad.append(f"{name} ({nan} NaN and {int(torch.isinf(t).sum())} inf of {t.numel()} numbers)")
    if bad:
        shown = ", ".join(bad[:4]) + (f" and {len(bad) - 4} more" if len(bad) > 4 else "")
        raise ValueError(
            f"{where} holds NaN or inf in {len(bad)} weight tensor(s): {shown}. Such a model gives nonsense "
            "without any error. The training that made it diverged (or the weights were damaged): use an "
            "earlier checkpoint, or train again with a lower lr_factor."
        )


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
