"""Checkers for chapter 3, Self-attention as vectors: the six steps, one word at a time.

Axes: n words, Dk query/key size, Dv value size.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from . import CheckFailed, assert_number, assert_tensor, call, forbids, part, parts, passed, seeded, tx_names
from ..attention import attention

__all__ = ["SOFTMAXES", "check_scaled_score", "check_softmax", "check_attend_one_word"]

SOFTMAXES = [(owner, name) for name in ("softmax", "log_softmax")  # exp of a log-softmax is one too
             for owner in (torch, torch.Tensor, torch.nn.functional, torch.special)]
"""torch's softmax functions, which the softmax exercises ask the learner to do without.

:meta hide-value:
"""

# The chapter's "Thinking Machines": q_Thinking, and the keys and values of both words.
_Q_THINKING = torch.tensor([2.0, 0.0, 2.0])
_K_TM = torch.tensor([[2.0, 2.0, 0.0], [1.0, -1.0, 0.0]])  # [n, Dk]
_V_TM = torch.tensor([[2.0, 0.0, 2.0], [-1.0, -2.0, 1.0]])  # [n, Dv]
# Exercise 3.1's pair, worked by hand: d_k = 4, not the example's 3, so q . k = 3 scales to 3 / 2.
_Q_EXERCISE, _K_EXERCISE = torch.tensor([1.0, -2.0, 0.0, 3.0]), torch.tensor([2.0, 1.0, 5.0, 1.0])


def _number(got: Any) -> float | None:
    """``got`` as a float when it is one number (int, float or one-element tensor), else None."""
    if isinstance(got, Tensor) and got.numel() == 1:
        return float(got.item())
    if isinstance(got, (int, float)) and not isinstance(got, bool):
        return float(got)
    return None


@parts("the worked pairs", "random sizes", drawn=True)
def check_scaled_score(fn: Callable[[Tensor, Tensor], Any]) -> None:
    """``fn(q [Dk], k [Dk])`` must return the scaled score q . k / sqrt(Dk) (steps 2 and 3)."""
    gen = torch.Generator().manual_seed(seeded(3))
    worked = [(_Q_EXERCISE, _K_EXERCISE), (_Q_THINKING, _K_TM[1])]  # 3 / sqrt(4); the chapter's 2 / sqrt(3)
    drawn = [(torch.randn(d_k, generator=gen), torch.randn(d_k, generator=gen)) for d_k in (4, 16, 64)]
    for name, cases in (("the worked pairs", worked), ("random sizes", drawn)):
        with part(name):
            for q, k in cases:
                _check_scaled_score(fn, q, k)
    passed("q . k / sqrt(d_k); for the exercise's q and k, 3 / sqrt(4) = 1.5.")


def _check_scaled_score(fn: Callable[[Tensor, Tensor], Any], q: Tensor, k: Tensor) -> None:
    d_k = q.numel()
    dot = float(q @ k)
    # tx.attention scores one query against keys [k, 0]: the second score is 0, so the log of
    # the ratio of the two weights is the scaled score itself.
    weights = attention(q[None], torch.stack([k, torch.zeros_like(k)]), torch.zeros(2, 1))[1][0]
    expected = float(weights[0].log() - weights[1].log())
    got = call(fn, q.clone(), k.clone())
    value = _number(got)
    if value is None:
        shape = tuple(got.shape) if isinstance(got, Tensor) else type(got).__name__
        raise CheckFailed(
            f"return one number for q and k of size {d_k}, got {shape}: add up the products q[m] * k[m]."
        )
    if d_k > 1 and math.isclose(value, dot, rel_tol=1e-4, abs_tol=1e-4) and not math.isclose(dot, expected, abs_tol=1e-4):
        raise CheckFailed(f"you returned q . k = {dot:.4g}; step 3 divides it by sqrt(d_k) = sqrt({d_k}).")
    if math.isclose(value, dot / d_k, rel_tol=1e-4, abs_tol=1e-4) and not math.isclose(dot / d_k, expected, abs_tol=1e-4):
        raise CheckFailed(f"you divided by d_k = {d_k}; divide by its square root, sqrt({d_k}) = {math.sqrt(d_k):.4g}.")
    assert_number(value, expected, f"your scaled score for q and k of size {d_k}", tol=1e-3)


@forbids(SOFTMAXES, "write softmax yourself, with exp, a sum and a division.")
@parts("ordinary scores", "very large and very small scores", drawn=True)
def check_softmax(fn: Callable[[Tensor], Any]) -> None:
    """``fn(scores [n])`` must return softmax weights [n]: positive, summing to 1, as tx.attention's."""
    gen = torch.Generator().manual_seed(seeded(4))
    ordinary = [
        torch.tensor([4.0, 2.0]) / math.sqrt(3),  # the chapter's scaled scores for Thinking
        torch.tensor([1.0, 2.0, 3.0]),
        torch.randn(7, generator=gen) * 3,
    ]
    extreme = [
        torch.tensor([1000.0, 999.0, 998.0]),  # exp(1000) overflows to inf in float32
        torch.tensor([-1000.0, -1001.0]),  # exp(-1000) underflows to 0: 0 / 0
        # A wide range: subtracting the smallest score instead of the largest overflows here.
        torch.tensor([3.0, -150.0, 0.5, -2.0]),
        # One score far above the rest: subtracting the mean still leaves exp(124), which overflows.
        torch.tensor([120.0, -40.0, -45.0, -50.0]),
        torch.randn(9, generator=gen) * 60,
    ]
    for name, cases in (("ordinary scores", ordinary), ("very large and very small scores", extreme)):
        with part(name):
            for scores in cases:
                _check_softmax(fn, scores)
    passed("exp(s_j) / sum_l exp(s_l), safe for large scores too.")


def _check_softmax(fn: Callable[[Tensor], Any], scores: Tensor) -> None:
    n = scores.numel()
    # With one query [1] and keys `scores` [n, 1], d_k = 1: tx.attention's weights are softmax(scores).
    expected = attention(torch.ones(1, 1), scores[:, None], torch.zeros(n, 1))[1][0]  # [n]
    got = call(fn, scores.clone())
    what = f"your softmax of {[round(s, 3) for s in scores.tolist()]}"
    overflows = float(scores.abs().max()) > 80  # exp(80) is near float32's limit
    if isinstance(got, Tensor) and got.shape == expected.shape and not torch.isfinite(got).all() and overflows:
        raise CheckFailed(f"{what} holds inf or nan: {_overflow_hint(scores)}")
    if (isinstance(got, Tensor) and got.shape == expected.shape and bool(torch.isfinite(got).all())
            and not math.isclose(float(got.sum()), 1.0, abs_tol=1e-4)):
        raise CheckFailed(
            f"{what} sums to {float(got.sum()):.4g}, not 1: divide every exp by the sum of all of them."
        )
    assert_tensor(got, expected, what)


def _overflow_hint(scores: Tensor) -> str:
    """Why a softmax of ``scores`` came out inf or nan, naming the shifts that still overflow for them."""
    top = float(scores.max())
    above = {"the smallest score": top - float(scores.min()), "the mean score": top - float(scores.mean())}
    unsafe = [f"{shift} leaves an exponent of {gap:.0f}" for shift, gap in above.items() if gap > 88]
    if not unsafe:
        return ("exp overflows (or every exp underflows to 0) for scores this large. Softmax is unchanged when "
                "you subtract the same number from every score: subtract the largest score first.")
    return (f"exp of anything above about 88 overflows in float32, and subtracting {' and subtracting '.join(unsafe)}. "
            "Subtract the largest score, so that every exponent is at most 0.")


def _attentions() -> list[tuple[object, str]]:
    """tx's and torch's own attention, which exercise 3.3 asks the learner to write."""
    return tx_names("attention", "self_attention_by_vectors") + [(F, "scaled_dot_product_attention")]


@forbids(_attentions, "write the steps yourself: one product for the scores, one for the sum.")
@parts("the chapter's two words", "random sizes, d_v not d_k", "scores in the hundreds", drawn=True)
def check_attend_one_word(fn: Callable[[Tensor, Tensor, Tensor], Any]) -> None:
    """``fn(q_i [Dk], K [n, Dk], V [n, Dv])`` must return z_i [Dv], row i of tx.attention's output."""
    gen = torch.Generator().manual_seed(seeded(5))
    cases = {
        "the chapter's two words": (_Q_THINKING[None], _K_TM, _V_TM),
        # Dv differs from Dk, so scaling by the wrong size shows.
        "random sizes, d_v not d_k": (torch.randn(5, 4, generator=gen), torch.randn(5, 4, generator=gen),
                                      torch.randn(5, 6, generator=gen)),
        # Scores in the hundreds: a softmax that does not subtract the largest score overflows here.
        "scores in the hundreds": (torch.randn(2, 4, generator=gen) * 60, torch.randn(3, 4, generator=gen) * 10,
                                   torch.randn(3, 2, generator=gen)),
    }
    for name, (Q, K, V) in cases.items():
        with part(name):
            _check_attend_one_word(fn, Q, K, V)
    passed("z_i = sum_j softmax_j(q_i . k_j / sqrt(d_k)) v_j, row i of tx.attention.")


def _check_attend_one_word(fn: Callable[[Tensor, Tensor, Tensor], Any], Q: Tensor, K: Tensor, V: Tensor) -> None:
    n, d_k = K.shape
    out, weights = attention(Q, K, V)  # [Tq, Dv], [Tq, n]
    for i in range(Q.shape[0]):
        got = call(fn, Q[i].clone(), K.clone(), V.clone())
        what = f"your z_{i + 1} for n={n} words, d_k={d_k}, d_v={V.shape[1]}"
        if isinstance(got, Tensor) and got.shape == V.shape:
            raise CheckFailed(
                f"{what} has shape {tuple(got.shape)}, one row per word: that is step 5. Step 6 adds "
                f"the weighted values up into one vector of size d_v = {V.shape[1]}."
            )
        if isinstance(got, Tensor) and got.shape == (V.shape[1],):
            unscaled = (Q[i] @ K.T).softmax(0) @ V
            by_dv = (Q[i] @ K.T / math.sqrt(V.shape[1])).softmax(0) @ V
            unweighted = V.sum(0)
            if torch.allclose(got, unscaled, atol=1e-5) and not torch.allclose(unscaled, out[i], atol=1e-5):
                raise CheckFailed(f"{what} skips step 3: divide the scores by sqrt(d_k) = sqrt({d_k}).")
            if torch.allclose(got, by_dv, atol=1e-5) and not torch.allclose(by_dv, out[i], atol=1e-5):
                raise CheckFailed(
                    f"{what} divides by the square root of the value size; step 3 uses d_k = {d_k}, "
                    "the size of the queries and keys."
                )
            if torch.allclose(got, unweighted, atol=1e-5):
                raise CheckFailed(f"{what} adds the values without weighting them: multiply v_j by weight j (step 5).")
            scores = Q[i] @ K.T / math.sqrt(d_k)  # [n]
            if not bool(torch.isfinite(got).all()) and float(scores.abs().max()) > 80:
                raise CheckFailed(
                    f"{what} holds inf or nan: its scaled scores reach {float(scores.abs().max()):.0f}, and "
                    "exp of those overflows. Compute the softmax of step 4 as in the softmax exercise, "
                    "subtracting the largest score first (or with torch.softmax)."
                )
        assert_tensor(got, out[i], what)
