"""Checkers for appendix A1, training at scale.

Axes: M micro-batches of one batch, B sentences, T target length, V vocabulary size. Each
checker calls the learner's function on inputs of its own, compares the answer with tx or
torch, and prints one line when it is right.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterator, Sequence

import torch
from torch import Tensor, nn

from ..train import loss_fn
from . import CheckFailed, as_number, assert_number, call, keeps_random_state, part, parts, passed, seeded

__all__ = ["check_accumulate", "check_bf16_spacing"]

_PAD = 0


def _gradient(model: nn.Module, x: Tensor, y: Tensor) -> Tensor:
    """The gradient, flattened, of the mean loss (smoothing 0.1) of token ids x [B, T] against targets y [B, T]."""
    model.zero_grad()
    loss_fn(model(x), y, _PAD, 0.1).backward()
    return _grads(model)


class _OneShot:
    """The micro-batches as an iterator that can be read once, counting what is read and, through a hook on
    ``weight``, the backward passes that reached the model before each read.

    The course's grader sends it to the student's process with the model (the hook goes with it)
    and copies the counts back (``synced``).
    """

    synced = ("read", "backwards", "past_end")

    def __init__(self, parts: Sequence[tuple[Tensor, Tensor]], weight: Tensor) -> None:
        self.parts, self.read, self.backwards, self.past_end = list(parts), 0, 0, 0
        self.weight = weight
        self.handle = weight.register_hook(self._count)

    def __getstate__(self) -> dict:
        return {k: v for k, v in vars(self).items() if k != "handle"}

    def __setstate__(self, state: dict) -> None:
        vars(self).update(state)
        self.handle = self.weight.register_hook(self._count)

    def _count(self, grad: Tensor) -> None:
        self.backwards += 1

    def __iter__(self) -> "_OneShot":
        return self

    def __next__(self) -> tuple[Tensor, Tensor]:
        if self.read == len(self.parts):
            self.past_end += 1
            if self.past_end > 1:  # the first loop's own end is one read past the end; a second loop is another
                raise CheckFailed("micro_batches was read again after its last micro-batch: it can be read only "
                                  "once, as a stream from disk would be. Count the tokens as you go, in the one loop.")
            raise StopIteration
        if self.backwards < self.read:
            raise CheckFailed(f"micro-batch {self.read + 1} was read before backward() ran on micro-batch "
                              f"{self.read}: call backward() on each micro-batch's loss before reading the next, so "
                              "that its graph is freed; keeping them all costs the memory accumulation saves. "
                              "(A first pass that counts the tokens reads them all too: count as you go.)")
        self.read += 1
        return self.parts[self.read - 1]


def _grads(model: nn.Module) -> Tensor:
    """Every parameter's .grad, flattened into one vector (zeros where there is none)."""
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten() for p in model.parameters()])


def _close(a: Tensor, b: Tensor) -> bool:
    return torch.allclose(a, b, rtol=1e-4, atol=1e-6)


def _multiple(got: Tensor, of: Tensor) -> float | None:
    """The factor c with got = c * of, up to rounding, or None where got is no multiple of ``of``."""
    c = float(got @ of / (of @ of))
    return c if float((got - c * of).norm()) <= 1e-4 * float(got.norm()) + 1e-7 else None


_SET, _DRAWN = "micro-batches of set sizes", "sizes drawn at random"


@parts(_SET, _DRAWN, drawn=True)
@keeps_random_state
def check_accumulate(fn: Callable[[nn.Module, Iterator[tuple[Tensor, Tensor]], int], Any]) -> None:
    """``fn(model, micro_batches, pad_id) -> N``: leave in every ``.grad`` the gradient of the whole batch's mean
    loss, reading the (x [B_m, T], y [B_m, T]) pairs once with one backward() each; return the target tokens N."""
    torch.manual_seed(seeded(103))
    V, T = 12, 9
    model = nn.Sequential(nn.Embedding(V, 8), nn.Linear(8, V))  # logits [B, T, V] for token ids [B, T]
    g = torch.Generator().manual_seed(seeded(103))
    hidden = [int(n) for n in torch.randint(1, 4, (3,), generator=g)]  # rows per micro-batch
    cases = {  # the rows of each micro-batch, and each row's number of target tokens
        _SET: [
            [[2, 3], [9, 8]],
            [[1], [5, 9], [4, 2, 7]],
            [[9], [1], [3, 2]],
            [[3, 3], [6]],  # equal token counts: weighing the means equally is right here, and only here
        ],
        _DRAWN: [[[int(n) for n in torch.randint(1, T + 1, (rows,), generator=g)] for rows in hidden]],
    }
    for name, batches in cases.items():
        with part(name):
            for case in batches:
                _check_accumulate(fn, model, case, g, V, T)
    passed("your streamed micro-batches add up to the whole batch's gradient.")


def _check_accumulate(fn: Callable[[nn.Module, Iterator[tuple[Tensor, Tensor]], int], Any], model: nn.Module,
                      case: list[list[int]], g: torch.Generator, V: int, T: int) -> None:
    """One batch: ``case`` lists each micro-batch's rows by their target tokens; ids below V, drawn from ``g``."""
    micro = []  # (x [B_m, T], y [B_m, T]) for each micro-batch
    for lengths in case:
        y = torch.randint(1, V, (len(lengths), T), generator=g)
        y[torch.arange(T) >= torch.tensor(lengths)[:, None]] = _PAD
        micro.append((torch.randint(1, V, (len(lengths), T), generator=g), y))
    tokens = [sum(lengths) for lengths in case]
    N, M = sum(tokens), len(tokens)
    what = f"with {M} micro-batches of {tokens} target tokens, "
    x, y = torch.cat([x for x, _ in micro]), torch.cat([y for _, y in micro])
    whole = _gradient(model, x, y)
    model.zero_grad()
    stream = _OneShot(micro, model[1].weight)
    try:
        got_n = call(fn, model, stream, _PAD)
    finally:
        stream.handle.remove()
    if stream.read < M:
        raise CheckFailed(f"{what}your function read {stream.read} of them: read micro_batches to its end.")
    if stream.backwards != M:
        raise CheckFailed(f"{what}backward() reached the model {stream.backwards} times; call it once per "
                          "micro-batch, on that micro-batch's loss alone.")
    got = _grads(model)
    if not _close(got, whole):
        means = [_gradient(model, *batch) for batch in micro]  # g_m, the gradient of each mean
        mistakes = [
            (sum(means) / M, "the micro-batches' means are weighed equally, so a token of a small micro-batch "
             "counts more than one of a large one. Back-propagate each micro-batch's summed token losses (its "
             "mean times its tokens), then divide by N."),
            (sum(means), "that is backward() on each micro-batch's mean: multiply the mean by the micro-batch's "
             "tokens, which gives its summed token losses, before backward()."),
            (sum(means) / N, "that is backward() on each micro-batch's mean, divided by N at the end: "
             "backward() on the mean times the micro-batch's tokens (its summed token losses) instead."),
            (sum(n * gm for n, gm in zip(tokens, means)) / M, "the summed token losses divided by the number "
             f"of micro-batches, {M}: the batch's loss is a mean over its N = {N} target tokens."),
        ]
        for wrong, hint in mistakes:
            if _close(got, wrong) and not _close(wrong, whole):
                raise CheckFailed(f"{what}the gradient is wrong: {hint}")
        c = _multiple(got, whole)
        if c is not None and math.isclose(c, N, rel_tol=1e-3):
            raise CheckFailed(f"{what}the gradient is N = {N} times too large: after the last micro-batch, "
                              "divide every parameter's .grad by N.")
        if c is not None:
            raise CheckFailed(f"{what}the gradient points the right way but is {c:.4g} times the whole batch's: "
                              f"divide the summed gradients by N = {N}, once, at the end.")
        if _multiple(got, means[-1]) is not None:
            raise CheckFailed(f"{what}only the last micro-batch's gradient is left: backward() adds to .grad, "
                              "so do not zero it (or assign it) between micro-batches.")
        gap = float((got - whole).abs().max())
        raise CheckFailed(f"{what}the gradient differs from the whole batch's by up to {gap:.3g} (its largest "
                          f"entry is {float(whole.abs().max()):.3g}): back-propagate each micro-batch's summed "
                          "token losses, then divide every .grad by N.")
    n = as_number(got_n, f"{what}the N returned")
    if n != N:
        why = {M: "that is the number of micro-batches", x.numel(): "that counts the pad positions too"}
        raise CheckFailed(f"{what}your function returned {n:g}, expected N = {N}"
                          + (f": {why[n]}." if n in why else ": count the targets that are not pad_id."))


def _spacing(x: float, dtype: torch.dtype) -> float:
    """The distance from the representable number at |x| to the next one up, in ``dtype``."""
    v = torch.tensor(abs(x), dtype=dtype)
    return float(torch.nextafter(v, torch.tensor(math.inf, dtype=dtype)).float() - v.float())


_CHOSEN, _RANDOM, _NEGATIVE = "numbers from 0.1 to 1024", "numbers drawn at random", "a negative number"


@parts(_CHOSEN, _RANDOM, _NEGATIVE, drawn=True)
def check_bf16_spacing(fn: Callable[[float], Any]) -> None:
    """``fn(x) -> float``: the gap from the bf16 number x to the next one away from zero, as torch.nextafter
    finds it."""
    g = torch.Generator().manual_seed(seeded(102))
    hidden = [float(torch.tensor(v).bfloat16()) for v in (torch.rand(3, generator=g) * 1000 + 1).tolist()]
    with part(_CHOSEN):
        at_one, at_1024 = (as_number(call(fn, x), f"bf16_spacing({x})") for x in (1.0, 1024.0))
        if math.isclose(at_one, at_1024, rel_tol=1e-6):
            raise CheckFailed(f"bf16_spacing(1.0) and bf16_spacing(1024.0) are both {at_one:.6g}: the gap is not "
                              "one number for all x but grows with x's exponent, 2 ** -7 at 1 and 8 at 1024.")
        for x in [1.0, 3.0, 0.1015625, 1024.0]:
            _check_bf16_spacing(fn, x)
    for name, numbers in ((_RANDOM, hidden), (_NEGATIVE, [-6.0])):
        with part(name):
            for x in numbers:
                _check_bf16_spacing(fn, x)
    passed("your spacing matches torch's bf16 numbers: 2 ** (exponent - 7).")


def _check_bf16_spacing(fn: Callable[[float], Any], x: float) -> None:
    expected = _spacing(x, torch.bfloat16)
    asked = f"bf16_spacing({x})"
    got = as_number(call(fn, x), asked)
    what = f"{asked} is {got:.6g}, expected {expected:.6g}"  # for the hints below
    for name, dtype in (("float32, with its 23 stored bits", torch.float32),
                        ("float16, with its 10 stored bits", torch.float16)):
        if abs(x) < 60000 and math.isclose(got, _spacing(x, dtype), rel_tol=1e-6):
            raise CheckFailed(f"{what}: that is the spacing of {name}; bf16 stores 7 bits after the leading 1.")
    if math.isclose(got, expected / 2, rel_tol=1e-6):
        raise CheckFailed(f"{what}: half the gap, 2 ** (exponent - 8); bf16 stores 7 bits after the leading 1, "
                          "so neighbours differ by 2 ** (exponent - 7). (Half the gap is the largest rounding "
                          "error.)")
    if math.isclose(got, 2 * expected, rel_tol=1e-6):
        raise CheckFailed(f"{what}: twice the gap. math.frexp writes x as m * 2 ** e with 0.5 <= |m| < 1, so "
                          "its e is one more than the exponent of x = 1.f * 2 ** exponent: the gap is "
                          "2 ** (e - 8).")
    if x < 0 and math.isclose(got, -expected, rel_tol=1e-6):
        raise CheckFailed(f"{what}: a gap is a distance, positive also for negative x; use abs(x).")
    assert_number(got, expected, asked, tol=1e-9 * expected)
