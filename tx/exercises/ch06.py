"""Checkers for chapter 6, positional encoding.

Axes: P positions, D d_model. PE[pos, 2i] = sin(pos / 10000^(2i/D)), PE[pos, 2i+1] = cos(same).
"""

from __future__ import annotations

import math
import sys
from typing import Any, Callable

import torch
from torch import Tensor

from ..positional_encoding import positional_encoding
from . import CheckFailed, as_number, assert_number, assert_tensor, call, forbids, part, parts, passed, seeded

__all__ = ["check_positional_encoding", "check_offset_dot", "check_offset_between"]


def _halves(d_model: int) -> Tensor:
    """Column order of the concatenated layout: every sine (even dims), then every cosine."""
    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)])


def _layout_hint(got: Tensor, expected: Tensor) -> str | None:
    """A hint when ``got`` has the right numbers in a familiar wrong arrangement, else None."""
    d_model = expected.shape[-1]
    close = lambda a, b: torch.allclose(a, b, atol=1e-5, rtol=1e-4)  # noqa: E731
    if close(got, expected):
        return None
    if close(got, expected[..., _halves(d_model)]):
        return ("you wrote all the sines first and then all the cosines (the concatenated layout of the "
                "post's figure); the paper and tx interleave them: sine in every even dimension 2i, "
                "cosine in the odd dimension 2i + 1 next to it.")
    swapped = expected.clone()
    swapped[..., 0::2], swapped[..., 1::2] = expected[..., 1::2], expected[..., 0::2]
    if close(got, swapped):
        return "sines and cosines are swapped: the even dimensions 2i hold the sines, the odd ones the cosines."
    if close(got[..., :2], expected[..., :2]):
        return ("dimensions 0 and 1 are right, so the sines and cosines are in place; check the frequency: "
                "pair i (dimensions 2i and 2i + 1) divides pos by 10000 ** (2i / d_model), with 2i the even "
                "dimension, not i.")
    return None


def _tx_table() -> list[tuple[Any, str]]:
    """tx.positional_encoding, where tx offers it: the table each of these exercises asks about."""
    import tx

    module = sys.modules[positional_encoding.__module__]  # tx.positional_encoding is also the function's name
    return [(tx, "positional_encoding"), (module, "positional_encoding")]


@forbids(_tx_table, "build the table yourself, with torch.arange, sin and cos.")
@parts("small tables", "wide tables, the paper's d_model included")
def check_positional_encoding(fn: Callable[..., Any]) -> None:
    """``fn(max_len, d_model) -> [max_len, d_model]`` must equal :func:`tx.positional_encoding`."""
    cases = {"small tables": [(4, 4), (7, 6)], "wide tables, the paper's d_model included": [(20, 512), (50, 128)]}
    for name, sizes in cases.items():
        with part(name):
            for max_len, d_model in sizes:
                _check_positional_encoding(fn, max_len, d_model)
    passed("your table equals tx.positional_encoding, which tx.Embedding adds to every sentence.")


def _check_positional_encoding(fn: Callable[..., Any], max_len: int, d_model: int) -> None:
    expected = positional_encoding(max_len, d_model)
    got = call(fn, max_len, d_model)
    if isinstance(got, Tensor) and got.shape == expected.shape:
        hint = _layout_hint(got.detach().to(expected.dtype), expected)
        if hint is not None:
            raise CheckFailed(f"for max_len={max_len}, d_model={d_model}: {hint}")
    assert_tensor(got, expected, f"your encoding for max_len={max_len}, d_model={d_model} (index = [pos, dim])")


@forbids(_tx_table, "compute the dot product from k and d_model alone, as a sum of cosines.")
@parts("offsets 0 to 37 at d_model 4, 64 and 512", "a size drawn at random", drawn=True)
def check_offset_dot(fn: Callable[..., Any]) -> None:
    """``fn(k, d_model) -> float`` must equal PE[pos] . PE[pos + k], the same for every pos."""
    g = torch.Generator().manual_seed(seeded(6))
    hidden_k, hidden_d = int(torch.randint(4, 90, (1,), generator=g)), 2 * int(torch.randint(3, 60, (1,), generator=g))
    # k = 0 is not a part of its own: d_model / 2, a constant, would earn it.
    cases = {
        "offsets 0 to 37 at d_model 4, 64 and 512": [(d_model, k) for d_model in (4, 64, 512)
                                                     for k in (0, 1, 3, 10, 37)],
        "a size drawn at random": [(hidden_d, hidden_k)],
    }
    for name, sizes in cases.items():
        with part(name):
            for d_model, k in sizes:
                _check_offset_dot(fn, d_model, k)
    passed("PE[pos] . PE[pos + k] = sum over pairs of cos(k * omega_i), whatever pos is.")


def _check_offset_dot(fn: Callable[..., Any], d_model: int, k: int) -> None:
    n = 100  # positions pos = 0 .. 99
    pe = positional_encoding(n + k, d_model).double()
    dots = (pe[:n] * pe[k:]).sum(dim=-1)  # [n]: one dot product per pos
    got = call(fn, k, d_model)
    if isinstance(got, Tensor) and got.numel() != 1 or isinstance(got, (list, tuple)):
        raise CheckFailed(f"offset_dot should return a number, got {type(got).__name__}.")
    got = as_number(got, f"offset_dot({k}, {d_model})")
    if abs(got - float(dots.mean()) * 2) <= 1e-3 and k > 0:
        raise CheckFailed(f"offset_dot({k}, {d_model}) = {got:.6g} is twice the dot product: each of the "
                          "d_model / 2 pairs adds one cosine, cos(k * omega_i).")
    if k == 0 and abs(got - d_model / 2) > 1e-3:
        raise CheckFailed(
            f"offset_dot(0, {d_model}) = {got:.6g}; a vector with itself gives d_model / 2 = "
            f"{d_model / 2:g}, since every pair adds sin^2 + cos^2 = 1."
        )
    assert_number(got, float(dots.mean()), f"offset_dot({k}, {d_model})", tol=1e-3)


def _wrapped_offset(k: int, omega: float) -> float:
    """The offset that pair ``omega`` shows for ``k``: its turn k * omega brought into (-pi, pi], divided by omega."""
    return (math.remainder(k * omega, 2 * math.pi)) / omega


_POSITIVE, _LONG, _BACK, _DRAWN = ("positive offsets", "a long offset in a narrow encoding",
                                  "zero and negative offsets", "a size drawn at random")


@forbids(_tx_table, "find k from the two vectors alone: by how much has each pair turned?")
@parts(_POSITIVE, _LONG, _BACK, _DRAWN, drawn=True)
def check_offset_between(fn: Callable[..., Any]) -> None:
    """``fn(pe_a, pe_b) -> int`` must give k when pe_a = PE[pos] and pe_b = PE[pos + k] ([D] each), pos unknown."""
    g = torch.Generator().manual_seed(seeded(6))
    hidden_d = 2 * int(torch.randint(3, 100, (1,), generator=g))
    hidden_k = int(torch.randint(-300, 301, (1,), generator=g))
    # (d_model, k, pos): positive offsets first, so that a reversed sign shows there; then offsets past
    # pair 0's full turn (2 pi = 6.28 positions), 0, negative ones, and sizes the learner never sees.
    cases = {
        _POSITIVE: [(4, 3, 10), (128, 7, 0), (512, 40, 123)],
        _LONG: [(6, 250, 37)],
        _BACK: [(64, 0, 55), (128, -5, 80), (512, -300, 400)],
        _DRAWN: [(hidden_d, hidden_k, 300 + int(torch.randint(0, 500, (1,), generator=g)))],
    }
    for name, offsets in cases.items():
        with part(name):
            for d_model, k, pos in offsets:
                _check_offset_between(fn, d_model, k, pos)
    passed("every pair turns by k * omega_i whatever pos is, so two encodings give away their offset, "
           "its sign included, though neither says where it is.")


def _check_offset_between(fn: Callable[..., Any], d_model: int, k: int, pos: int) -> None:
    table = positional_encoding(max(pos, pos + k) + 1, d_model)
    got = call(fn, table[pos].clone(), table[pos + k].clone())
    what = f"for d_model={d_model} and an offset k={k} you gave"
    if isinstance(got, (list, tuple)) or isinstance(got, Tensor) and got.numel() != 1:
        raise CheckFailed(f"return the offset as one int, got {type(got).__name__}.")
    got = as_number(got, f"the offset for d_model={d_model}, k={k}")
    if abs(got - k) <= 1e-6:
        return
    if abs(got - k) < 0.5:
        raise CheckFailed(f"{what} {got:.6g}: an offset is a whole number of positions; round it.")
    if k != 0 and abs(got + k) < 0.5:
        if k > 0:
            raise CheckFailed(f"{what} {got:.6g}, the offset from pe_b back to pe_a: pe_b = PE[pos + k], so "
                              "k is positive when pe_b comes later. Measure the turn from pe_a to pe_b.")
        raise CheckFailed(f"{what} {got:.6g}: the right size but not the direction. The cosine of the turn "
                          "(the dot product of the previous exercise) cannot tell k from -k; its sine, which "
                          "changes sign with k, can: math.atan2(sine, cosine) gives the signed angle.")
    for two_i in range(0, d_model, 2):
        omega = 1 / 10000 ** (two_i / d_model)
        wrapped = _wrapped_offset(k, omega)
        if abs(wrapped - k) > 0.5 and abs(got - wrapped) < 0.5:
            raise CheckFailed(
                f"{what} {got:.6g}, what pair {two_i // 2} shows: it turns a full circle every "
                f"{2 * math.pi / omega:.3g} positions, so its angle gives k only up to whole turns. Read a pair "
                "slow enough that |k * omega_i| stays below half a turn, pi; the last pair is the slowest."
            )
    raise CheckFailed(f"{what} {got:.6g}. Pair i turns by k * omega_i radians, omega_i = "
                      "1 / 10000 ** (2i / d_model) with 2i the even dimension; the pair holds (sin, cos).")
