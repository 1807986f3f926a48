"""Checkers for chapter 10, the loss function and training.

Axes: B batch, T target length, V vocabulary size. Each checker calls the learner's function
on inputs of its own, compares the answer with tx or torch, and prints one line when it is right.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..train import loss_fn, rate
from . import CheckFailed, as_number, assert_number, call, forbidding, keeps_random_state, passed
from .. import train

__all__ = ["check_batch_loss", "check_loss_floor", "check_learning_rate"]

LOSS_SHORTCUTS = [
    (F, "cross_entropy"), (F, "nll_loss"), (nn.CrossEntropyLoss, "forward"), (nn.NLLLoss, "forward"),
    (train, "loss_fn"), (train, "batch_loss"), (train, "smoothed_targets"),
]
"""torch's and tx's ready-made losses, which exercise 10.1 asks the learner to do without."""


def _padded_batch(g: torch.Generator, lengths: list[int], T: int, V: int, pad_id: int) -> tuple[Tensor, Tensor]:
    """Logits [B, T, V] and target ids [B, T]: row b holds lengths[b] real ids (never pad_id), then pads."""
    logits = torch.randn(len(lengths), T, V, generator=g) * 2
    words = torch.tensor([i for i in range(V) if i != pad_id])
    targets = words[torch.randint(0, V - 1, (len(lengths), T), generator=g)]
    targets[torch.arange(T) >= torch.tensor(lengths)[:, None]] = pad_id
    return logits, targets


def _loss_mistakes(logits: Tensor, targets: Tensor, pad_id: int, eps: float) -> list[tuple[float, str]]:
    """(the value, the hint) of the usual wrong ways to compute the batch's loss."""
    logp = logits.double().log_softmax(-1)  # [B, T, V]
    V = logits.size(-1)
    nll = -logp.gather(-1, targets[..., None]).squeeze(-1)  # [B, T], -log q(target)
    spread = -logp.mean(-1)  # [B, T], -(1/V) sum_i log q_i
    per_token = (1 - eps) * nll + eps * spread  # the smoothed target's cross-entropy, token by token
    real = targets != pad_id
    q = logp.exp()
    q_k = q.gather(-1, targets[..., None]).squeeze(-1)
    z = logits.double()
    logits_k = z.gather(-1, targets[..., None]).squeeze(-1)
    over_others = (1 - eps) * nll + eps * (V * spread - nll) / (V - 1)
    per_sentence = ((per_token * real).sum(1) / real.sum(1).clamp_min(1))[real.any(1)]
    return [
        (float(per_token.mean()), "the pad positions count too: their targets are pad_id, not words to "
         "predict. Leave them out of the loss and out of the count: average over targets != pad_id only."),
        (float(per_token[real].sum() / real.numel()), "you left the pads' losses out, but divided by every "
         "position, pads included: divide by the number of real target tokens."),
        (float(nll[real].mean()), "that is the loss without label smoothing: the target puts 1 - smoothing "
         "on the right word and smoothing / V on every word, as the chapter's label-smoothing equation says."),
        (float(over_others[real].mean()), "you spread smoothing over the V - 1 wrong words; tx, like "
         "F.cross_entropy(label_smoothing=...), spreads it over all V words, the right one included: "
         "smoothing / V each, and 1 - smoothing more on the right word."),
        (float(per_token[real].sum()), "that is the sum over the real tokens; the loss is their mean."),
        (float(per_sentence.mean()), "you averaged each sentence's tokens, then the sentences: a token of a "
         "short sentence then counts more than one of a long one. Average over all the batch's real tokens at once."),
        (float(-((1 - eps) * q_k + eps * q.mean(-1))[real].mean()), "you used the probabilities (softmax) where "
         "the loss takes their logarithms: use logits.log_softmax(-1)."),
        (float(-((1 - eps) * logits_k + eps * z.mean(-1))[real].mean()), "you used the raw logits where the loss "
         "takes log-probabilities: use logits.log_softmax(-1)."),
    ]


@keeps_random_state
def check_batch_loss(fn: Callable[[Tensor, Tensor, int, float], Any]) -> None:
    """``fn(logits [B, T, V], targets [B, T], pad_id, smoothing) -> number``: :func:`tx.train.loss_fn`'s loss."""
    g = torch.Generator().manual_seed(10)
    hidden_lengths = [int(n) for n in torch.randperm(6, generator=g)[:4] + 1]  # four unequal lengths, 1 to 6
    cases = [  # (lengths of the rows, T, V, pad_id, smoothing)
        ([4, 2], 4, 6, 0, 0.1),
        ([5, 3, 1], 5, 7, 2, 0.0),  # no smoothing, and pad_id is not 0
        ([3, 3], 3, 5, 0, 0.1),  # no padding
        (hidden_lengths, 6, 11, 0, 0.3),
        ([2, 7], 7, 9, 8, 0.5),
    ]
    for lengths, T, V, pad_id, eps in cases:
        logits, targets = _padded_batch(g, lengths, T, V, pad_id)
        with forbidding(LOSS_SHORTCUTS, "compute the loss from logits.log_softmax(-1) yourself."):
            got = call(fn, logits.clone(), targets.clone(), pad_id, eps)
        what = f"batch_loss(logits of shape {tuple(logits.shape)}, targets={targets.tolist()}, pad_id={pad_id}, smoothing={eps})"
        got = as_number(got, what)
        expected = float(loss_fn(logits, targets, pad_id, eps))
        for value, hint in _loss_mistakes(logits, targets, pad_id, eps):
            if math.isclose(got, value, rel_tol=1e-4, abs_tol=1e-6) and not math.isclose(value, expected, rel_tol=1e-3):
                raise CheckFailed(f"{what} is {got:.6g}, expected {expected:.6g}: {hint}")
        assert_number(got, expected, what, tol=1e-4 * max(1.0, abs(expected)))
    passed("your loss matches tx.train.loss_fn: smoothed, over the real target tokens only, padded rows of any length.")


def _entropy_of_smoothed_row(vocab_size: int, smoothing: float) -> float:
    """The floor, computed the long way: the entropy of one smoothed row [V], in float64."""
    row = torch.full((vocab_size,), smoothing / vocab_size, dtype=torch.float64)
    row[0] += 1 - smoothing
    return float(-torch.xlogy(row, row).sum())


def _floor_mistakes(V: int, eps: float) -> list[tuple[float, str]]:
    """(the value, the hint) of the usual wrong formulas for the floor."""
    right, other = 1 - eps + eps / V, eps / V
    h = lambda p: -p * math.log(p) if p > 0 else 0.0  # noqa: E731 - one word's share of the entropy
    floor = h(right) + (V - 1) * h(other)
    mistakes = [
        (floor / math.log(2), "that is the floor in bits (log base 2); the loss uses the natural log, as torch.log does."),
        (h(right) + h(other), "you counted one wrong word; there are V - 1 of them, each with smoothing / V."),
        (h(right) + V * h(other), "you counted V wrong words; the right word is one of the V and holds "
         "1 - smoothing + smoothing / V, so V - 1 words are left with smoothing / V."),
        (h(right), "you left the wrong words out: each of the V - 1 holds smoothing / V and adds its own -p log p."),
        (h(1 - eps) + (V - 1) * h(other), "the right word holds 1 - smoothing plus its own share smoothing / V, "
         "as the chapter's label-smoothing equation says."),
        (-floor, "an entropy is never negative: -sum p log p carries a minus sign, and log p < 0."),
    ]
    if eps > 0 and V > 1:
        mistakes.insert(0, (h(1 - eps) + (V - 1) * h(eps / (V - 1)), "you spread smoothing over the V - 1 wrong "
                            "words; tx spreads it over all V, the right one included: smoothing / V each, and "
                            "1 - smoothing more on the right word."))
    return mistakes


_AT_ZERO = ("At smoothing 0 the wrong words have probability 0, and 0 * log 0 counts as 0 (its limit): "
            "leave those terms out, or return 0.0 when smoothing is 0.")


def check_loss_floor(fn: Callable[[int, float], Any]) -> None:
    """``fn(vocab_size, smoothing) -> float``: the entropy of a label-smoothed target, the floor of the loss."""
    g = torch.Generator().manual_seed(11)
    hidden = (int(torch.randint(50, 50_000, (1,), generator=g)), round(float(torch.rand(1, generator=g)) * 0.4 + 0.05, 3))
    cases = [(6, 0.1), (37_000, 0.1), (2, 0.5), (1000, 0.0), hidden, (1_000_000, 0.1), (37_000, 0.001), (50, 0.9)]
    for V, eps in cases:
        what = f"loss_floor(vocab_size={V}, smoothing={eps})"
        try:
            got = call(fn, V, eps)
        except CheckFailed as error:  # math.log(0) raises ValueError
            if eps == 0 and "NotImplementedError" not in str(error):
                raise CheckFailed(f"{error} {_AT_ZERO}") from None
            raise
        value = got.item() if isinstance(got, Tensor) and got.numel() == 1 else got
        if eps == 0 and isinstance(value, float) and math.isnan(value):  # 0 * log 0 = 0 * -inf = nan
            raise CheckFailed(f"{what} is nan, expected 0. {_AT_ZERO}")
        got = as_number(got, what)
        expected = _entropy_of_smoothed_row(V, eps)
        for value, hint in _floor_mistakes(V, eps):
            if math.isclose(got, value, rel_tol=1e-6, abs_tol=1e-9) and not math.isclose(value, expected, rel_tol=1e-5, abs_tol=1e-9):
                raise CheckFailed(f"{what} is {got:.6g}, expected {expected:.6g}: {hint}")
        assert_number(got, expected, what, tol=1e-5 * max(1.0, expected))
    passed("your floor matches the entropy of a smoothed row, from V = 2 to a million, smoothing 0 included.")


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
