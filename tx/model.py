"""The whole encoder-decoder Transformer (Vaswani et al. 2017, figure 1).

Axes: B batch, S source length, T target length, D d_model, V target vocabulary size,
H heads.

The model returns logits; losses, training and decoding live in their own modules and
work with any model that offers ``encode``, ``decode`` and ``new_cache``.
"""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from typing import Iterator

import torch
from torch import Tensor, nn

from .checks import check_dtype, check_tensor, check_tokens
from .config import TransformerConfig
from .decoder import Decoder, DecoderCache
from .encoder import Encoder
from .masks import padding_mask
from .multi_head import MultiHeadAttention
from .positional_encoding import Embedding

__all__ = ["Transformer"]  # check_tokens, imported here from tx.checks, stays importable from tx.model


def _check_cache(cache: DecoderCache | None, n_layers: int) -> None:
    """None, or a DecoderCache with one pair of caches per decoder layer (from this model's new_cache)."""
    if cache is None or (type(cache) is DecoderCache and len(cache.self_attn) == n_layers):
        return
    if not isinstance(cache, DecoderCache):
        raise TypeError(f"cache must be a DecoderCache from model.new_cache(), got {type(cache).__name__}.")
    raise ValueError(
        f"the cache has {len(cache.self_attn)} decoder layers but this model has {n_layers}: "
        "make it with this model's new_cache()."
    )


class Transformer(nn.Module):
    """Encoder-decoder Transformer: ``forward(src [B, S], tgt [B, T]) -> logits [B, T, V]``.

    Padding masks come from ``pad_id`` and the causal mask from the target's length, so
    callers pass token ids only. Post-LN (the paper's arrangement) by default;
    ``norm_first=True`` gives pre-LN. ``share_embeddings=True`` ties the source embedding,
    the target embedding and the final linear layer's weights (paper 3.4).
    Build it from sizes, or from a :class:`~tx.config.TransformerConfig` with :meth:`from_config`.
    """

    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        d_model: int = 512,
        n_heads: int = 8,
        n_layers: int = 6,
        d_ff: int = 2048,
        dropout: float = 0.1,
        max_len: int = 256,
        pad_id: int = 0,
        share_embeddings: bool = False,
        norm_first: bool = False,
        attention_dropout: float = 0.0,
    ):
        super().__init__()
        cfg = TransformerConfig(
            src_vocab_size, tgt_vocab_size, d_model, n_heads, n_layers, d_ff, dropout,
            max_len, pad_id, share_embeddings, norm_first, attention_dropout,
        )
        self.config = cfg
        layer_args = (cfg.n_layers, d_model, n_heads, d_ff, dropout, norm_first, attention_dropout)
        self.src_embed = Embedding(src_vocab_size, d_model, max_len, dropout)
        self.tgt_embed = Embedding(tgt_vocab_size, d_model, max_len, dropout)
        self.encoder = Encoder(*layer_args)
        self.decoder = Decoder(*layer_args)
        self.generator = nn.Linear(d_model, tgt_vocab_size)  # the final linear layer: D -> logits over V
        self._init_weights()
        if share_embeddings:
            self.tgt_embed.token.weight = self.src_embed.token.weight
            self.generator.weight = self.src_embed.token.weight

    @classmethod
    def from_config(cls, config: TransformerConfig) -> "Transformer":
        """Build a model from a :class:`~tx.config.TransformerConfig` (for example ``TransformerConfig.small(...)``)."""
        return cls(**dataclasses.asdict(config))

    def _init_weights(self) -> None:
        # Xavier keeps activations' variance steady through the linear layers; embeddings
        # start at std D^-0.5 so that, once scaled by sqrt(D), they have unit variance.
        for name, p in self.named_parameters():
            if p.dim() > 1 and "embed" not in name:
                nn.init.xavier_uniform_(p)
        for emb in (self.src_embed.token, self.tgt_embed.token):
            nn.init.normal_(emb.weight, std=self.config.d_model**-0.5)

    def encode(self, src: Tensor) -> Tensor:
        """Source ids [B, S] -> memory [B, S, D], the vectors every decoder layer
        attends to."""
        cfg = self.config
        check_tokens(src, cfg.src_vocab_size, cfg.max_len, "src")
        return self.encoder(self.src_embed(src), padding_mask(src, cfg.pad_id))

    def decode(
        self,
        memory: Tensor,
        src: Tensor,
        tgt: Tensor,
        cache: DecoderCache | None = None,
    ) -> Tensor:
        """Target ids [B, T] and memory [B, S, D] -> logits [B, T, V].

        Without a cache, ``tgt`` is the whole prefix and a causal mask keeps each
        position from seeing later ones. With a cache (from :meth:`new_cache`),
        ``tgt`` holds only the tokens the cache has not seen yet, usually one;
        earlier keys and values come from the cache.
        """
        cfg = self.config
        _check_cache(cache, cfg.n_layers)
        start = cache.length if cache is not None else 0
        check_tokens(tgt, cfg.tgt_vocab_size, cfg.max_len, "tgt", start)
        self._check_memory(memory, src, tgt, cache)
        if cache is not None:
            cache.bind(memory)
        T = tgt.size(1)
        if cache is not None and T == 1:
            # one new token may see every position the cache holds
            tgt_mask = None
        # target position start + i sees positions 0 .. start + i (the causal
        # mask when start = 0)
        else:
            tgt_mask = torch.ones(
                T, start + T, dtype=torch.bool, device=tgt.device
            ).tril(start)
        if cache is None:
            src_mask = padding_mask(src, cfg.pad_id)
        else:  # the source stays the same at every step: build its mask once
            if cache.src_mask is None:
                cache.src_mask = padding_mask(src, cfg.pad_id)
            src_mask = cache.src_mask
        x = self.decoder(
            self.tgt_embed(tgt, start), memory, src_mask, tgt_mask, cache
        )
        return self.generator(x)  # [B, T, V]

    def _check_memory(self, memory: Tensor, src: Tensor, tgt: Tensor, cache: DecoderCache | None) -> None:
        """memory [B, S, D] must come from ``src`` [B, S], match ``tgt`` [B, T] and the weights' dtype."""
        try:  # the quick test first: this runs at every decoding step
            (B, S, D), (Bs, Ss), Bt = memory.shape, src.shape, tgt.size(0)
            # After the first step the cache holds this very memory, its dtype checked then.
            if B == Bs == Bt and S == Ss and D == self.config.d_model and cache is not None and memory is cache.memory:
                return
        except (AttributeError, ValueError):
            pass  # not tensors, or the wrong number of axes: the checks below say which
        check_tensor("memory", memory, dims=3, floating=True)
        check_tensor("src", src, dims=2)
        if memory.shape != (src.size(0), src.size(1), self.config.d_model) or tgt.size(0) != src.size(0):
            raise ValueError(
                f"memory must be model.encode(src), [B, S, D={self.config.d_model}], for the same B sentences "
                f"as tgt: got memory {tuple(memory.shape)}, src {tuple(src.shape)}, tgt {tuple(tgt.shape)}."
            )
        check_dtype("memory", memory, self.generator.weight)

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        """Teacher forcing: logits [B, T, V] for every target position at once."""
        return self.decode(self.encode(src), src, tgt)

    def new_cache(self, max_len: int | None = None) -> DecoderCache:
        """An empty key/value cache for incremental decoding of up to ``max_len`` target positions."""
        return DecoderCache(self.config.n_layers, self.config.max_len if max_len is None else max_len)

    def attention_layers(self) -> dict[str, MultiHeadAttention]:
        """Every attention module by name, e.g. ``"encoder.layers.0.self_attn"``, ``"decoder.layers.1.cross_attn"``."""
        return {name: m for name, m in self.named_modules() if isinstance(m, MultiHeadAttention)}

    @contextmanager
    def recording_attention(self) -> Iterator[dict[str, Tensor]]:
        """Record every layer's attention weights [B, H, Tq, Tk] during the block.

        ``with model.recording_attention() as maps: model(src, tgt)`` — afterwards ``maps``
        holds the last weights of each layer, named as in :meth:`attention_layers`.
        """
        layers = self.attention_layers()
        maps: dict[str, Tensor] = {}
        for m in layers.values():
            m.record, m.attention_weights = True, None
        try:
            yield maps
        finally:
            for name, m in layers.items():
                m.record = False
                if m.attention_weights is not None:
                    maps[name] = m.attention_weights
