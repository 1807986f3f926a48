"""Checkers for chapter 5, multi-head attention.

Axes: B batch, H heads, T positions, D d_model, Dh = D / H head size.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch import Tensor

from ..attention import attention
from ..multi_head import MultiHeadAttention, merge_heads, split_heads
from . import (CheckFailed, as_count, assert_tensor, call, forbids, keeps_random_state, part, parts, passed, seeded,
               tx_names)

__all__ = ["check_split_heads", "check_combine_heads", "check_count_parameters"]

# (B, T, D, H): several heads, odd sizes, and T != H so mixed-up axes show.
_SHAPES = [(2, 3, 8, 2), (1, 5, 12, 3), (3, 4, 16, 4)]


_SPLIT = "random batches of 2 to 4 heads"


@forbids(lambda: tx_names("split_heads"), "cut the features into heads yourself, with view and transpose.")
@parts(_SPLIT, drawn=True)
def check_split_heads(fn: Callable[..., Any]) -> None:
    """``fn(x [B, T, D], n_heads) -> [B, H, T, Dh]`` must equal :func:`tx.multi_head.split_heads`."""
    g = torch.Generator().manual_seed(seeded(5))
    with part(_SPLIT):
        for B, T, D, H in _SHAPES:
            _check_split_heads(fn, torch.randn(B, T, D, generator=g), H)
    passed("split_heads gives every head its own slice of every position's features.")


def _check_split_heads(fn: Callable[..., Any], x: Tensor, H: int) -> None:
    B, T, D = x.shape
    got = call(fn, x.clone(), H)
    expected = split_heads(x, H)
    if isinstance(got, Tensor) and got.shape == expected.shape and not torch.allclose(got, expected):
        scrambled = x.reshape(B, T, H, D // H).permute(0, 2, 1, 3).transpose(-2, -1).reshape(B, H, T, D // H)
        if torch.allclose(got, scrambled):
            raise CheckFailed("the shape is right but each head's numbers are scrambled: cut each position's "
                              "vector with x.view(B, T, H, Dh), then swap only the T and H axes, transpose(1, 2).")
        if torch.allclose(got, x.reshape(B, H, T, D // H)):
            raise CheckFailed(
                "the shape is right but positions are mixed up: reshaping straight to "
                "[B, H, T, Dh] cuts the T*D numbers of a sentence into H runs of whole positions. "
                "Cut each position's vector first, [B, T, H, Dh], then swap the T and H axes."
            )
    assert_tensor(got, expected, f"split_heads(x of shape {tuple(x.shape)}, n_heads={H})")


@forbids(lambda: tx_names("merge_heads"), "put the heads back together yourself, with transpose and reshape.")
@parts(_SPLIT, drawn=True)
def check_combine_heads(fn: Callable[..., Any]) -> None:
    """``fn(z [B, H, T, Dh], w_o: nn.Linear) -> [B, T, D]`` must equal a whole tx.MultiHeadAttention."""
    with part(_SPLIT):
        for B, T, D, H in _SHAPES:
            _check_combine_heads(fn, B, T, D, H)
    passed("concatenating the heads and applying W^O gives tx.MultiHeadAttention's output.")


def _check_combine_heads(fn: Callable[..., Any], B: int, T: int, D: int, H: int) -> None:
    with torch.random.fork_rng(devices=[]):  # the learner's own random stream stays untouched
        torch.manual_seed(seeded(5))
        mha = MultiHeadAttention(D, H).eval()
        x = torch.randn(B, T, D)
    with torch.no_grad():
        q, k, v = (split_heads(layer(x), H) for layer in (mha.w_q, mha.w_k, mha.w_v))
        z = attention(q, k, v)[0]  # [B, H, T, Dh]: every head's output
        expected = mha(x, x, x)  # [B, T, D]
        got = call(fn, z.clone(), mha.w_o)
        if isinstance(got, Tensor) and got.shape == expected.shape and not torch.allclose(got, expected, atol=1e-5):
            if torch.allclose(got, merge_heads(z), atol=1e-5):
                raise CheckFailed("you concatenated the heads correctly but did not apply W^O: return w_o(...) of it.")
            if torch.allclose(got, mha.w_o(z.reshape(B, T, D)), atol=1e-5):
                raise CheckFailed(
                    "z.reshape(B, T, D) glues numbers in [B, H, T, Dh] order, mixing positions: "
                    "move the heads axis next to Dh first (transpose(1, 2)), then reshape."
                )
    assert_tensor(got, expected, f"combine_heads(z of shape {tuple(z.shape)}, w_o)")


def _linear_count(n_in: int, n_out: int) -> int:
    """The weights and bias of an nn.Linear(n_in, n_out)."""
    return n_in * n_out + n_out


@forbids([(MultiHeadAttention, "__init__")],
         "count from the shapes of the four linear layers, without building the layer.")
@parts("heads as wide as d_model together", "heads wider or narrower than d_model together", drawn=True)
@keeps_random_state
def check_count_parameters(fn: Callable[..., Any]) -> None:
    """``fn(d_model, n_heads, d_head) -> int``: the parameters of multi-head attention with ``n_heads``
    heads of ``d_head`` numbers, W^Q, W^K, W^V of d_model x (n_heads * d_head) and W^O back, with biases."""
    g = torch.Generator().manual_seed(seeded(5))
    hidden = int(torch.randint(2, 40, (1,), generator=g)) * 3  # a size the learner never sees
    cases = {
        # d_head = d_model / n_heads as in tx.MultiHeadAttention, the paper's first: not a part of its own,
        # since its count, printed in the chapter, would earn it
        "heads as wide as d_model together": [(512, 8, 64), (512, 1, 512), (512, 16, 32), (1024, 16, 64), (6, 3, 2),
                                              (hidden, 3, hidden // 3)],
        "heads wider or narrower than d_model together": [(4, 8, 3), (512, 16, 64), (512, 4, 32), (hidden, 5, 7)],
    }
    for name, sizes in cases.items():
        with part(name):
            for d_model, n_heads, d_head in sizes:
                _check_count_parameters(fn, d_model, n_heads, d_head)
    passed("3 (d_model h d_head + h d_head) + (h d_head d_model + d_model): the heads matter only through "
           "h d_head, their total width.")


def _check_count_parameters(fn: Callable[..., Any], d_model: int, n_heads: int, d_head: int) -> None:
    inner = n_heads * d_head
    expected = 3 * _linear_count(d_model, inner) + _linear_count(inner, d_model)
    if inner == d_model:  # tx's layer has these shapes: its count must agree
        assert expected == sum(p.numel() for p in MultiHeadAttention(d_model, n_heads).parameters())
    got = call(fn, d_model, n_heads, d_head)
    got = as_count(got, "count_parameters should return an int, got {kind}.")
    if got == expected:
        return
    where = f"count_parameters({d_model}, {n_heads}, {d_head}) = {got}; expected {expected}."
    if got == 4 * d_model * inner:
        raise CheckFailed(f"{where} Each of the four nn.Linear layers also has a bias, as long as its output.")
    if got == 4 * _linear_count(d_model, d_model) and inner != d_model:
        raise CheckFailed(f"{where} That is the count when n_heads * d_head = d_model; here the heads together "
                          f"are {inner} wide, so W^Q, W^K, W^V are d_model x {inner} and W^O is {inner} x d_model.")
    if got == 4 * _linear_count(d_model, inner):
        raise CheckFailed(f"{where} W^O goes the other way, {inner} x d_model: its bias has d_model numbers, not "
                          f"{inner}.")
    if got in (3 * _linear_count(d_model, inner), 3 * d_model * inner):
        raise CheckFailed(f"{where} Remember W^O, which maps the heads' {inner} numbers back to d_model.")
    if got == 3 * _linear_count(d_model, d_head) + _linear_count(d_head, d_model) or \
            got == (3 * _linear_count(d_model, d_head) + _linear_count(d_head, d_model)) * n_heads:
        raise CheckFailed(f"{where} The projections of all heads sit side by side in W^Q, W^K, W^V: "
                          "d_model x (n_heads * d_head) each, one bias each, and one W^O.")
    raise CheckFailed(f"{where} Count W^Q, W^K, W^V (d_model x n_heads * d_head, with biases) and W^O "
                      "(n_heads * d_head x d_model, with its bias).")
