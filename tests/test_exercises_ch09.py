"""Chapter 9's checkers accept the right answers and reject wrong ones with a hint."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tx.exercises import ch09


def softmax_with_temperature(logits, temperature):
    z = logits / temperature
    e = (z - z.max(dim=-1, keepdim=True).values).exp()
    return e / e.sum(dim=-1, keepdim=True)


def one_hot(word, vocab):
    return F.one_hot(torch.tensor(vocab.index(word)), len(vocab)).float()


def pick_word(logits, vocab):
    return vocab[int(logits.argmax())]


def test_right_answers_pass(capsys):
    ch09.check_softmax_with_temperature(softmax_with_temperature)
    ch09.check_one_hot(one_hot)
    ch09.check_pick_word(pick_word)
    assert capsys.readouterr().out.count("Correct:") == 3


@pytest.mark.parametrize("wrong, hint", [
    (lambda z, t: torch.softmax(z, -1), "differs"),  # ignores the temperature
    (lambda z, t: torch.softmax(z * t, -1), "differs"),  # multiplies instead of dividing
    (lambda z, t: (z / t).exp() / (z / t).exp().sum(-1, keepdim=True), "subtract the largest"),  # overflows
    (lambda z, t: (z / t).exp() / (z / t).exp().sum(), "differs"),  # sums over the whole batch
    (lambda z, t: (z / t).tolist(), "torch.Tensor"),
])
def test_softmax_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch09.check_softmax_with_temperature(wrong)


@pytest.mark.parametrize("wrong, hint", [
    (lambda w, v: F.one_hot(torch.tensor(v.index(w) + 1) % len(v), len(v)), "differs"),  # off by one
    (lambda w, v: torch.ones(len(v)), "single 1"),
    (lambda w, v: F.one_hot(torch.tensor(v.index(w)), len(v) + 1), "shape"),
])
def test_one_hot_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch09.check_one_hot(wrong)


@pytest.mark.parametrize("wrong, hint", [
    (lambda z, v: v[int(z.argmin())], "largest logit"),
    (lambda z, v: v[int(z.abs().argmax())], "largest logit"),  # wrong when every logit is negative
    (lambda z, v: int(z.argmax()), "str"),
])
def test_pick_word_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch09.check_pick_word(wrong)
