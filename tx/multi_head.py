"""Multi-head attention, and the key/value cache that makes decoding incremental.

Axes: B batch, H heads, Tq query positions, Tk key positions, D d_model, Dh = D / H head size.

Each head projects the input into its own query, key and value subspace, attends there,
and W^O mixes the heads' outputs back into one vector per position (paper section 3.2.2).
The H projections of size Dh are stored as one [D, D] matrix and split by reshaping, which is
the same arithmetic as H separate matrices and one matrix multiply instead of H.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention import attention
from .checks import check_dtype, check_float, check_heads, check_int, check_tensor
from .masks import check_mask

__all__ = ["split_heads", "merge_heads", "MultiHeadAttention", "KVCache"]


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    """[B, T, D] -> [B, H, T, Dh]: give every head its own slice of the features."""
    _check_split(x, n_heads)
    B, T, D = x.shape
    return x.view(B, T, n_heads, D // n_heads).transpose(1, 2)  # [B, H, T, Dh]


def _check_split(x: Tensor, n_heads: int) -> None:
    """x is [B, T, D] with D divisible by n_heads (a quick test first: this runs at every decoding step)."""
    if isinstance(x, Tensor) and x.dim() == 3 and type(n_heads) is int and n_heads > 0 and x.size(-1) % n_heads == 0:
        return
    check_tensor("x", x, dims=3)
    check_heads(x.size(-1), n_heads)


def merge_heads(x: Tensor) -> Tensor:
    """[B, H, T, Dh] -> [B, T, H*Dh]: concatenate the heads' outputs position by position."""
    check_tensor("x", x, dims=4)
    B, H, T, Dh = x.shape
    return x.transpose(1, 2).reshape(B, T, H * Dh)  # [B, T, D]


class KVCache:
    """Keys and values of one attention layer, kept between decoding steps.

    A growing cache (self-attention) writes each step's new keys/values into buffers
    preallocated for ``max_len`` positions, so a step costs one projection of one token
    instead of re-projecting the whole prefix. A static cache (cross-attention) is filled
    once from the encoder's memory and reused at every step.
    """

    def __init__(self, max_len: int, static: bool = False):
        check_int("max_len", max_len, low=1)
        self.max_len = max_len
        self.static = static
        self.k: Tensor | None = None  # [B, H, max_len, Dh] (growing) or [B, H, S, Dh] (static)
        self.v: Tensor | None = None
        self.length = 0
        # The layer's stacked W^Q, W^K, W^V, kept for one decoding (see MultiHeadAttention._stacked).
        self.projection: tuple[Tensor, Tensor] | None = None

    @property
    def filled(self) -> bool:
        """True once a static cache holds the memory's keys and values."""
        return self.static and self.k is not None

    def update(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Store new keys/values [B, H, t, Dh]; return every key/value seen so
        far."""
        if self.static:
            self.k, self.v, self.length = k, v, k.size(2)
            return k, v
        if self.k is None:
            B, H, _, Dh = k.shape
            self.k = k.new_empty(B, H, self.max_len, Dh)
            self.v = v.new_empty(B, H, self.max_len, v.size(-1))
        end = self.length + k.size(2)
        if end > self.max_len:
            raise ValueError(
                f"the key/value cache holds {self.max_len} positions and step "
                f"would reach {end}; make the cache with a larger max_len."
            )
        self.k[:, :, self.length : end] = k
        self.v[:, :, self.length : end] = v
        self.length = end
        return self.k[:, :, :end], self.v[:, :, :end]  # [B, H, end, Dh]

    def reorder(self, index: Tensor) -> None:
        """Keep batch rows ``index`` (beam search follows each surviving hypothesis's parent)."""
        if self.k is not None:
            self.k = self.k.index_select(0, index)
            self.v = self.v.index_select(0, index)


def _fits(query: Tensor, key: Tensor, value: Tensor, d_model: int) -> bool:
    """The quick test behind MultiHeadAttention._check_inputs: True when every shape and dtype is right."""
    try:
        (B, _, Dq), (Bk, Tk, Dk), (Bv, Tv, Dv) = query.shape, key.shape, value.shape
    except (AttributeError, ValueError):  # not tensors, or not 3-D
        return False
    return (
        B == Bk == Bv and Tk == Tv and Dq == Dk == Dv == d_model
        and query.is_floating_point() and key.is_floating_point() and value.is_floating_point()
    )


class MultiHeadAttention(nn.Module):
    """Multi-head attention (paper section 3.2.2): H heads of size D/H, then W^O.

    ``forward(query [B, Tq, D], key [B, Tk, D], value [B, Tk, D], mask=None,
    need_weights=False) -> [B, Tq, D]``. ``mask`` is bool, broadcastable to [B, H, Tq, Tk],
    True = may attend. With ``need_weights=True`` (or ``record = True``) the explicit
    softmax path runs and ``attention_weights`` keeps [B, H, Tq, Tk] for figures; otherwise
    torch's fused ``scaled_dot_product_attention`` computes the same numbers faster.
    ``dropout`` applies to the attention weights, in training only. Self-attention applies
    ``w_q``, ``w_k`` and ``w_v`` as one stacked matrix, so forward hooks on those three
    do not fire there: hook the attention module itself.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        check_heads(d_model, n_heads)
        check_float("dropout", dropout, 0, 1, high_open=True)
        self.d_model, self.n_heads, self.dropout = d_model, n_heads, dropout
        self.w_q = nn.Linear(d_model, d_model)  # the H query projections W^Q_i, side by side
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)  # W^O: mixes the concatenated heads
        self.record = False  # keep attention weights on every call (see Transformer.recording_attention)
        self.attention_weights: Tensor | None = None

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        mask: Tensor | None = None,
        need_weights: bool = False,
        cache: KVCache | None = None,
    ) -> Tensor:
        """Attend from ``query`` to ``key``/``value``; returns [B, Tq, D]."""
        H = self.n_heads
        self._check_inputs(query, key, value)
        try:
            # [B, H, Tq, Dh], [B, H, Tk, Dh], [B, H, Tk, Dh]
            q, k, v = self._project(query, key, value, cache)
        except RuntimeError:
            self._explain_dtypes(query, key, value)
            raise
        if mask is not None:
            check_mask(mask, (q.size(0), H, q.size(2), k.size(2)))
        p = self.dropout if self.training else 0.0
        if need_weights or self.record:
            # [B, H, Tq, Dh], [B, H, Tq, Tk]
            z, weights = attention(q, k, v, mask, dropout_p=p)
            self.attention_weights = weights.detach()
        else:
            z = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=p
            )
        return self.w_o(merge_heads(z))  # [B, Tq, D]

    def _check_inputs(self, query: Tensor, key: Tensor, value: Tensor) -> None:
        """query [B, Tq, D], key and value [B, Tk, D], D = d_model: shapes only, so it costs next to nothing."""
        if _fits(query, key, value, self.d_model):
            return
        for name, x in (("query", query), ("key", key), ("value", value)):
            check_tensor(name, x, dims=3, floating=True)
            if x.size(-1) != self.d_model:
                raise ValueError(f"{name} must have d_model={self.d_model} features, got shape {tuple(x.shape)}.")
        if key.shape[:2] != value.shape[:2] or key.size(0) != query.size(0):
            raise ValueError(
                "query [B, Tq, D], key [B, Tk, D] and value [B, Tk, D] must share B, and key and value "
                f"Tk (one value per key): got query {tuple(query.shape)}, key {tuple(key.shape)}, "
                f"value {tuple(value.shape)}."
            )

    def _explain_dtypes(self, query: Tensor, key: Tensor, value: Tensor) -> None:
        """After a failed projection: a TypeError naming the input whose dtype differs from the weights', if one does.

        Such inputs fail in the first matrix product, before the cache is touched, so right
        inputs pay nothing for this check.
        """
        try:
            for name, x in (("query", query), ("key", key), ("value", value)):
                check_dtype(name, x, self.w_q.weight, "the attention layer")
        except TypeError as clear:
            raise clear from None

    def _project(
        self, query: Tensor, key: Tensor, value: Tensor, cache: KVCache | None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Q [B, H, Tq, Dh] and K, V [B, H, Tk, Dh]: projected by W^Q, W^K, W^V and split into heads.

        When inputs coincide (self-attention, or keys and values from the same memory) the
        matrices are stacked so that one larger matrix multiply replaces two or three; its
        output splits into 3H (or 2H) heads, the first H of them the queries'. With a cache,
        K and V also hold every earlier position's keys and values.
        """
        H = self.n_heads
        if cache is not None and cache.filled:  # cross-attention: memory projected once per sentence
            return split_heads(self.w_q(query), H), cache.k, cache.v
        if query is key and key is value:  # self-attention
            w, b = self._stacked(cache, self.w_q, self.w_k, self.w_v)  # [3D, D], [3D]
            qkv = split_heads(F.linear(query, w, b), 3 * H)  # [B, 3H, T, Dh]
            q, k, v = qkv.chunk(3, dim=1)  # each [B, H, T, Dh]
        elif key is value:  # keys and values from the same memory
            w, b = self._stacked(cache, self.w_k, self.w_v)  # [2D, D], [2D]
            k, v = split_heads(F.linear(key, w, b), 2 * H).chunk(2, dim=1)  # each [B, H, Tk, Dh]
            q = split_heads(self.w_q(query), H)  # [B, H, Tq, Dh]
        else:
            q, k, v = (split_heads(w(x), H) for w, x in ((self.w_q, query), (self.w_k, key), (self.w_v, value)))
        if cache is not None:
            k, v = cache.update(k, v)
        return q, k, v

    def _stacked(self, cache: KVCache | None, *layers: nn.Linear) -> tuple[Tensor, Tensor]:
        """The layers' weights [n*D, D] and biases [n*D], stacked.

        Stacked anew at every call, so that gradients flow to each matrix, except when
        decoding without gradients: then the cache keeps the stack for the whole decoding
        (the weights do not change in between), since re-stacking at every generated token
        would cost as much as projecting the token.
        """
        if cache is not None and cache.projection is not None:
            return cache.projection
        stacked = torch.cat([m.weight for m in layers]), torch.cat([m.bias for m in layers])
        if cache is not None and not torch.is_grad_enabled():
            cache.projection = stacked
        return stacked
