"""Checkers for chapter 10, the loss function and training.

Axes: N target positions, V vocabulary size. Each checker calls the learner's function on
inputs of its own, compares the answer with tx or torch, and prints one line when it is right.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch
from torch import Tensor

from ..train import rate, smoothed_targets
from . import CheckFailed, as_number, assert_number, assert_tensor, call, forbidding, passed
from .. import train

__all__ = ["check_smoothed_targets", "check_cross_entropy", "check_learning_rate"]


def check_smoothed_targets(fn: Callable[[Tensor, int, float], Tensor]) -> None:
    """``fn(target [N], vocab_size, smoothing) -> [N, V]`` must equal :func:`tx.train.smoothed_targets`."""
    g = torch.Generator().manual_seed(10)
    cases = [
        (torch.tensor([3]), 6, 0.1),
        (torch.tensor([1, 3, 5]), 6, 0.1),
        (torch.tensor([0, 2]), 4, 0.0),  # no smoothing: plain one-hot rows
        (torch.randint(0, 169, (7,), generator=g), 169, 0.1),
        (torch.tensor([2, 0]), 5, 0.5),
    ]
    for target, V, eps in cases:
        with forbidding([(train, "smoothed_targets")], "build the distributions yourself, with torch.full and indexing."):
            got = call(fn, target.clone(), V, eps)
        expected = smoothed_targets(target, V, eps)
        what = f"smoothed(target={target.tolist()}, vocab_size={V}, smoothing={eps})"
        if isinstance(got, Tensor) and got.shape == expected.shape and eps > 0:
            other = float(got[0, (int(target[0]) + 1) % V])
            if math.isclose(other, eps / (V - 1), rel_tol=1e-4):
                raise CheckFailed(
                    f"{what}: the other words get smoothing / (V - 1) = {other:.6g}. tx, like "
                    f"F.cross_entropy(label_smoothing=...), spreads smoothing over all V words, the true "
                    f"one included: every word gets smoothing / V = {eps / V:.6g}, the true word 1 - smoothing on top."
                )
            if torch.allclose(got.float(), smoothed_targets(target, V, 0.0)):
                raise CheckFailed(f"{what}: these are one-hot rows; with smoothing={eps} every word gets "
                                  f"smoothing / V = {eps / V:.6g}, and the true word 1 - smoothing more.")
        assert_tensor(got, expected, what)
    passed("your smoothed targets match tx.train.smoothed_targets.")


def _cross_entropy(target: Tensor, probs: Tensor) -> float:
    return float(-(target * probs.log()).sum())


def check_cross_entropy(fn: Callable[[Tensor, Tensor], Any]) -> None:
    """``fn(target [V], probs [V]) -> float``: the cross-entropy -sum(target * log(probs))."""
    g = torch.Generator().manual_seed(11)
    probs = torch.softmax(torch.tensor([0.5, 1.0, 0.2, 2.0, -1.0, 0.0]), -1)
    one_hot = torch.tensor([0.0, 0.0, 0.0, 1.0, 0.0, 0.0])
    cases = [
        (one_hot, probs),  # equals -log(probs[3])
        (torch.tensor([0.0, 1.0, 0.0, 0.0, 0.0, 0.0]), probs),
        (smoothed_targets(torch.tensor([3]), 6, 0.1)[0], probs),
        (torch.softmax(torch.randn(10, generator=g), -1), torch.softmax(torch.randn(10, generator=g), -1)),
    ]
    for target, q in cases:
        got = call(fn, target.clone(), q.clone())
        expected = _cross_entropy(target, q)
        if isinstance(got, Tensor) and got.numel() == 1:
            got = got.item()
        got = as_number(got, f"cross_entropy(target={[round(v, 3) for v in target.tolist()]}, probs=...)")
        if math.isclose(got, -expected, rel_tol=1e-4):
            raise CheckFailed(f"cross_entropy gave {got:.6g}, minus the expected {expected:.6g}: log of a probability is negative, so the loss carries a minus sign.")
        mistakes = [
            (float(-(q * target.clamp_min(1e-12).log()).sum()), "you swapped the arguments: the log is of the model's probs, weighted by the target."),
            (float(-q[int(target.argmax())].log()), "that is -log probs[k] for the most likely target word only; with a "
             "smoothed target every word counts: -sum(target * log(probs))."),
            (float((target * (target.clamp_min(1e-12) / q).log()).sum()), "that is the KL divergence; the cross-entropy "
             "is -sum(target * log(probs)), which adds the target's own entropy to it."),
        ]
        for value, hint in mistakes:
            if math.isclose(got, value, rel_tol=1e-4, abs_tol=1e-6) and not math.isclose(value, expected, rel_tol=1e-4):
                raise CheckFailed(f"cross_entropy gave {got:.6g}, expected {expected:.6g}: {hint}")
        assert_number(got, expected, f"cross_entropy(target={[round(v, 3) for v in target.tolist()]}, probs=...)", tol=1e-4)
    passed("your cross-entropy matches -sum(target * log(probs)), one-hot and smoothed targets alike.")


def check_learning_rate(fn: Callable[[int, int, int], float]) -> None:
    """``fn(step, d_model, warmup) -> float`` must equal :func:`tx.train.rate` (the paper's eq. 3)."""
    g = torch.Generator().manual_seed(10)
    hidden = (64 * int(torch.randint(1, 9, (1,), generator=g)), int(torch.randint(50, 900, (1,), generator=g)))
    for d_model, warmup in [(512, 4000), (128, 300), hidden]:
        for step in [1, 10, warmup // 2, warmup - 1, warmup, warmup + 1, 3 * warmup, 100_000]:
            with forbidding([(train, "rate")], "write the formula yourself: d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)."):
                got = call(fn, step, d_model, warmup)
            expected = rate(step, d_model, warmup)
            phase = "warm-up (rising)" if step < warmup else "decay (falling)"
            value = as_number(got, f"learning_rate(step={step}, d_model={d_model}, warmup={warmup})")
            where = f"learning_rate(step={step}, d_model={d_model}, warmup={warmup}) is {value:.6g}, expected {expected:.6g}"
            if step != warmup and math.isclose(value, d_model**-0.5 * max(step**-0.5, step * warmup**-1.5), rel_tol=1e-6):
                raise CheckFailed(f"{where}: you took the larger of the two terms; the rate is the smaller, min(...).")
            if math.isclose(value, expected * d_model**0.5, rel_tol=1e-6):
                raise CheckFailed(f"{where}: the factor d_model ** -0.5 in front is missing.")
            assert_number(got, expected, f"learning_rate(step={step}, d_model={d_model}, warmup={warmup}) in the {phase} phase",
                          tol=1e-6 * expected)
    passed("your learning rate matches tx.train.rate, during warm-up and after.")
