"""Checkers for chapter 6, positional encoding.

Axes: P positions, D d_model. PE[pos, 2i] = sin(pos / 10000^(2i/D)), PE[pos, 2i+1] = cos(same).
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch import Tensor

import sys

from ..positional_encoding import positional_encoding
from . import CheckFailed, as_number, assert_number, assert_tensor, call, forbidding, passed

__all__ = ["check_pe_by_hand", "check_positional_encoding", "check_offset_dot"]


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


def _without_tx_table(why: str) -> Any:
    """Within the block, tx.positional_encoding refuses to build its table."""
    import tx

    module = sys.modules[positional_encoding.__module__]  # tx.positional_encoding is also the function's name
    return forbidding([(tx, "positional_encoding"), (module, "positional_encoding")], why)


def check_pe_by_hand(fn: Callable[..., Any]) -> None:
    """``fn()`` must return the 6 numbers of PE[5] for d_model = 6."""
    expected = positional_encoding(6, 6)[5].double()
    with _without_tx_table("work the six numbers out with math.sin and math.cos."):
        got = call(fn)
    try:
        got = torch.as_tensor(got, dtype=torch.float64).flatten()
    except (TypeError, ValueError, RuntimeError):
        raise CheckFailed(f"return a list of 6 numbers, got {type(got).__name__}.") from None
    if got.numel() != 6:
        raise CheckFailed(f"PE[5] has d_model = 6 numbers; you returned {got.numel()}.")
    hint = _layout_hint(got, expected)
    if hint is not None:
        raise CheckFailed(hint)
    assert_tensor(got, expected, "your PE[5] for d_model = 6", atol=1e-4)
    passed("PE[5] = [sin 5, cos 5, sin(5/10000^(2/6)), cos(...), sin(5/10000^(4/6)), cos(...)].")


def check_positional_encoding(fn: Callable[..., Any]) -> None:
    """``fn(max_len, d_model) -> [max_len, d_model]`` must equal :func:`tx.positional_encoding`."""
    for max_len, d_model in [(4, 4), (7, 6), (20, 512), (50, 128)]:
        expected = positional_encoding(max_len, d_model)
        got = call(fn, max_len, d_model)
        if isinstance(got, Tensor) and got.shape == expected.shape:
            hint = _layout_hint(got.detach().to(expected.dtype), expected)
            if hint is not None:
                raise CheckFailed(f"for max_len={max_len}, d_model={d_model}: {hint}")
        assert_tensor(got, expected, f"your encoding for max_len={max_len}, d_model={d_model} (index = [pos, dim])")
    passed("your table equals tx.positional_encoding, which tx.Embedding adds to every sentence.")


def check_offset_dot(fn: Callable[..., Any]) -> None:
    """``fn(k, d_model) -> float`` must equal PE[pos] . PE[pos + k], the same for every pos."""
    n = 100  # positions pos = 0 .. 99
    g = torch.Generator().manual_seed(6)
    hidden_k, hidden_d = int(torch.randint(4, 90, (1,), generator=g)), 2 * int(torch.randint(3, 60, (1,), generator=g))
    cases = [(d_model, k) for d_model in (4, 64, 512) for k in (0, 1, 3, 10, 37)] + [(hidden_d, hidden_k)]
    for d_model, k in cases:
            pe = positional_encoding(n + k, d_model).double()
            dots = (pe[:n] * pe[k:]).sum(dim=-1)  # [n]: one dot product per pos
            with _without_tx_table("compute the dot product from k and d_model alone, as a sum of cosines."):
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
    passed("PE[pos] . PE[pos + k] = sum over pairs of cos(k * omega_i), whatever pos is.")

