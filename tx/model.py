"""The whole encoder-decoder Transformer (Vaswani et al. 2017, figure 1).

Axes: B batch, S source length, T target length, D d_model, V target vocabulary size,
H heads.

The model returns logits; losses, training and decoding live in their own modules and
work with any model that offers ``encode``, ``decode`` and ``new_cache``.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from torch import Tensor, nn

from .checks import check_dtype, check_tensor, check_tokens, guarded
from .config import TransformerConfig
from .decoder import Decoder, DecoderCache, check_cache
from .encoder import Encoder
from .masks import causal_mask, padding_mask
from .multi_head import MultiHeadAttention, check_room
from .positional_encoding import Embedding

__all__ = ["Transformer"]  # check_tokens, imported here from tx.checks, stays importable from tx.model


# The checks, which guarded runs once per call before the computation.


def _check_encode(model: "Transformer", src: Tensor) -> None:
    cfg = model.config
    check_tokens(src, cfg.src_vocab_size, cfg.max_len, "src")


def _check_decode(
    model: "Transformer", memory: Tensor, src: Tensor, tgt: Tensor, cache: DecoderCache | None = None
) -> None:
    """Target ids that fit the model (and the cache); memory [B, S, D] from ``src``, in the weights' dtype.

    With a cache, its first step binds the memory to it; a later step with another memory is refused.
    """
    cfg = model.config
    check_cache(cache, cfg.n_layers)
    start = cache.length if cache is not None else 0
    check_tokens(tgt, cfg.tgt_vocab_size, cfg.max_len, "tgt", start)
    check_tensor("memory", memory, dims=3, floating=True)
    check_tensor("src", src, dims=2)
    if memory.shape != (src.size(0), src.size(1), cfg.d_model) or tgt.size(0) != src.size(0):
        raise ValueError(
            f"memory must be model.encode(src), [B, S, D={cfg.d_model}], for the same B sentences "
            f"as tgt: got memory {tuple(memory.shape)}, src {tuple(src.shape)}, tgt {tuple(tgt.shape)}."
        )
    check_dtype("memory", memory, model.generator.weight)
    if cache is not None:
        check_room(cache.self_attn[0], tgt.size(1))
        cache.bind(memory)


def _check_forward(model: "Transformer", src: Tensor, tgt: Tensor) -> None:
    cfg = model.config
    _check_encode(model, src)
    check_tokens(tgt, cfg.tgt_vocab_size, cfg.max_len, "tgt")
    if tgt.size(0) != src.size(0):
        raise ValueError(
            f"src and tgt must hold the same B sentences, one target a source: got src "
            f"{tuple(src.shape)}, tgt {tuple(tgt.shape)}."
        )


def _check_config(model: "Transformer", config: TransformerConfig | None = None, *more: object, **sizes: object) -> None:
    if more or (config is not None and not isinstance(config, TransformerConfig)):
        raise TypeError(
            f"Transformer takes a tx.TransformerConfig, or its fields as keywords "
            f"(Transformer(src_vocab_size=..., tgt_vocab_size=..., d_model=...)); got {type(config).__name__} "
            f"{config!r}{' and more' if more else ''} as positional arguments."
        )


# The model.


class Transformer(nn.Module):
    """Encoder-decoder Transformer: ``forward(src [B, S], tgt [B, T]) -> logits [B, T, V]``.

    Padding masks come from ``pad_id`` and the causal mask from the target's length, so
    callers pass token ids only. Post-LN (the paper's arrangement) by default;
    ``norm_first=True`` gives pre-LN. ``share_embeddings=True`` ties the source embedding,
    the target embedding and the final linear layer's weights (paper 3.4).
    Build it from a :class:`~tx.config.TransformerConfig`, ``Transformer(config)``, or from
    the config's fields as keywords, ``Transformer(src_vocab_size=100, tgt_vocab_size=120,
    d_model=64)``; with both, the keywords change those fields of the config.
    """

    @guarded(_check_config)
    def __init__(self, config: TransformerConfig | None = None, **sizes: object):
        super().__init__()
        cfg = TransformerConfig(**sizes) if config is None else config.replace(**sizes)
        self.config = cfg
        self.src_embed = Embedding(cfg.src_vocab_size, cfg.d_model, cfg.max_len, cfg.dropout)
        self.tgt_embed = Embedding(cfg.tgt_vocab_size, cfg.d_model, cfg.max_len, cfg.dropout)
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg)
        self.generator = nn.Linear(cfg.d_model, cfg.tgt_vocab_size)  # the final linear layer: D -> logits over V
        self._init_weights()
        if cfg.share_embeddings:
            self.tgt_embed.token.weight = self.src_embed.token.weight
            self.generator.weight = self.src_embed.token.weight

    @classmethod
    def from_config(cls, config: TransformerConfig) -> "Transformer":
        """``Transformer(config)``, by name."""
        return cls(config)

    def _init_weights(self) -> None:
        # Xavier keeps activations' variance steady through the linear layers; embeddings
        # start at std D^-0.5 so that, once scaled by sqrt(D), they have unit variance.
        for name, p in self.named_parameters():
            if p.dim() > 1 and "embed" not in name:
                nn.init.xavier_uniform_(p)
        for emb in (self.src_embed.token, self.tgt_embed.token):
            nn.init.normal_(emb.weight, std=self.config.d_model**-0.5)

    @guarded(_check_forward)
    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        """Teacher forcing: logits [B, T, V] for every target position at once."""
        return self.decode(self.encode(src), src, tgt)

    @guarded(_check_encode)
    def encode(self, src: Tensor) -> Tensor:
        """Source ids [B, S] -> memory [B, S, D], the vectors every decoder layer
        attends to."""
        src_mask = padding_mask(src, self.config.pad_id)  # [B, 1, 1, S]
        return self.encoder(self.src_embed(src), src_mask)  # [B, S, D]

    @guarded(_check_decode)
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
        start = 0 if cache is None else cache.length  # positions before tgt
        src_mask, tgt_mask = self._masks(src, tgt, start, cache)
        x = self.tgt_embed(tgt, start)  # [B, T, D]
        x = self.decoder(x, memory, src_mask, tgt_mask, cache)  # [B, T, D]
        return self.generator(x)  # [B, T, V]

    def _masks(
        self, src: Tensor, tgt: Tensor, start: int, cache: DecoderCache | None
    ) -> tuple[Tensor, Tensor | None]:
        """The source's padding mask [B, 1, 1, S] and the causal mask [T, start + T].

        Decoding with a cache, the padding mask is built once per sentence, and one new
        token needs no causal mask: it may see every position the cache holds.
        """
        if cache is None:
            return padding_mask(src, self.config.pad_id), causal_mask(tgt.size(1), tgt.device)
        if cache.src_mask is None:
            cache.src_mask = padding_mask(src, self.config.pad_id)
        T = tgt.size(1)
        return cache.src_mask, None if T == 1 else causal_mask(T, tgt.device, start)

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
