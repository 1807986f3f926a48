"""Scaled dot-product attention, as matrices and as the six steps done one word at a time.

Axes: Tq query positions, Tk key positions, Dk query/key size, Dv value size,
n words, D embedding size. ``...`` stands for any leading axes (batch, heads).
Equation 1 of Vaswani et al. (2017)::

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from .checks import check_float, check_same, check_tensor, guarded
from .masks import check_mask

__all__ = ["attention", "self_attention_by_vectors"]


# The checks, which guarded runs once per call before the computation.


def _check_qkv(query: Tensor, key: Tensor, value: Tensor) -> None:
    """Query, key and value are floating tensors of at least 2 dims whose sizes fit together."""
    for name, x in (("query", query), ("key", key), ("value", value)):
        check_tensor(name, x, floating=True)
        if x.dim() < 2:
            raise ValueError(f"{name} must have shape [..., positions, features], got {tuple(x.shape)}.")
    if query.size(-1) != key.size(-1):
        raise ValueError(
            f"query and key must have the same last size Dk to be compared by dot products: "
            f"query {tuple(query.shape)}, key {tuple(key.shape)}."
        )
    try:
        torch.broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"the leading (batch, head) axes of query {tuple(query.shape)}, key {tuple(key.shape)} and "
            f"value {tuple(value.shape)} do not broadcast together; give them the same leading sizes."
        ) from None
    if not query.dtype == key.dtype == value.dtype:
        raise TypeError(
            f"query, key and value must hold numbers of one dtype to be multiplied together: got "
            f"{query.dtype}, {key.dtype} and {value.dtype}. Convert them with `.to({query.dtype})`."
        )
    if key.size(-2) != value.size(-2):
        raise ValueError(
            f"key and value must hold one vector per key position: key has {key.size(-2)} positions "
            f"({tuple(key.shape)}), value {value.size(-2)} ({tuple(value.shape)})."
        )


def _check_attention(
    query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None, dropout_p: float = 0.0
) -> None:
    """Query, key and value fit together, the mask broadcasts to the scores, dropout_p is in [0, 1)."""
    _check_qkv(query, key, value)
    check_float("dropout_p", dropout_p, 0, 1, high_open=True)
    if mask is not None:
        batch = torch.broadcast_shapes(query.shape[:-2], key.shape[:-2])
        check_mask(mask, (*batch, query.size(-2), key.size(-2)))


def _check_vectors(X: Tensor, W_q: Tensor, W_k: Tensor, W_v: Tensor) -> None:
    """X [n, D] and weights [D, Dk], [D, Dk], [D, Dv] that fit together."""
    check_tensor("X", X, dims=2, floating=True)
    for name, W in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v)):
        check_tensor(name, W, dims=2, floating=True)
        check_same("the embedding sizes", "X.shape[1]", X.shape[1], f"{name}.shape[0]", W.shape[0],
                   "Give [D, Dk] weights for [n, D] embeddings.")
    check_same("the query and key sizes", "W_q.shape[1]", W_q.shape[1], "W_k.shape[1]", W_k.shape[1],
               "Queries and keys are compared by dot products, so they need the same size.")


@guarded(_check_attention)
def attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
) -> tuple[Tensor, Tensor]:
    """Scaled dot-product attention: ``(output [..., Tq, Dv], weights
    [..., Tq, Tk])``.

    query [..., Tq, Dk], key [..., Tk, Dk], value [..., Tk, Dv]. ``mask`` is
    bool, broadcastable to [..., Tq, Tk], True = may attend. ``dropout_p``
    drops attention weights before they mix the values (training only); the
    weights returned are the undropped ones, the ones worth drawing. A query
    row whose mask is all False attends to nothing: its weights are all zero
    and its output is zero (as in torch's fused kernel).
    """
    d_k = query.size(-1)
    # Dividing by sqrt(d_k) keeps the scores' variance near 1 whatever d_k
    # is, so the softmax does not saturate into one-hot weights with
    # vanishing gradients.
    scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)  # [..., Tq, Tk]
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(dim=-1)  # [..., Tq, Tk]
    if mask is not None:
        # a fully masked row is 0/0 = NaN after the softmax: zero weights
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    mixing = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    return mixing @ value, weights  # [..., Tq, Dv], [..., Tq, Tk]


@guarded(_check_vectors)
def self_attention_by_vectors(
    X: Tensor, W_q: Tensor, W_k: Tensor, W_v: Tensor
) -> Tensor:
    """Self-attention computed the slow way, one word at a time, as the six
    steps of the book.

    X [n, D] holds one embedding per word; W_q, W_k [D, Dk]; W_v [D, Dv].
    Returns Z [n, Dv], equal to ``attention(X @ W_q, X @ W_k, X @ W_v)[0]``.
    """
    n = X.shape[0]
    d_k = W_k.shape[1]
    # Step 1: a query, a key and a value vector for every word.
    q = [X[i] @ W_q for i in range(n)]  # n x [Dk]
    k = [X[i] @ W_k for i in range(n)]  # n x [Dk]
    v = [X[i] @ W_v for i in range(n)]  # n x [Dv]
    Z = []
    for i in range(n):
        # Step 2: score word i against every word j: the dot product q_i . k_j.
        scores = torch.stack([q[i] @ k[j] for j in range(n)])  # [n]
        # Step 3: divide by sqrt(d_k) (8 in the paper, where d_k = 64).
        scores = scores / math.sqrt(d_k)
        # Step 4: softmax, so the scores are positive and add up to 1.
        weights = scores.softmax(dim=0)  # [n]
        # Step 5: weight each value vector by its softmax weight.
        weighted = [weights[j] * v[j] for j in range(n)]  # n x [Dv]
        # Step 6: sum the weighted values: the output for word i.
        Z.append(torch.stack(weighted).sum(dim=0))  # [Dv]
    return torch.stack(Z)  # [n, Dv]
