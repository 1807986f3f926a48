"""Checkers for chapter 4, Self-attention as matrices: shapes, the sqrt(d_k) scaling, masks.

Axes: Tq query positions, Tk key positions, Dk query/key size, Dv value size; ``...`` any
leading axes (batch, heads).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from . import (CheckFailed, as_number, as_shape, assert_number, assert_tensor, call, forbids, part, parts, passed,
               seeded, tx_names)
from ..attention import attention
from ..masks import causal_mask, padding_mask

__all__ = ["check_scores_shape", "check_dot_product_variance", "check_attention_matrix"]


@parts("Q and K of two axes", "batch and head axes", "sizes drawn at random", drawn=True)
def check_scores_shape(fn: Callable[[tuple[int, ...], tuple[int, ...]], Any]) -> None:
    """``fn(q_shape, k_shape)`` must give the shape of Q K^T for Q [..., Tq, Dk] and K [..., Tk, Dk]."""
    g = torch.Generator().manual_seed(seeded(4))
    b, h, tq, tk, d = (int(n) for n in torch.randint(2, 30, (5,), generator=g))  # sizes the learner never sees
    cases = {
        "Q and K of two axes": [((3, 3), (3, 3)), ((2, 5), (7, 5)), ((10, 64), (12, 64))],
        "batch and head axes": [((4, 8, 10, 64), (4, 8, 12, 64))],
        "sizes drawn at random": [((b, h, tq, d), (b, h, tk, d)), ((b, tq + 1, d + 2), (b, tk + 3, d + 2))],
    }
    for name, shapes in cases.items():
        with part(name):
            for q_shape, k_shape in shapes:
                _check_scores_shape(fn, q_shape, k_shape)
    passed("Q K^T has shape [..., Tq, Tk]: one score per (query, key) pair, d_k summed away.")


def _check_scores_shape(fn: Callable[[tuple[int, ...], tuple[int, ...]], Any], q_shape: tuple[int, ...],
                        k_shape: tuple[int, ...]) -> None:
    # The meta device computes shapes without allocating memory.
    q, k = torch.empty(q_shape, device="meta"), torch.empty(k_shape, device="meta")
    expected = tuple((q @ k.transpose(-2, -1)).shape)
    got = call(fn, q_shape, k_shape)
    got = as_shape(got, "the shape")
    if got == expected:
        return
    hint = ""
    if q_shape[-1] in got[-2:] and q_shape[-1] not in expected[-2:]:
        hint = " The d_k axis is the one the product sums over, so it disappears; rows are queries, columns keys."
    elif got[-2:] == expected[-2:][::-1]:
        hint = " Rows are queries (Tq), columns are keys (Tk)."
    elif got[-2:] == expected[-2:]:
        hint = " The leading axes (batch, heads) pass through unchanged."
    raise CheckFailed(f"for Q of shape {q_shape} and K of shape {k_shape} you gave {got}; "
                      f"expected {expected}.{hint}")


_UNSCALED, _SCALED, _STD = "q . k, entries of std 1", "q . k / sqrt(d_k)", "entries of std 2"


@parts(_UNSCALED, _SCALED, _STD)
def check_dot_product_variance(fn: Callable[[int, int, bool, float], Any]) -> None:
    """``fn(d_k, n_samples, scaled, std)`` must estimate Var(q . k) for q, k [Dk] with entries of standard
    deviation ``std``: about d_k std^4, or std^4 once divided by sqrt(d_k)."""
    # Not drawn: the answer draws q and k itself, from torch's stream, which each case seeds
    # (_check_one_variance); a course's variant would ask the same d_k, n_samples, scaled and std.
    cases = {
        _UNSCALED: [(d_k, False, 1.0) for d_k in (4, 16, 64)],
        _SCALED: [(d_k, True, 1.0) for d_k in (4, 16, 64)],
        _STD: [(d_k, scaled, 2.0) for d_k in (4, 16, 64) for scaled in (False, True)],
    }
    for name, variances in cases.items():
        with part(name):
            for d_k, scaled, std in variances:
                _check_one_variance(fn, d_k, scaled, std)
    passed("Var(q . k) = d_k std^4; dividing by sqrt(d_k) takes away the d_k but not the std^4, so it "
           "relies on q and k having entries of about unit size.")


def _check_one_variance(fn: Callable[[int, int, bool, float], Any], d_k: int, scaled: bool, std: float) -> None:
    """One case of :func:`check_dot_product_variance`, with a hint for the usual mistakes."""
    per_entry = std ** 4  # Var(q_m k_m) for independent q_m, k_m of variance std^2
    expected = per_entry * (1.0 if scaled else d_k)
    # Seeded inside fork_rng: the same samples every run, and the notebook's own
    # random stream is left where it was.
    draws = []
    for seed in (d_k, 1000 + d_k):  # two seeds: two samples, two (slightly) different variances
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            draws.append(call(fn, d_k, 20_000, scaled, std))
    got = draws[0]
    what = f"your variance for d_k={d_k}, scaled={scaled}, std={std:g}"
    if isinstance(got, Tensor):
        raise CheckFailed("return the variance as a Python float (tensor.item()), got a tensor of shape "
                          f"{tuple(got.shape)}.")
    got = as_number(got, what)
    if got == expected or draws[0] == draws[1]:
        raise CheckFailed(
            f"{what} is {got:.6g} whatever the random draws (the checker seeds torch differently and "
            "gets the same number): measure it. Draw q and k with torch.randn, take their dot products "
            "and return the sample variance, which is close to the theory but never exactly it."
        )

    def near(value: float) -> bool:
        return abs(got - value) <= 0.1 * value

    if near(expected):
        return
    if std != 1.0 and near(expected / per_entry):
        raise CheckFailed(f"{what} is {got:.3g}, what unit-variance entries give: multiply torch.randn(...) by std, "
                          "for q and for k.")
    if std != 1.0 and near(expected / std ** 2):
        raise CheckFailed(f"{what} is {got:.3g}: each product q[m] * k[m] should have variance "
                          "std² · std² = std⁴. Give both q and k entries of standard deviation std: "
                          "torch.randn(...) * std for each.")
    if std != 1.0 and near(expected * per_entry):
        raise CheckFailed(f"{what} is {got:.3g}: std is the standard deviation, so multiply torch.randn(...) by std, "
                          "not by its square (the variance).")
    if near(math.sqrt(expected)) and not scaled:
        raise CheckFailed(f"{what} is {got:.3g}, close to the square root of the expected value: that is the "
                          "standard deviation; return the variance.")
    if not scaled and near(per_entry):
        raise CheckFailed(
            f"{what} is {got:.3g}, the variance of a single product: a dot product adds up d_k products "
            "q[m] * k[m]. Sum over the last axis before taking the variance (and divide by sqrt(d_k) only when "
            "scaled=True)."
        )
    if scaled and near(expected * d_k):
        raise CheckFailed(f"{what} is {got:.3g}, d_k times too large: with scaled=True divide each dot product "
                          "by sqrt(d_k).")
    if scaled and near(expected / d_k):
        raise CheckFailed(f"{what} is {got:.3g}, d_k times too small: divide by sqrt(d_k), not by d_k.")
    assert_number(got, expected, f"{what} (draw q and k with torch.randn(...) * std: mean 0, standard deviation std)",
                  tol=0.1 * expected)


def _call_attention(fn: Callable[..., Any], q: Tensor, k: Tensor, v: Tensor,
                    mask: Tensor | None) -> tuple[Tensor, Tensor]:
    """Call the learner's function and unpack ``(output, weights)``, or explain what came back."""
    args = (q.clone(), k.clone(), v.clone()) + (() if mask is None else (mask.clone(),))
    got = call(fn, *args)
    if not isinstance(got, tuple) or len(got) != 2:
        kind = f"a tuple of {len(got)}" if isinstance(got, tuple) else type(got).__name__
        raise CheckFailed(f"return two tensors, (output, weights), as tx.attention does; got {kind}.")
    return got


@forbids(lambda: tx_names("attention", "self_attention_by_vectors") + [(F, "scaled_dot_product_attention")],
"write the formula yourself: scores, mask, softmax, then the weighted sum.")
@parts("the chapter's three words", "more keys than queries", "causal and padding masks",
       "queries that may attend to nothing", drawn=True)
def check_attention_matrix(fn: Callable[..., Any]) -> None:
    """``fn(q, k, v, mask=None)`` must return ``(output, weights)`` equal to :func:`tx.attention`'s."""
    gen = torch.Generator().manual_seed(seeded(6))
    X = torch.tensor([[-1.0, -1.0, 0.0, 1.0], [0.0, 0.0, -1.0, 2.0], [-1.0, 1.0, 0.0, 0.0]])  # Action gets results
    W_Q = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    W_K = torch.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    W_V = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    tokens = torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, 0, 0]])  # the second sentence has two <pad>
    cases = {
        "the chapter's three words": [("the chapter's three words", X @ W_Q, X @ W_K, X @ W_V, None)],
        # Tq != Tk and Dk != Dv, so a transposed product or the wrong scale shows.
        "more keys than queries": [
            ("4 queries, 6 keys", torch.randn(4, 8, generator=gen), torch.randn(6, 8, generator=gen),
             torch.randn(6, 5, generator=gen), None),
        ],
        "causal and padding masks": [
            ("a causal mask", torch.randn(5, 4, generator=gen), torch.randn(5, 4, generator=gen),
             torch.randn(5, 3, generator=gen), causal_mask(5)),
            ("a padding mask [B, 1, 1, S] over [B, H, T, Dk]", torch.randn(2, 3, 5, 4, generator=gen),
             torch.randn(2, 3, 5, 4, generator=gen), torch.randn(2, 3, 5, 6, generator=gen), padding_mask(tokens)),
        ],
        # Last, so that the hints above come first: rows 0 and 3 may attend to nothing.
        "queries that may attend to nothing": [
            ("a mask whose queries 0 and 3 may attend to nothing", torch.randn(4, 6, generator=gen),
             torch.randn(5, 6, generator=gen), torch.randn(5, 3, generator=gen),
             torch.ones(4, 5, dtype=torch.bool).index_fill(0, torch.tensor([0, 3]), False)),
        ],
    }
    for part_name, calls in cases.items():
        with part(part_name):
            for name, q, k, v, mask in calls:
                _check_attention_matrix(fn, name, q, k, v, mask)
    passed("softmax(Q K^T / sqrt(d_k)) V, with -inf where the mask is False and zero weights for a query "
           "that may attend to nothing, matches tx.attention.")


def _check_attention_matrix(fn: Callable[..., Any], name: str, q: Tensor, k: Tensor, v: Tensor,
                            mask: Tensor | None) -> None:
    out, weights = attention(q, k, v, mask)
    got_out, got_w = _call_attention(fn, q, k, v, mask)
    if (isinstance(got_out, Tensor) and got_out.shape == weights.shape
            and torch.allclose(got_out.detach().float(), weights, atol=1e-5)):
        raise CheckFailed(f"with {name}, your first tensor is the weights: return (output, weights) in that order.")
    if mask is not None and isinstance(got_w, Tensor) and got_w.shape == weights.shape:
        _check_empty_rows(name, mask.expand(weights.shape), got_w, got_out)
        blocked = ~mask.expand(weights.shape)
        w = got_w.detach().float().nan_to_num(0.0)  # a row with every key masked is nan
        if bool((w[blocked].abs() > 1e-6).any()):
            if bool((w[~blocked].abs() < 1e-6).all()):
                raise CheckFailed(
                    f"with {name}, your weights are zero where the mask is True and not where it is False: "
                    "True means may attend. Fill the scores with -inf where the mask is False."
                )
            raise CheckFailed(
                f"with {name}, your weights are not 0 where the mask is False: replace those scores "
                "with float('-inf') before the softmax."
            )
    if isinstance(got_w, Tensor) and got_w.shape == weights.shape:
        sums = got_w.sum(-1)
        # a row that may attend to nothing sums to 0, as in tx.attention
        target = torch.ones_like(sums) if mask is None else mask.expand(weights.shape).any(-1).to(sums.dtype)
        bad = ~torch.isclose(sums, target, atol=1e-4)
        if bool(bad.any()):
            raise CheckFailed(
                f"with {name}, a row of your weights sums to {float(sums[bad][0]):.4g}: apply the softmax "
                "over the last axis (the keys), after masking, so every row sums to 1."
            )
    if isinstance(got_w, Tensor) and got_w.shape == weights.shape:
        d_k, d_v = q.shape[-1], v.shape[-1]
        for scale, hint in ((1.0, f"you did not divide the scores by sqrt(d_k) = sqrt({d_k})"),
                            (math.sqrt(d_v), f"you divided by sqrt(d_v) = sqrt({d_v}); "
                                             f"the scale is sqrt(d_k) = sqrt({d_k})")):
            if abs(scale - math.sqrt(d_k)) > 1e-6 and torch.allclose(
                    got_w.detach().float(), attention(q * math.sqrt(d_k) / scale, k, v, mask)[1], atol=1e-5):
                raise CheckFailed(f"with {name}, {hint}.")
    assert_tensor(got_w, weights, f"your weight matrix with {name}")
    assert_tensor(got_out, out, f"your output with {name}")


def _check_empty_rows(name: str, mask: Tensor, got_w: Tensor, got_out: Any) -> None:
    """A query row whose mask is all False must get zero weights and a zero output, as in tx.attention."""
    empty = ~mask.any(dim=-1)  # [..., Tq]
    if not bool(empty.any()):
        return
    rows = got_w.detach().float()[empty]  # [n_empty, Tk]
    if bool(rows.isnan().any()):
        raise CheckFailed(
            f"with {name}, your weights are nan in those rows: every score is -inf there, and the softmax "
            "divides 0 by 0. Give such a row zero weights, as tx.attention does: after the softmax, "
            "weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)."
        )
    if bool((rows.sum(-1) - 1).abs().lt(1e-4).all()):
        raise CheckFailed(
            f"with {name}, your weights in those rows still sum to 1 (filling with a large negative number "
            "instead of -inf spreads them evenly over the forbidden keys). A query that may attend to "
            "nothing gets zero weights, and so a zero output, as in tx.attention."
        )
    if isinstance(got_out, Tensor) and bool(got_out.detach().float()[empty].isnan().any()):
        raise CheckFailed(
            f"with {name}, your weights are right but your output is nan in those rows: multiply the values "
            "by the weights after you have set the empty rows to zero."
        )
