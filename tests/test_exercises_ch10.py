"""Chapter 10's checkers accept the right answers and reject wrong ones with a hint."""

from __future__ import annotations

import math

import pytest
import torch

from tx.exercises import ch10


def smoothed(target, vocab_size, smoothing):
    dist = torch.full((target.numel(), vocab_size), smoothing / vocab_size)
    dist[torch.arange(target.numel()), target] += 1.0 - smoothing
    return dist


def cross_entropy(target, probs):
    return float(-(target * probs.log()).sum())


def learning_rate(step, d_model, warmup):
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def test_right_answers_pass(capsys):
    ch10.check_smoothed_targets(smoothed)
    ch10.check_cross_entropy(cross_entropy)
    ch10.check_cross_entropy(lambda p, q: -(p * q.log()).sum())  # a 0-d tensor is a number too
    ch10.check_learning_rate(learning_rate)
    assert capsys.readouterr().out.count("Correct:") == 4


def spread_over_the_others(target, vocab_size, smoothing):
    # The other common convention: smoothing / (V - 1) on each wrong word, 1 - smoothing on the true one.
    dist = torch.full((target.numel(), vocab_size), smoothing / (vocab_size - 1))
    dist[torch.arange(target.numel()), target] = 1.0 - smoothing
    return dist


@pytest.mark.parametrize("wrong, hint", [
    (spread_over_the_others, "all V words"),
    (lambda t, V, e: torch.nn.functional.one_hot(t, V).float(), "one-hot rows"),  # forgets the smoothing
    (lambda t, V, e: __import__("tx").train.smoothed_targets(t, V, e), "calls tx.train.smoothed_targets"),
    (lambda t, V, e: smoothed(t, V, e).double() * float("nan"), "nan or inf"),
    (lambda t, V, e: smoothed(t, V, e)[0], "shape"),  # one row only
    (lambda t, V, e: smoothed(t, V, e).T, "shape"),
])
def test_smoothed_targets_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch10.check_smoothed_targets(wrong)


@pytest.mark.parametrize("wrong, hint", [
    (lambda p, q: float((p * q.log()).sum()), "minus sign"),
    (lambda p, q: float(-(q * p.clamp_min(1e-12).log()).sum()), "swapped the arguments"),
    (lambda p, q: float(-q[int(p.argmax())].log()), "every word counts"),  # right for one-hot targets only
    (lambda p, q: float((p * (p.clamp_min(1e-12) / q).log()).sum()), "KL divergence"),
    (lambda p, q: float(-(p * q.log()).mean()), "expected"),  # a mean, not a sum
    (lambda p, q: float("inf"), "not a finite number"),
    (lambda p, q: "0.5", "number"),
])
def test_cross_entropy_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch10.check_cross_entropy(wrong)


@pytest.mark.parametrize("wrong, hint", [
    (lambda s, d, w: d**-0.5 * max(s**-0.5, s * w**-1.5), "larger of the two"),  # max instead of min
    (lambda s, d, w: min(s**-0.5, s * w**-1.5), "d_model \\*\\* -0.5 in front is missing"),
    (lambda s, d, w: __import__("tx").train.rate(s, d, w), "calls tx.train.rate"),
    (lambda s, d, w: learning_rate(s, 512, 4000), "learning_rate"),  # the paper's sizes, hard-coded
    (lambda s, d, w: d**-0.5 * min(s**-0.5, s * w**-0.5), "warm-up"),  # wrong warm-up exponent
])
def test_learning_rate_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch10.check_learning_rate(wrong)


def test_the_tolerance_is_relative():
    # Learning rates are ~1e-3, so an absolute tolerance of 1e-3 would accept almost anything.
    with pytest.raises(AssertionError):
        ch10.check_learning_rate(lambda s, d, w: learning_rate(s, d, w) * 1.01)
    assert math.isclose(learning_rate(4000, 512, 4000), (512 * 4000) ** -0.5)
