"""Checkers for appendix A1, training at scale.

Axes: M micro-batches of one batch, B sentences, T target length, V vocabulary size. Each
checker calls the learner's function on inputs of its own, compares the answer with tx or
torch, and prints one line when it is right.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import torch
from torch import Tensor, nn

from ..train import loss_fn
from . import CheckFailed, as_number, assert_number, call, keeps_random_state, passed

__all__ = ["check_accumulation_weights", "check_bf16_spacing"]

_PAD = 0


def _weights(got: Any, M: int, what: str) -> list[float]:
    """The learner's answer as M finite floats, or CheckFailed saying what to return."""
    if isinstance(got, Tensor) or type(got).__name__ == "ndarray":  # a tensor or an array [M] will do
        got = got.tolist()
    if not isinstance(got, (list, tuple)) or len(got) != M:
        count = f"{len(got)} numbers" if isinstance(got, (list, tuple)) else type(got).__name__
        raise CheckFailed(f"{what} should be a list of {M} numbers, one per micro-batch, got {count}.")
    return [as_number(w, f"{what}[{m}]") for m, w in enumerate(got)]


def _gradient(model: nn.Module, parts: Sequence[tuple[Tensor, Tensor]], weights: Sequence[float]) -> Tensor:
    """The gradient, flattened, accumulated over ``weights[m] * mean loss of parts[m]``, one backward() each."""
    model.zero_grad()
    for (x, y), w in zip(parts, weights):
        (w * loss_fn(model(x), y, _PAD, 0.1)).backward()
    return torch.cat([p.grad.flatten() for p in model.parameters()])


@keeps_random_state
def check_accumulation_weights(fn: Callable[[Sequence[int]], Any]) -> None:
    """``fn(tokens [M]) -> [M]``: the factor of each micro-batch's mean loss, so that the accumulated
    gradient is the whole batch's."""
    torch.manual_seed(103)
    V, T = 12, 9
    model = nn.Sequential(nn.Embedding(V, 8), nn.Linear(8, V))  # logits [B, T, V] for token ids [B, T]
    g = torch.Generator().manual_seed(103)
    hidden = [int(n) for n in torch.randint(1, 4, (3,), generator=g)]  # rows per micro-batch
    cases = [  # the rows of each micro-batch, and each row's number of target tokens
        [[2, 3], [9, 8]],
        [[1], [5, 9], [4, 2, 7]],
        [[9], [1], [3, 2]],
        [[3, 3], [6]],  # equal token counts: equal weights are right here, and only here
        [[int(n) for n in torch.randint(1, T + 1, (rows,), generator=g)] for rows in hidden],
    ]
    for case in cases:
        parts = []
        for lengths in case:
            y = torch.randint(1, V, (len(lengths), T), generator=g)
            y[torch.arange(T) >= torch.tensor(lengths)[:, None]] = _PAD
            parts.append((torch.randint(1, V, (len(lengths), T), generator=g), y))
        tokens = [sum(lengths) for lengths in case]
        what = f"accumulation_weights({tokens})"
        got = _weights(call(fn, list(tokens)), len(tokens), what)
        N, M = sum(tokens), len(tokens)
        mistakes = [
            ([1 / M] * M, "equal weights give every micro-batch's mean the same say, so a token of a small "
             "micro-batch counts more than one of a large one. Weigh each mean by its share of the batch's tokens."),
            ([float(n) for n in tokens], "the gradient comes out sum(tokens) times too large: each mean times its "
             "tokens is that micro-batch's summed token losses; divide by the tokens of the whole batch."),
            ([1.0] * M, "that adds the micro-batches' means; the batch's mean is a weighted average of them."),
            ([N / n for n in tokens], "upside down: a micro-batch with more tokens must weigh more, not less."),
            ([1 / n for n in tokens], "that divides each mean by its tokens once more. Multiplied by its tokens, "
             "a mean gives back the micro-batch's summed token losses; the batch's mean divides their sum by the "
             "tokens of the whole batch."),
            ([1 / N] * M, "that would be right if each micro-batch's loss were the sum of its token losses; "
             "tx.train.loss_fn returns their mean."),
        ]
        right = [n / N for n in tokens]
        for weights, hint in mistakes:
            if all(math.isclose(a, b, rel_tol=1e-6) for a, b in zip(got, weights)) and not all(
                math.isclose(a, b, rel_tol=1e-6) for a, b in zip(right, weights)
            ):
                raise CheckFailed(f"{what} is {[round(w, 4) for w in got]}: {hint}")
        scale = sum(got)
        if scale and not math.isclose(scale, 1.0, rel_tol=1e-4) and all(
            math.isclose(w / scale, r, rel_tol=1e-4) for w, r in zip(got, right)
        ):
            raise CheckFailed(f"{what} is {[round(w, 4) for w in got]}: in the right proportions, but they add up "
                              f"to {scale:.6g}, which scales the gradient by as much; make them add up to 1.")
        x, y = torch.cat([x for x, _ in parts]), torch.cat([y for _, y in parts])
        whole = _gradient(model, [(x, y)], [1.0])
        accumulated = _gradient(model, parts, got)
        if not torch.allclose(accumulated, whole, rtol=1e-4, atol=1e-6):
            gap = float((accumulated - whole).abs().max())
            raise CheckFailed(f"with {what} = {[round(w, 4) for w in got]}, the accumulated gradient differs from "
                              f"the whole batch's by up to {gap:.3g} (the gradient's largest entry is "
                              f"{float(whole.abs().max()):.3g}): weigh each micro-batch's mean by its share of the batch's tokens.")
    passed("your weights make the micro-batches' gradients add up to the whole batch's.")


def _spacing(x: float, dtype: torch.dtype) -> float:
    """The distance from the representable number at |x| to the next one up, in ``dtype``."""
    v = torch.tensor(abs(x), dtype=dtype)
    return float(torch.nextafter(v, torch.tensor(math.inf, dtype=dtype)).float() - v.float())


def check_bf16_spacing(fn: Callable[[float], Any]) -> None:
    """``fn(x) -> float``: the gap from the bf16 number x to the next one away from zero, as torch.nextafter finds it."""
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
