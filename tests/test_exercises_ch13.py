"""Chapter 13's checkers accept the right answers and reject typical mistakes with a hint."""

from __future__ import annotations

import pytest
import torch

from tx.exercises import CheckFailed, ch13


def lm_mask(tokens, pad_id):
    T = tokens.size(1)
    causal = torch.ones(T, T, dtype=torch.bool).tril()  # [T, T]
    return causal & (tokens != pad_id)[:, None, None, :]  # [B, 1, T, T]


def top_k(logits, k):
    kth = logits.topk(k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < kth, float("-inf"))


def perplexity(token_losses, targets, pad_id):
    real = targets != pad_id
    return float(token_losses[real].mean().exp())


def test_right_answers_pass(capsys):
    ch13.check_lm_mask(lm_mask)
    ch13.check_top_k(top_k)
    ch13.check_perplexity(perplexity)
    assert capsys.readouterr().out.count("Correct:") == 3


def _stub(*args):
    raise NotImplementedError


def _causal(tokens):
    T = tokens.size(1)
    return torch.ones(T, T, dtype=torch.bool).tril()


@pytest.mark.parametrize("wrong, hint", [
    (_stub, "NotImplementedError"),
    (lambda t, p: _causal(t).expand(t.size(0), 1, -1, -1), "lets queries attend to padding"),  # no padding
    (lambda t, p: torch.ones_like(_causal(t)).triu() & (t != p)[:, None, None, :], "later one"),  # wrong triangle
    (lambda t, p: _causal(t) & (t != p)[:, None, :, None], "rows"),  # pads the queries
    (lambda t, p: (t != p)[:, None, None, :].expand(-1, 1, t.size(1), -1), "later one"),  # padding only
    (lambda t, p: _causal(t) & (t != p)[:, None, :], "shape"),  # [B, T, T]
    (lambda t, p: (_causal(t) & (t != p)[:, None, None, :]).long(), "dtype"),
    # the chapter's own check, tx's two masks combined, is not an answer
    (lambda t, p: __import__("tx").causal_mask(t.size(1)) & __import__("tx").padding_mask(t, p), "calls tx.causal_mask"),
    (lambda t, p: _causal(t) & __import__("tx").padding_mask(t, p), "calls tx.padding_mask"),
    (lambda t, p: __import__("tx").language_model.lm_mask(t != p, t.size(1)), "calls tx.language_model.lm_mask"),
])
def test_lm_mask_mistakes_are_named(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        ch13.check_lm_mask(wrong)


@pytest.mark.parametrize("wrong, hint", [
    (_stub, "NotImplementedError"),
    (lambda z, k: z.masked_fill(z < z.topk(k, -1).values[..., -1:], 0.0), "to 0"),  # zeros, not -inf
    (lambda z, k: top_k(z, k).softmax(-1), "probabilities"),
    (lambda z, k: z.masked_fill(z <= z.topk(k, -1).values[..., -1:], float("-inf")), "keeps"),  # off by one
    (lambda z, k: top_k(z, k).sort(-1, descending=True).values, "sorted"),
    (lambda z, k: z.topk(k, -1).values, "shape"),  # only the k values
])
def test_top_k_mistakes_are_named(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        ch13.check_top_k(wrong)


def per_sentence(losses, targets, pad_id):
    real = targets != pad_id
    return sum(float(losses[i][real[i]].mean().exp()) for i in range(len(losses))) / len(losses)


@pytest.mark.parametrize("wrong, hint", [
    (_stub, "NotImplementedError"),
    (lambda losses, t, p: float(losses.mean().exp()), "padding"),
    (lambda losses, t, p: float(losses[t != p].mean()), "exp of it"),
    (per_sentence, "average the sentences"),
    (lambda losses, t, p: float(losses[t != p].sum().exp()), "expected"),  # exp of the sum
    (lambda losses, t, p: float(2 ** losses[t != p].mean()), "expected"),  # base 2 with natural-log losses
    (lambda losses, t, p: losses[t != p].exp(), "one number"),
    # 0 hard-coded for the pad id
    (lambda losses, t, p: float(losses[t != 0].mean().exp()), "compare the targets with the pad_id argument"),
])
def test_perplexity_mistakes_are_named(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        ch13.check_perplexity(wrong)
