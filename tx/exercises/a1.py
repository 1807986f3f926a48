"""Checkers for appendix A1, training at scale.

Axes: W processes (shards of a global batch). Each checker calls the learner's function on
inputs of its own, compares the answer with tx or torch, and prints one line when it is right.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import torch

from . import CheckFailed, as_number, assert_number, call, passed

__all__ = ["check_global_mean", "check_bf16_spacing"]


def check_global_mean(fn: Callable[[Sequence[float], Sequence[int]], Any]) -> None:
    """``fn(means [W], tokens [W]) -> float``: the mean over all tokens of W shards, from each shard's mean."""
    g = torch.Generator().manual_seed(101)
    hidden = ([float(x) for x in torch.rand(5, generator=g) * 6], [int(n) for n in torch.randint(1, 400, (5,), generator=g)])
    for means, tokens in [([2.0, 8.0], [300, 100]), ([4.5, 4.5], [17, 90]), ([1.0, 2.0, 3.0], [1, 1, 1]), hidden]:
        got = as_number(call(fn, list(means), list(tokens)), f"global_mean({means}, {tokens})")
        expected = sum(m * n for m, n in zip(means, tokens)) / sum(tokens)
        what = f"global_mean(means={[round(m, 3) for m in means]}, tokens={tokens}) is {got:.6g}, expected {expected:.6g}"
        plain = sum(means) / len(means)
        if not math.isclose(plain, expected, rel_tol=1e-9) and math.isclose(got, plain, rel_tol=1e-6):
            raise CheckFailed(f"{what}: that is the plain mean of the shards' means, which counts a token of a short "
                              "shard more than one of a long shard. Weigh each mean by its shard's tokens.")
        if math.isclose(got, sum(m * n for m, n in zip(means, tokens)), rel_tol=1e-6):
            raise CheckFailed(f"{what}: that is the sum of the token losses; divide by the number of tokens of all shards.")
        if math.isclose(got, sum(means), rel_tol=1e-6) and len(means) > 1:
            raise CheckFailed(f"{what}: that is the sum of the means; a mean over all tokens is a weighted average of them.")
        assert_number(got, expected, what, tol=1e-6 * max(1.0, abs(expected)))
    passed("your global mean weighs every shard by its tokens, as tx.train.batch_loss does.")


def _spacing(x: float, dtype: torch.dtype) -> float:
    """The distance from the representable number at |x| to the next one up, in ``dtype``."""
    v = torch.tensor(abs(x), dtype=dtype)
    return float(torch.nextafter(v, torch.tensor(math.inf, dtype=dtype)).float() - v.float())


def check_bf16_spacing(fn: Callable[[float], Any]) -> None:
    """``fn(x) -> float``: the gap between bf16 numbers at x (a power of two, 2 ** (exponent - 7))."""
    g = torch.Generator().manual_seed(102)
    hidden = [float(torch.tensor(v).bfloat16()) for v in (torch.rand(3, generator=g) * 1000 + 1).tolist()]
    for x in [1.0, 3.0, 0.1015625, 1024.0, -6.0, *hidden]:
        expected = _spacing(x, torch.bfloat16)
        got = as_number(call(fn, x), f"bf16_spacing({x})")
        what = f"bf16_spacing({x}) is {got:.6g}, expected {expected:.6g}"
        for name, dtype in (("float32, with its 23 stored bits", torch.float32),
                            ("float16, with its 10 stored bits", torch.float16)):
            if abs(x) < 60000 and math.isclose(got, _spacing(x, dtype), rel_tol=1e-6):
                raise CheckFailed(f"{what}: that is the spacing of {name}; bf16 stores 7 bits after the leading 1.")
        if math.isclose(got, expected / 2, rel_tol=1e-6):
            raise CheckFailed(f"{what}: half the gap, 2 ** (exponent - 8); bf16 stores 7 bits after the leading 1, "
                              "so neighbours differ by 2 ** (exponent - 7). (Half the gap is the largest rounding error.)")
        if x < 0 and math.isclose(got, -expected, rel_tol=1e-6):
            raise CheckFailed(f"{what}: a gap is a distance, positive also for negative x; use abs(x).")
        assert_number(got, expected, what, tol=1e-9 * expected)
    passed("your spacing matches torch's bf16 numbers: 2 ** (exponent - 7).")
