"""Chapter 10's checkers accept the right answers and reject wrong ones with a hint."""

from __future__ import annotations

import math

import pytest
import torch

from tx.exercises import ch10


def batch_loss(logits, targets, pad_id, smoothing):
    logp = logits.log_softmax(dim=-1)  # [B, T, V]
    V = logits.size(-1)
    target = torch.full_like(logp, smoothing / V)
    target.scatter_add_(-1, targets[..., None], torch.full_like(logp[..., :1], 1 - smoothing))
    real = targets != pad_id
    return -(target * logp).sum(-1)[real].mean()


def loss_floor(vocab_size, smoothing):
    right, other = 1 - smoothing + smoothing / vocab_size, smoothing / vocab_size
    wrong = (vocab_size - 1) * other * math.log(other) if smoothing > 0 else 0.0
    return -right * math.log(right) - wrong


def learning_rate(step, d_model, warmup):
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def test_right_answers_pass(capsys):
    ch10.check_batch_loss(batch_loss)
    ch10.check_batch_loss(lambda *args: float(batch_loss(*args)))  # a float is a number too
    ch10.check_loss_floor(loss_floor)
    ch10.check_loss_floor(lambda V, e: torch.tensor(loss_floor(V, e)))  # so is a 0-d tensor
    ch10.check_learning_rate(learning_rate)
    assert capsys.readouterr().out.count("Correct:") == 5


def token_losses(logits, targets, smoothing, spread_over=None):
    # [B, T] smoothed cross-entropies; spread_over="others" puts smoothing / (V - 1) on the wrong words only
    logp = logits.log_softmax(-1)
    V = logits.size(-1)
    nll = -logp.gather(-1, targets[..., None]).squeeze(-1)
    if spread_over == "others":
        return (1 - smoothing) * nll + smoothing * (-logp.sum(-1) - nll) / (V - 1)
    return (1 - smoothing) * nll - smoothing * logp.mean(-1)


def per_sentence(logits, targets, pad_id, smoothing):
    real = (targets != pad_id).float()
    return ((token_losses(logits, targets, smoothing) * real).sum(1) / real.sum(1)).mean()


def with_softmax(logits, targets, pad_id, smoothing):
    q = logits.softmax(-1)  # probabilities where log-probabilities belong
    q_k = q.gather(-1, targets[..., None]).squeeze(-1)
    return -((1 - smoothing) * q_k + smoothing * q.mean(-1))[targets != pad_id].mean()


@pytest.mark.parametrize("wrong, hint", [
    (lambda z, t, p, e: token_losses(z, t, e).mean(), "pad positions count too"),
    (lambda z, t, p, e: token_losses(z, t, e)[t != p].sum() / t.numel(), "divided by every position"),
    (lambda z, t, p, e: token_losses(z, t, 0.0)[t != p].mean(), "without label smoothing"),
    (lambda z, t, p, e: token_losses(z, t, e, "others")[t != p].mean(), "V - 1 wrong words"),
    (lambda z, t, p, e: token_losses(z, t, e)[t != p].sum(), "sum over the real tokens"),
    (per_sentence, "then the sentences"),
    (with_softmax, "probabilities \\(softmax\\)"),
    (lambda z, t, p, e: torch.nn.functional.cross_entropy(z.flatten(0, 1), t.flatten(), ignore_index=p,
                                                          label_smoothing=e), "calls torch.nn.functional.cross_entropy"),
    (lambda z, t, p, e: torch.nn.CrossEntropyLoss(ignore_index=p, label_smoothing=e)(z.flatten(0, 1), t.flatten()),
     "calls CrossEntropyLoss.forward"),
    (lambda z, t, p, e: __import__("tx").train.loss_fn(z, t, p, e), "calls tx.train.loss_fn"),
    (lambda z, t, p, e: batch_loss(z, t, 0, e), "expected"),  # pad_id 0 hard-coded
    (lambda z, t, p, e: token_losses(z, t, e)[t != p], "one number"),  # per token, not reduced
])
def test_batch_loss_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch10.check_batch_loss(wrong)


def floor_over_the_others(V, e):
    # smoothing / (V - 1) on each wrong word, 1 - smoothing on the right one
    return -(1 - e) * math.log(1 - e) - e * math.log(e / (V - 1)) if e else 0.0


def floor_with_nan(V, e):
    row = torch.tensor([1 - e + e / V, e / V], dtype=torch.float64)
    return float(-(row * row.log() * torch.tensor([1, V - 1])).sum())  # 0 * log 0 is nan


@pytest.mark.parametrize("wrong, hint", [
    (floor_over_the_others, "V - 1 wrong words"),
    (lambda V, e: loss_floor(V, e) / math.log(2), "log base 2"),
    (lambda V, e: -(1 - e + e / V) * math.log(1 - e + e / V) - (e / V) * math.log(e / V) if e else 0.0,
     "counted one wrong word"),
    (lambda V, e: -(1 - e + e / V) * math.log(1 - e + e / V), "left the wrong words out"),
    (lambda V, e: -(1 - e) * math.log(1 - e) - (V - 1) * e / V * math.log(e / V) if e else 0.0, "its own share"),
    (lambda V, e: -(1 - e + e / V) * math.log(1 - e + e / V) - e * math.log(e / V) if e else 0.0, "V wrong words"),
    (lambda V, e: -loss_floor(V, e), "minus sign"),
    (floor_with_nan, "0 \\* log 0 counts as 0"),
    (lambda V, e: -(1 - e + e / V) * math.log(1 - e + e / V) - (V - 1) * e / V * math.log(e / V),
     "ValueError: math domain error .*0 \\* log 0 counts as 0"),  # math.log(0) raises
    (lambda V, e: loss_floor(V, e) * 1.001, "expected"),
])
def test_loss_floor_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch10.check_loss_floor(wrong)


def test_the_floor_is_checked_at_the_papers_size():
    # eq. (10.2)'s floor for the paper's shared vocabulary of about 37,000 tokens and eps = 0.1
    row = torch.full((37_000,), 0.1 / 37_000, dtype=torch.float64)
    row[0] += 0.9
    assert math.isclose(loss_floor(37_000, 0.1), float(-(row * row.log()).sum()), rel_tol=1e-9)


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
