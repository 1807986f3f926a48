"""Chapter 4's checkers accept the reference answers and reject wrong ones with a useful hint."""

from __future__ import annotations

import importlib
import math

import pytest
import torch

from conftest import rng_untouched
from tx.exercises import ch04


# ----------------------------------------------------------------- shape of Q K^T


def shape_right(q_shape, k_shape):
    return (*q_shape[:-1], k_shape[-2])


def test_shape_accepts_the_right_shape(capsys):
    ch04.check_scores_shape(shape_right)
    assert capsys.readouterr().out.startswith("Correct:")


def test_shape_accepts_a_torch_size(capsys):
    ch04.check_scores_shape(lambda q, k: torch.Size(shape_right(q, k)))
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda q, k: (*q[:-1], q[-1]), "disappears"),  # [..., Tq, Dk]: d_k kept
    (lambda q, k: (*q[:-2], k[-2], q[-2]), "Rows are queries"),
    (lambda q, k: (q[-2], k[-2]), "leading axes"),
    (lambda q, k: "Tq x Tk", "tuple of integers"),
    (lambda q, k: (10, 12), "expected"),  # the prompt's example, hard-coded
    (lambda q, k: (*q[:-1], k[-2] + 0.5), "tuple of integers"),
])
def test_shape_rejects_wrong_answers(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch04.check_scores_shape(wrong)


# ----------------------------------------------------------------- variance of a dot product


def variance_right(d_k, n_samples, scaled, std):
    q, k = torch.randn(n_samples, d_k) * std, torch.randn(n_samples, d_k) * std
    dots = (q * k).sum(dim=-1)
    if scaled:
        dots = dots / math.sqrt(d_k)
    return dots.var().item()


def test_variance_accepts_the_estimate(capsys):
    ch04.check_dot_product_variance(variance_right)
    assert capsys.readouterr().out.startswith("Correct:")


def fixed_sample(d_k, n_samples, scaled, std):
    g = torch.Generator().manual_seed(0)
    dots = (torch.randn(n_samples, d_k, generator=g) * torch.randn(n_samples, d_k, generator=g)).sum(-1) * std**2
    return (dots / (math.sqrt(d_k) if scaled else 1)).var().item()


def only_q_scaled(d_k, n_samples, scaled, std):
    dots = (torch.randn(n_samples, d_k) * std * torch.randn(n_samples, d_k)).sum(-1)
    return (dots / (math.sqrt(d_k) if scaled else 1)).var().item()


@pytest.mark.parametrize("wrong, hint", [
    (lambda d, n, s, std: variance_right(d, n, s, std) ** 0.5, "standard deviation"),
    (lambda d, n, s, std: (torch.randn(n, d) * torch.randn(n, d)).var().item() * std**4, "Sum over the last axis"),
    (lambda d, n, s, std: variance_right(d, n, False, std), "divide each dot product"),
    (lambda d, n, s, std: variance_right(d, n, False, std) / (d * d if s else 1), "not by d_k"),
    (lambda d, n, s, std: 4 * variance_right(d, n, s, std), "variance for d_k"),  # randn * 2 when std = 1
    (lambda d, n, s, std: [variance_right(d, n, s, std)], "one number"),
    (lambda d, n, s, std: (1.0 if s else float(d)) * std**4, "measure it"),  # the theory, hard-coded
    (lambda d, n, s, std: torch.tensor(variance_right(d, n, s, std)), "Python float"),
    (fixed_sample, "measure it"),  # its own generator: the same sample every call
    # the three mistakes the std argument invites
    (lambda d, n, s, std: variance_right(d, n, s, 1.0), "multiply torch.randn"),  # std ignored
    (only_q_scaled, "for each"),
    (lambda d, n, s, std: variance_right(d, n, s, std**2), "not by its square"),  # std taken for the variance
])
def test_variance_rejects_wrong_answers(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch04.check_dot_product_variance(wrong)


def test_variance_checker_leaves_the_global_random_stream_alone():
    assert rng_untouched(ch04.check_dot_product_variance, variance_right)


# ----------------------------------------------------------------- attention in matrix form


def attention_right(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    if mask is not None:  # a query that may attend to nothing: zero weights
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights


def test_attention_accepts_nan_to_num_for_empty_rows(capsys):
    def with_nan_to_num(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = scores.softmax(dim=-1).nan_to_num(0.0)
        return weights @ v, weights

    ch04.check_attention_matrix(with_nan_to_num)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("answer, name", [
    (lambda q, k, v, mask=None: __import__("tx").attention(q, k, v, mask), "tx.attention"),
    (lambda q, k, v, mask=None: importlib.import_module("tx.attention").attention(q, k, v, mask),
     "tx.attention.attention"),
    # the same function, imported by another tx module
    (lambda q, k, v, mask=None: importlib.import_module("tx.multi_head").attention(q, k, v, mask),
     "tx.multi_head.attention"),
])
def test_attention_refuses_tx_attention(answer, name):
    with pytest.raises(AssertionError, match=f"calls {name}:"):
        ch04.check_attention_matrix(answer)


def test_attention_accepts_the_formula(capsys):
    ch04.check_attention_matrix(attention_right)
    assert capsys.readouterr().out.startswith("Correct:")


def _no_mask(q, k, v, mask=None):
    return attention_right(q, k, v)


def _inverted_mask(q, k, v, mask=None):
    return attention_right(q, k, v, None if mask is None else ~mask)


def _mask_after_softmax(q, k, v, mask=None):
    weights = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1)
    if mask is not None:
        weights = weights * mask
    return weights @ v, weights


def _nan_for_empty_rows(q, k, v, mask=None):  # the masked_fill(-inf) of the formula alone
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


def _large_negative(q, k, v, mask=None):  # -1e9 instead of -inf: an empty row is uniform
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, -1e9)
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


def _output_before_zeroing(q, k, v, mask=None):
    out, weights = _nan_for_empty_rows(q, k, v, mask)
    return out, weights.nan_to_num(0.0)


def _softmax_over_queries(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(dim=-2)
    return weights @ v, weights


@pytest.mark.parametrize("wrong, hint", [
    (_no_mask, "not 0 where the mask is False"),
    (_inverted_mask, "True means may attend"),
    (_mask_after_softmax, "sums to"),
    (_softmax_over_queries, "over the last axis"),
    (_nan_for_empty_rows, "nan in those rows: every score is -inf"),
    (_large_negative, "still sum to 1"),
    (_output_before_zeroing, "output is nan in those rows"),
    (lambda q, k, v, mask=None: attention_right(q, k, v, mask)[0], "return two tensors"),
    (lambda q, k, v, mask=None: attention_right(q, k, v, mask)[::-1], "first tensor is the weights"),
    (lambda q, k, v, mask=None: attention_right(q * math.sqrt(q.shape[-1]), k, v, mask), "did not divide"),
    (lambda q, k, v, mask=None: attention_right(q * math.sqrt(q.shape[-1] / v.shape[-1]), k, v, mask),
     "divided by sqrt\\(d_v\\)"),
    (lambda q, k, v, mask=None: tuple(t * float("nan") for t in attention_right(q, k, v, mask)), "nan or inf|sums to"),
])
def test_attention_rejects_wrong_answers(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch04.check_attention_matrix(wrong)
