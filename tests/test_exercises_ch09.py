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
    vector = torch.zeros(len(vocab))
    vector[vocab.index(word)] = 1.0
    return vector


def pick_word(logits, vocab):
    return vocab[int(logits.argmax())]


def test_right_answers_pass(capsys):
    ch09.check_softmax_with_temperature(softmax_with_temperature)
    ch09.check_one_hot(one_hot)
    ch09.check_pick_word(pick_word)
    assert capsys.readouterr().out.count("Correct:") == 3


def soft(z):
    """A correct softmax over the last axis, for building wrong answers from."""
    e = (z - z.max(dim=-1, keepdim=True).values).exp()
    return e / e.sum(dim=-1, keepdim=True)


def soft_shifted(z, shift):
    e = (z - shift).exp()
    return e / e.sum(dim=-1, keepdim=True)


def subtracts_the_smallest(z, t):
    e = (z / t - (z / t).min(dim=-1, keepdim=True).values).exp()
    return e / e.sum(dim=-1, keepdim=True)


def subtracts_the_global_max(z, t):
    e = (z / t - (z / t).max()).exp()
    return e / e.sum(dim=-1, keepdim=True)


@pytest.mark.parametrize("wrong, hint", [
    (lambda z, t: soft(z), "differs"),  # ignores the temperature
    (lambda z, t: soft(z * t), "differs"),  # multiplies instead of dividing
    (lambda z, t: (z / t).exp() / (z / t).exp().sum(-1, keepdim=True), "subtract the largest"),  # overflows
    (lambda z, t: (z / t - (z / t).max()).exp() / (z / t - (z / t).max()).exp().sum(), "differs"),  # sums the whole batch
    (lambda z, t: (z / t).tolist(), "torch.Tensor"),
    (subtracts_the_smallest, "not the smallest"),
    (subtracts_the_global_max, "each row's own largest"),
    (lambda z, t: soft_shifted(z / t, (z / t).mean(-1, keepdim=True)), "subtracting each row's mean logit still leaves an exponent of 124"),
    (lambda z, t: torch.softmax(z / t, -1), "calls torch.softmax"),
    (lambda z, t: (z / t).softmax(-1), "calls Tensor.softmax"),
    (lambda z, t: soft(z / t) * float("nan"), "nan or inf"),
])
def test_softmax_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch09.check_softmax_with_temperature(wrong)


def one_hot_off_by_one(word, vocab):
    vector = torch.zeros(len(vocab))
    vector[(vocab.index(word) + 1) % len(vocab)] = 1.0
    return vector


def one_hot_of_ids(word, vocab):
    return torch.zeros(len(vocab), dtype=torch.long).index_fill(0, torch.tensor(vocab.index(word)), 1)


def one_hot_of_the_post(word, vocab):  # hard-coded for the post's six words
    vector = torch.zeros(6)
    vector[list(ch09.POST_VOCAB).index(word) if word in ch09.POST_VOCAB else 0] = 1.0
    return vector


@pytest.mark.parametrize("wrong, hint", [
    (one_hot_off_by_one, "differs"),
    (lambda w, v: torch.ones(len(v)), "single 1"),
    (lambda w, v: torch.cat([one_hot(w, v), torch.zeros(1)]), "shape"),
    (one_hot_of_ids, "dtype"),  # the prompt asks for a float tensor
    (one_hot_of_the_post, "shape|differs"),
    (lambda w, v: F.one_hot(torch.tensor(v.index(w)), len(v)).float(), "calls torch.nn.functional.one_hot"),
])
def test_one_hot_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch09.check_one_hot(wrong)


@pytest.mark.parametrize("wrong, hint", [
    (lambda z, v: v[int(z.argmin())], "largest logit"),
    (lambda z, v: v[int(z.abs().argmax())], "largest logit"),  # wrong when every logit is negative
    (lambda z, v: int(z.argmax()), "str"),
    (lambda z, v: v[int(torch.softmax(z, -1).argmax()) - 1], "largest logit"),  # off by one
    (lambda z, v: v[-1], "largest logit"),  # hard-coded: the last word
])
def test_pick_word_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch09.check_pick_word(wrong)
