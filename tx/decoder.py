"""The decoder: masked self-attention, encoder-decoder attention, feed-forward; and its cache.

Axes: B batch, S source length, T target length, D d_model.

Decoding one token at a time, each layer keeps a :class:`~tx.multi_head.KVCache` for its
self-attention (one position longer after every step) and one for its cross-attention
(the memory's keys and values, computed once).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .checks import check_dtype, check_int, check_tensor, guarded
from .config import LayerConfig
from .layers import FeedForward, Residual, make_norm
from .multi_head import KVCache, MultiHeadAttention, check_inputs

__all__ = ["DecoderLayer", "Decoder", "DecoderCache", "check_cache"]


class DecoderCache:
    """One self-attention and one cross-attention :class:`~tx.multi_head.KVCache` per decoder layer.

    A cache serves one decoding of one batch of sources: it keeps their memory's keys and values,
    so :meth:`bind` refuses another memory. Make a new cache for every new source.
    """

    def __init__(self, n_layers: int, max_len: int):
        check_int("n_layers", n_layers, low=1)
        self.self_attn = [KVCache(max_len) for _ in range(n_layers)]
        self.cross_attn = [KVCache(max_len, static=True) for _ in range(n_layers)]
        self.src_mask: Tensor | None = None  # the source's padding mask, built at the first step
        self.memory: Tensor | None = None  # the memory of the first step: the cache's keys and values come from it

    def bind(self, memory: Tensor) -> None:
        """Remember ``memory`` at the first step; at later steps, refuse a different one."""
        if self.memory is None:
            self.memory = memory
        elif memory is not self.memory and not (memory.shape == self.memory.shape and torch.equal(memory, self.memory)):
            raise ValueError(
                "this DecoderCache already holds the keys and values of another memory (another source "
                "sentence); reusing it would decode against the old sentence. Make a new cache with "
                "model.new_cache() for every new source."
            )

    @property
    def length(self) -> int:
        """How many target positions the cache has seen: the next token's position."""
        return self.self_attn[0].length

    def reorder(self, index: Tensor) -> None:
        """Keep batch rows ``index`` in every layer's caches (used by beam search)."""
        for cache in self.self_attn + self.cross_attn:
            cache.reorder(index)
        if self.src_mask is not None:
            self.src_mask = self.src_mask.index_select(0, index)


def check_cache(cache: DecoderCache | None, n_layers: int) -> None:
    """None, or a DecoderCache with one pair of caches per decoder layer (from this model's new_cache)."""
    if cache is None:
        return
    if not isinstance(cache, DecoderCache):
        raise TypeError(f"cache must be a DecoderCache from model.new_cache(), got {type(cache).__name__}.")
    if len(cache.self_attn) != n_layers:
        raise ValueError(
            f"the cache has {len(cache.self_attn)} decoder layers but this model has {n_layers}: "
            "make it with this model's new_cache()."
        )


def _check_stack(
    decoder: "Decoder", x: Tensor, memory: Tensor, src_mask: Tensor | None = None,
    tgt_mask: Tensor | None = None, cache: DecoderCache | None = None,
) -> None:
    """x [B, T, D] and memory [B, S, D], both of the weights' dtype; masks and a cache that fit."""
    weights = decoder.layers[0].cross_attn.w_q.weight
    for name, value in (("x", x), ("memory", memory)):
        check_tensor(name, value, dims=3, floating=True)
        check_dtype(name, value, weights, "the decoder")
    check_cache(cache, len(decoder.layers))
    # what every layer's two attentions would check: the first layer's stand for all
    first = decoder.layers[0]
    check_inputs(first.self_attn, x, x, x, tgt_mask, cache=None if cache is None else cache.self_attn[0])
    check_inputs(first.cross_attn, x, memory, memory, src_mask, cache=None if cache is None else cache.cross_attn[0])


class DecoderLayer(nn.Module):
    """Masked self-attention, encoder-decoder attention, feed-forward:
    [B, T, D] -> [B, T, D].

    The queries of the encoder-decoder attention come from the decoder; its
    keys and values come from the encoder's output, the ``memory`` [B, S, D].
    """

    def __init__(self, config: LayerConfig):
        super().__init__()
        d, h, p = config.d_model, config.n_heads, config.attention_dropout
        self.self_attn = MultiHeadAttention(d, h, p)
        self.cross_attn = MultiHeadAttention(d, h, p)
        self.feed_forward = FeedForward(config)
        self.residual1 = Residual(config)
        self.residual2 = Residual(config)
        self.residual3 = Residual(config)

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        self_cache: KVCache | None = None,
        cross_cache: KVCache | None = None,
    ) -> Tensor:
        """``tgt_mask`` keeps each position from seeing later ones;
        ``src_mask`` hides source padding."""
        x = self.residual1(
            x, lambda y: self.self_attn(y, y, y, tgt_mask, cache=self_cache)
        )
        x = self.residual2(
            x,
            lambda y: self.cross_attn(
                y, memory, memory, src_mask, cache=cross_cache
            ),
        )
        return self.residual3(x, self.feed_forward)


class Decoder(nn.Module):
    """N decoder layers, each attending to the same memory (the top encoder's output)."""

    def __init__(self, config: LayerConfig):
        super().__init__()
        self.layers = nn.ModuleList(
            DecoderLayer(config) for _ in range(config.n_layers)
        )
        self.norm = make_norm(config) if config.norm_first else nn.Identity()

    @guarded(_check_stack)
    def forward(
        self, x: Tensor, memory: Tensor, src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None, cache: DecoderCache | None = None,
    ) -> Tensor:
        """Run the stack over target vectors x [B, T, D]; returns [B, T, D]."""
        for i, layer in enumerate(self.layers):
            self_cache = cache.self_attn[i] if cache is not None else None
            cross_cache = cache.cross_attn[i] if cache is not None else None
            x = layer(x, memory, src_mask, tgt_mask, self_cache, cross_cache)
        return self.norm(x)
