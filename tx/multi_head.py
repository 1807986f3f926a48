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
from .checks import check_dtype, check_float, check_heads, check_int, check_tensor, guarded
from .masks import check_mask

__all__ = ["split_heads", "merge_heads", "MultiHeadAttention", "KVCache", "check_inputs", "check_room"]


# The checks, which guarded runs once per call before the computation.


def _check_split(x: Tensor, n_heads: int) -> None:
    check_tensor("x", x, dims=3)
    check_heads(x.size(-1), n_heads)


def _check_merge(x: Tensor) -> None:
    check_tensor("x", x, dims=4)


def check_room(cache: "KVCache", n: int) -> None:
    """A growing cache has room for ``n`` more positions."""
    end = cache.length + n
    if not cache.static and end > cache.max_len:
        raise ValueError(
            f"the key/value cache holds {cache.max_len} positions and step "
            f"would reach {end}; make the cache with a larger max_len."
        )


def _check_update(cache: "KVCache", k: Tensor, v: Tensor) -> None:
    check_room(cache, k.size(2))


def _check_sizes(mha: "MultiHeadAttention", d_model: int, n_heads: int, dropout: float = 0.0) -> None:
    check_heads(d_model, n_heads)
    check_float("dropout", dropout, 0, 1, high_open=True)


def check_inputs(
    mha: "MultiHeadAttention", query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None,
    need_weights: bool = False, cache: "KVCache | None" = None,
) -> None:
    """query [B, Tq, D], key and value [B, Tk, D] with D = d_model, of the weights' dtype; a mask that fits."""
    for name, x in (("query", query), ("key", key), ("value", value)):
        check_tensor(name, x, dims=3, floating=True)
        if x.size(-1) != mha.d_model:
            raise ValueError(f"{name} must have d_model={mha.d_model} features, got shape {tuple(x.shape)}.")
    if key.shape[:2] != value.shape[:2] or key.size(0) != query.size(0):
        raise ValueError(
            "query [B, Tq, D], key [B, Tk, D] and value [B, Tk, D] must share B, and key and value "
            f"Tk (one value per key): got query {tuple(query.shape)}, key {tuple(key.shape)}, "
            f"value {tuple(value.shape)}."
        )
    for name, x in (("query", query), ("key", key), ("value", value)):
        check_dtype(name, x, mha.w_q.weight, "the attention layer")
    if cache is not None:
        check_room(cache, key.size(1))
    if mask is not None:
        Tk = key.size(1) if cache is None else cache.k.size(2) if cache.filled else cache.length + key.size(1)
        check_mask(mask, (query.size(0), mha.n_heads, query.size(1), Tk))


# The computation.


@guarded(_check_split)
def split_heads(x: Tensor, n_heads: int) -> Tensor:
    """[B, T, D] -> [B, H, T, Dh]: give every head its own slice of the features."""
    B, T, D = x.shape
    return x.view(B, T, n_heads, D // n_heads).transpose(1, 2)  # [B, H, T, Dh]


@guarded(_check_merge)
def merge_heads(x: Tensor) -> Tensor:
    """[B, H, T, Dh] -> [B, T, H*Dh]: concatenate the heads' outputs position by position."""
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

    @guarded(_check_update)
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
        self.k[:, :, self.length : end] = k
        self.v[:, :, self.length : end] = v
        self.length = end
        return self.k[:, :, :end], self.v[:, :, :end]  # [B, H, end, Dh]

    def reorder(self, index: Tensor) -> None:
        """Keep batch rows ``index`` (beam search follows each surviving hypothesis's parent)."""
        if self.k is not None:
            self.k = self.k.index_select(0, index)
            self.v = self.v.index_select(0, index)


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

    @guarded(_check_sizes)
    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        self.d_model, self.n_heads, self.dropout = d_model, n_heads, dropout
        self.w_q = nn.Linear(d_model, d_model)  # the H query projections W^Q_i, side by side
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)  # W^O: mixes the concatenated heads
        self.record = False  # keep attention weights on every call (see Transformer.recording_attention)
        self.attention_weights: Tensor | None = None

    @guarded(check_inputs)
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
        # 1. Project: every head gets its own queries, keys and values
        # ([B, H, Tq, Dh], [B, H, Tk, Dh], [B, H, Tk, Dh]).
        q, k, v = self.project(query, key, value, cache)
        # 2. Attend: scaled dot-product attention in all heads at once.
        z = self.attend(q, k, v, mask, need_weights)  # [B, H, Tq, Dh]
        # 3. Concatenate the heads and mix them with W^O.
        return self.w_o(merge_heads(z))  # [B, Tq, D]

    def project(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        cache: KVCache | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Q = query W^Q, K = key W^K, V = value W^V, each split into H heads.

        Returns [B, H, Tq, Dh], [B, H, Tk, Dh], [B, H, Tk, Dh]. With a cache,
        K and V also hold every earlier position's keys and values.
        """
        H = self.n_heads
        if cache is not None and cache.filled:
            # cross-attention while decoding: the memory's K, V, made at step 1
            return split_heads(self.w_q(query), H), cache.k, cache.v
        q, k, v = self._linear(query, key, value, cache)  # [B, T, D] each
        q, k, v = split_heads(q, H), split_heads(k, H), split_heads(v, H)
        if cache is not None:  # decoding: after the earlier positions' K, V
            k, v = cache.update(k, v)
        return q, k, v

    def attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, need_weights: bool = False) -> Tensor:
        """Scaled dot-product attention in every head: [B, H, Tq, Dh].

        :func:`tx.attention` when the weights are wanted (kept in ``attention_weights`` for
        figures); otherwise torch's fused kernel, which computes the same numbers faster.
        """
        p = self.dropout if self.training else 0.0
        if need_weights or self.record:
            z, weights = attention(q, k, v, mask, dropout_p=p)  # [B, H, Tq, Dh], [B, H, Tq, Tk]
            self.attention_weights = weights.detach()
            return z
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)

    def _linear(
        self, query: Tensor, key: Tensor, value: Tensor, cache: KVCache | None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """query W^Q, key W^K, value W^V: [B, Tq, D], [B, Tk, D], [B, Tk, D].

        Where the inputs are one tensor, one matrix multiply does the work of two or three:
        self-attention stacks W^Q, W^K and W^V into one [3D, D] matrix and splits the
        output's features in three; keys and values from the same memory stack two. The
        same arithmetic, in one larger product.
        """
        if query is key and key is value:  # self-attention
            w, b = self._stacked(cache, self.w_q, self.w_k, self.w_v)  # [3D, D], [3D]
            return F.linear(query, w, b).chunk(3, dim=-1)
        if key is value:  # keys and values from the same memory
            w, b = self._stacked(cache, self.w_k, self.w_v)  # [2D, D], [2D]
            return (self.w_q(query), *F.linear(key, w, b).chunk(2, dim=-1))
        return self.w_q(query), self.w_k(key), self.w_v(value)

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
