"""Chapter 3's checkers accept the reference answers and reject wrong ones with a useful hint."""

from __future__ import annotations

import importlib
import math

import pytest
import torch

from conftest import rng_untouched
from tx.exercises import ch03


# ----------------------------------------------------------------- one scaled score


def score_right(q, k):
    return (q * k).sum() / math.sqrt(q.numel())


def test_score_accepts_the_formula(capsys):
    ch03.check_scaled_score(score_right)
    assert capsys.readouterr().out.startswith("Correct:")


def test_score_checks_the_exercises_pair_first(capsys):
    # The pair the exercise works by hand is the check's first question, and its answer is 1.5.
    asked = []
    ch03.check_scaled_score(lambda q, k: asked.append((q.tolist(), k.tolist())) or score_right(q, k))
    assert asked[0] == ([1.0, -2.0, 0.0, 3.0], [2.0, 1.0, 5.0, 1.0])
    assert float(score_right(torch.tensor(asked[0][0]), torch.tensor(asked[0][1]))) == 1.5
    assert "1.5" in capsys.readouterr().out


def test_score_accepts_a_python_float(capsys):
    ch03.check_scaled_score(lambda q, k: float(q @ k) / math.sqrt(len(q)))
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda q, k: q @ k, r"divides it by sqrt\(d_k\)"),
    (lambda q, k: (q @ k) / q.numel(), "square root"),
    (lambda q, k: q * k / math.sqrt(q.numel()), "return one number"),
    (lambda q, k: (q @ k) / 8, "scaled score"),  # the paper's 8 is sqrt(64), not sqrt(d_k) here
    (lambda q, k: (q @ q) / math.sqrt(q.numel()), "scaled score"),
    (lambda q, k: (q @ k) / math.sqrt(3), "size 4"),  # the chapter's d_k = 3, kept for the exercise's 4
])
def test_score_rejects_wrong_answers(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch03.check_scaled_score(wrong)


# ----------------------------------------------------------------- softmax


def softmax_right(scores):
    e = (scores - scores.max()).exp()
    return e / e.sum()


def test_softmax_accepts_the_stable_formula(capsys):
    ch03.check_softmax(softmax_right)
    assert capsys.readouterr().out.startswith("Correct:")


@pytest.mark.parametrize("wrong, hint", [
    (lambda s: s.exp() / s.exp().sum(), "subtract the largest score"),  # overflows at 1000
    (lambda s: (s - s.max()).exp(), "divide every exp by the sum"),
    (lambda s: s / s.sum(), "differs|sums to"),
    (lambda s: (s - s.max()).exp().tolist(), "torch.Tensor"),
    (lambda s: softmax_right(s)[:-1], "has shape"),
    (lambda s: (s - s.min()).exp() / (s - s.min()).exp().sum(), "subtracting the smallest score leaves an exponent of 153"),
    (lambda s: (s - s.mean()).exp() / (s - s.mean()).exp().sum(), "subtracting the mean score leaves an exponent of 124"),
    (lambda s: torch.softmax(s, 0), "calls torch.softmax"),
    (lambda s: softmax_right(s) * float("nan"), "nan or inf"),
])
def test_softmax_rejects_wrong_answers(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch03.check_softmax(wrong)


# ----------------------------------------------------------------- the six steps for one word


def one_word_right(q_i, K, V):
    scores = torch.stack([q_i @ k_j for k_j in K]) / math.sqrt(q_i.shape[-1])
    weights = scores.softmax(dim=0)
    return sum(w * v_j for w, v_j in zip(weights, V))


def test_one_word_accepts_the_six_steps(capsys):
    ch03.check_attend_one_word(one_word_right)
    assert capsys.readouterr().out.startswith("Correct:")


@pytest.mark.parametrize("answer, name", [
    (lambda q, K, V: __import__("tx").attention(q[None], K, V)[0][0], "tx.attention"),
    # the same function, imported by another tx module
    (lambda q, K, V: importlib.import_module("tx.multi_head").attention(q[None], K, V)[0][0],
     "tx.multi_head.attention"),
    (lambda q, K, V: torch.nn.functional.scaled_dot_product_attention(q[None], K, V)[0],
     "scaled_dot_product_attention"),
])
def test_one_word_refuses_tx_and_torch_attention(answer, name):
    with pytest.raises(AssertionError, match=f"calls .*{name}"):
        ch03.check_attend_one_word(answer)


def test_one_word_checks_against_tx_attention():
    # The reference answer equals row i of tx.attention, which the checker uses.
    import tx

    q, K, V = torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 2)
    for i in range(3):
        torch.testing.assert_close(one_word_right(q[i], K, V), tx.attention(q, K, V)[0][i])


@pytest.mark.parametrize("wrong, hint", [
    (lambda q, K, V: (q @ K.T).softmax(0) @ V, "skips step 3"),
    (lambda q, K, V: (q @ K.T / math.sqrt(V.shape[1])).softmax(0) @ V, "value size"),
    (lambda q, K, V: (q @ K.T / math.sqrt(len(q))).softmax(0)[:, None] * V, "Step 6 adds"),
    (lambda q, K, V: V.sum(0), "without weighting"),
    (lambda q, K, V: (q @ K.T / math.sqrt(len(q))) @ V, "differs at index"),  # no softmax
    (lambda q, K, V: (q @ K.T / math.sqrt(len(q))).softmax(0) @ K, "has shape|differs"),  # keys, not values
    # softmax by exp / sum without subtracting the largest score: overflows on large scores
    (lambda q, K, V: (q @ K.T / math.sqrt(len(q))).exp() / (q @ K.T / math.sqrt(len(q))).exp().sum() @ V,
     "subtracting the largest score first"),
])
def test_one_word_rejects_wrong_answers(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch03.check_attend_one_word(wrong)


def test_checkers_leave_the_global_random_stream_alone():
    assert rng_untouched(ch03.check_scaled_score, score_right)
    assert rng_untouched(ch03.check_softmax, softmax_right)
    assert rng_untouched(ch03.check_attend_one_word, one_word_right)


def test_checkers_do_not_see_changes_to_their_inputs():
    def score_in_place(q, k):
        q.mul_(k)  # writes into q: the checker passes copies, so its reference stays right
        return q.sum() / math.sqrt(q.numel())

    ch03.check_scaled_score(score_in_place)
