"""The decoder on its own: a language model that predicts every next token of a sequence.

Axes: B batch, T sequence length (new tokens), L positions so far (cache + new), D d_model,
V vocabulary size, H heads.

Drop the encoder and the cross-attention from the Transformer and what is left is a stack
of masked self-attention + feed-forward blocks. That block is exactly an
:class:`~tx.encoder.EncoderLayer` given a causal mask, so this model is an
:class:`~tx.encoder.Encoder` over embeddings, with a causal mask built inside and a final
linear layer (GPT-2's layout when the config says pre-LN, learned positions and tying).

Padding may sit on either side of a row: a pad is never attended to, and a token's position
is the number of real tokens before it, so a left-padded prompt gets the same logits as
the same prompt unpadded. :func:`tx.generation.generate` pads prompts on the left.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .checks import check_int, check_tokens, guarded
from .config import LanguageModelConfig
from .encoder import Encoder
from .model import Transformer
from .multi_head import KVCache
from .positional_encoding import Embedding

__all__ = ["LanguageModel", "LanguageModelCache", "lm_mask"]


class LanguageModelCache:
    """One self-attention :class:`~tx.multi_head.KVCache` per layer, and which cached positions are real tokens."""

    def __init__(self, n_layers: int, max_len: int):
        check_int("n_layers", n_layers, low=1)
        self.layers = [KVCache(max_len) for _ in range(n_layers)]
        self.real: Tensor | None = None  # [B, L] bool: False where the cached position is padding

    @property
    def length(self) -> int:
        """How many positions the cache holds: where the next tokens go."""
        return self.layers[0].length


def lm_mask(real: Tensor, T: int) -> Tensor:
    """Bool [B, 1, T, L] for the last T of L positions: causal, and never a
    padded key.

    ``real`` [B, L] is True where a position holds a real token. Query i
    (position L - T + i) may see keys 0 .. L - T + i that are real (True = may
    attend).
    """
    L = real.size(1)
    # [T, L]
    causal = torch.ones(T, L, dtype=torch.bool, device=real.device).tril(L - T)
    return causal & real[:, None, None, :]  # [B, 1, T, L]


def _check_cache(cache: LanguageModelCache | None, n_layers: int) -> int:
    """None, or a cache made by this model's new_cache(); returns the position the new tokens start at."""
    if cache is None:
        return 0
    if not isinstance(cache, LanguageModelCache):
        raise TypeError(f"cache must be a LanguageModelCache from model.new_cache(), got {type(cache).__name__}.")
    if len(cache.layers) != n_layers:
        raise ValueError(f"the cache has {len(cache.layers)} layers but this model has {n_layers}: "
                         "make it with this model's new_cache().")
    return cache.length


def _check_config(model: "LanguageModel", config: object) -> None:
    if not isinstance(config, LanguageModelConfig):
        raise TypeError(f"config must be a tx.LanguageModelConfig, got {type(config).__name__}.")


def _check_forward(model: "LanguageModel", tokens: Tensor, cache: LanguageModelCache | None = None) -> None:
    c = model.config
    start = _check_cache(cache, c.n_layers)
    check_tokens(tokens, c.vocab_size, c.max_len, "tokens", start)
    if cache is not None and cache.real is not None and cache.real.size(0) != tokens.size(0):
        raise ValueError(
            f"the cache holds {cache.real.size(0)} sequences but tokens has "
            f"{tokens.size(0)}; make a new cache with model.new_cache() for "
            "a new batch."
        )


class LanguageModel(nn.Module):
    """Decoder-only Transformer: ``forward(tokens [B, T]) -> logits [B, T, V]`` for the next token at every position.

    Built from :class:`~tx.positional_encoding.Embedding`, an :class:`~tx.encoder.Encoder`
    stack run with a causal mask, and a final linear layer (tied to the embedding if the
    config says so). Build it with ``LanguageModel(LanguageModelConfig.small(V))``.
    """

    @guarded(_check_config)
    def __init__(self, config: LanguageModelConfig):
        super().__init__()
        c = self.config = config
        self.embed = Embedding(c.vocab_size, c.d_model, c.max_len, c.dropout, c.positions, c.scale_embeddings)
        self.layers = Encoder(c)
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)  # D -> logits over V
        self._init_weights()
        if c.tie_embeddings:  # one [V, D] matrix reads tokens in and scores them out
            self.lm_head.weight = self.embed.token.weight

    def _init_weights(self) -> None:
        # Xavier for the layers, as tx.Transformer; token vectors start small (std 0.02, as
        # GPT-2), so that untrained logits are near zero and predictions near uniform.
        for name, p in self.named_parameters():
            if p.dim() > 1 and not name.startswith("embed."):
                nn.init.xavier_uniform_(p)
        nn.init.normal_(self.embed.token.weight, std=0.02)

    @guarded(_check_forward)
    def forward(
        self, tokens: Tensor, cache: LanguageModelCache | None = None
    ) -> Tensor:
        """Token ids [B, T] -> next-token logits [B, T, V].

        Without a cache, ``tokens`` is the whole sequence. With one (from
        :meth:`new_cache`), ``tokens`` holds only what the cache has not
        seen, and the cache grows by T positions.
        """
        T = tokens.size(1)
        real = tokens != self.config.pad_id  # [B, T]
        past = None if cache is None else cache.real  # [B, L - T], or None
        seen = real if past is None else torch.cat([past, real], 1)  # [B, L]
        # a token's position: how many real tokens come before it
        positions = (seen.long().cumsum(1) - 1)[:, -T:].clamp(min=0)  # [B, T]
        x = self.embed(tokens, positions=positions)  # [B, T, D]
        mask = lm_mask(seen, T)  # [B, 1, T, L]
        caches = None if cache is None else cache.layers
        x = self.layers(x, mask, caches)  # [B, T, D]
        if cache is not None:
            cache.real = seen
        return self.lm_head(x)  # [B, T, V]

    def new_cache(self, max_len: int | None = None) -> LanguageModelCache:
        """An empty key/value cache for generating up to ``max_len`` positions (default: the context)."""
        return LanguageModelCache(self.config.n_layers, self.config.max_len if max_len is None else max_len)

    def n_parameters(self) -> int:
        """Distinct weights (a tied matrix counted once)."""
        return sum(p.numel() for p in self.parameters())

    # Both read only the attention modules' names, so the encoder-decoder's own methods serve here too.
    attention_layers = Transformer.attention_layers
    recording_attention = Transformer.recording_attention
