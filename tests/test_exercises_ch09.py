"""Chapter 9's checkers accept the right answers and reject wrong ones with a hint."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tx.exercises import ch09


def log_softmax_with_temperature(logits, temperature):
    z = logits / temperature
    z = z - z.max(dim=-1, keepdim=True).values
    return z - z.exp().sum(dim=-1, keepdim=True).log()


def next_word_targets(sentence, vocab, length):
    words = sentence.split() + ["<eos>"]
    targets = torch.zeros(length, len(vocab))
    for t, word in enumerate(words):
        targets[t, vocab.index(word)] = 1.0
    return targets


def sample_word(logits, temperature, u):
    cdf = torch.softmax(logits / temperature, dim=-1).cumsum(0)
    return min(int((cdf <= u).sum()), len(cdf) - 1)


def test_right_answers_pass(capsys):
    ch09.check_log_softmax_with_temperature(log_softmax_with_temperature)
    ch09.check_next_word_targets(next_word_targets)
    ch09.check_sample_word(sample_word)
    assert capsys.readouterr().out.count("Correct:") == 3


def soft(z):
    """A correct softmax over the last axis, for building wrong answers from."""
    e = (z - z.max(dim=-1, keepdim=True).values).exp()
    return e / e.sum(dim=-1, keepdim=True)


@pytest.mark.parametrize("wrong, hint", [
    (lambda z, t: soft(z / t).log(), "do not take the log of the softmax"),  # underflows to log(0)
    (lambda z, t: z / t - (z / t).exp().sum(-1, keepdim=True).log(), "Subtract each row's largest logit"),
    (lambda z, t: soft(z / t), "returned probabilities"),
    (lambda z, t: log_softmax_with_temperature(z, 1.0), "divide them by the temperature"),
    (lambda z, t: log_softmax_with_temperature(z * t, 1.0), "differs"),  # multiplies instead of dividing
    (lambda z, t: torch.log_softmax(z / t, -1), "calls torch.log_softmax"),
    (lambda z, t: z / t - torch.logsumexp(z / t, -1, keepdim=True), "calls torch.logsumexp"),
    (lambda z, t: (z / t).tolist(), "torch.Tensor"),
])
def test_log_softmax_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch09.check_log_softmax_with_temperature(wrong)


def targets_without_eos(sentence, vocab, length):
    rows = next_word_targets(sentence, vocab, length)
    rows[len(sentence.split())] = 0.0
    return rows


def targets_from_bos(sentence, vocab, length):  # row 0 holds <bos>'s own word: shifted by one
    rows = next_word_targets(sentence, vocab, length)
    return torch.cat([rows[:1], rows[:-1]])


def targets_as_ids(sentence, vocab, length):
    return next_word_targets(sentence, vocab, length).long()


def targets_padded_with_eos(sentence, vocab, length):
    rows = next_word_targets(sentence, vocab, length)
    rows[len(sentence.split()) + 1:, vocab.index("<eos>")] = 1.0
    return rows


def targets_unpadded(sentence, vocab, length):
    return next_word_targets(sentence, vocab, len(sentence.split()) + 1)


def one_hot_targets(sentence, vocab, length):
    ids = [vocab.index(w) for w in sentence.split() + ["<eos>"]]
    rows = F.one_hot(torch.tensor(ids), len(vocab)).float()
    return torch.cat([rows, torch.zeros(length - len(ids), len(vocab))])


@pytest.mark.parametrize("wrong, hint", [
    (lambda s, v, n: next_word_targets(s, v, n)[: len(s.split())], "must predict <eos>"),
    (targets_without_eos, "must predict <eos>"),
    (targets_from_bos, "shifted by one"),
    (targets_as_ids, "dtype"),  # the prompt asks for float rows
    (targets_padded_with_eos, "fills the padding positions with <eos>"),
    (targets_unpadded, "pad it to"),
    (lambda s, v, n: next_word_targets(s, v, n) * 2, "single 1"),
    (lambda s, v, n: torch.ones(n, len(v)) / len(v), "single 1"),
    (one_hot_targets, "calls torch.nn.functional.one_hot"),
])
def test_next_word_targets_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch09.check_next_word_targets(wrong)


def word_left_open(z, t, u):  # searchsorted's default: cdf[i-1] < u <= cdf[i]
    cdf = torch.softmax(z / t, dim=-1).cumsum(0)
    return int(torch.searchsorted(cdf, torch.tensor([u]))[0])


def word_of_logits(z, t, u):  # the running sum of the logits, not of probabilities
    return min(int(((z / t).cumsum(0) <= u).sum()), len(z) - 1)


def by_multinomial(z, t, u):
    return int(torch.multinomial(torch.softmax(z / t, dim=-1), 1))


def by_categorical(z, t, u):
    return int(torch.distributions.Categorical(logits=z / t).sample())


@pytest.mark.parametrize("wrong, hint", [
    (word_left_open, "exactly on a boundary"),
    (lambda z, t, u: sample_word(z, t, u) + 1, "one word late"),
    (lambda z, t, u: sample_word(z, t, u) - 1, "one word early"),
    (lambda z, t, u: sample_word(z, 1.0, u), "divide the logits by the temperature"),
    (lambda z, t, u: int(z.argmax()), "greedy picking"),
    (word_of_logits, "not of the logits"),
    (by_multinomial, "calls torch.multinomial"),
    (lambda z, t, u: int(torch.softmax(z / t, -1).multinomial(1)), "calls Tensor.multinomial"),
    (by_categorical, "calls Categorical.sample"),
    (lambda z, t, u: float(sample_word(z, t, u)), "an int"),
    (lambda z, t, u: ["a", "am", "i"][0], "an int"),
])
def test_sample_word_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch09.check_sample_word(wrong)


def test_sample_word_checker_accepts_a_tensor_index(capsys):
    ch09.check_sample_word(lambda z, t, u: torch.tensor(sample_word(z, t, u)))
    assert capsys.readouterr().out.startswith("Correct:")
