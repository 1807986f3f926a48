"""The encoder: a stack of identical layers, each self-attention then feed-forward.

Axes: B batch, S source length, D d_model.
"""

from __future__ import annotations

from torch import Tensor, nn

from .checks import check_dtype, check_int
from .layers import FeedForward, Residual
from .multi_head import KVCache, MultiHeadAttention

__all__ = ["EncoderLayer", "Encoder"]


class EncoderLayer(nn.Module):
    """Self-attention, then the feed-forward network, each inside a
    :class:`~tx.layers.Residual`; [B, S, D] -> [B, S, D]."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        norm_first: bool = False,
        attention_dropout: float = 0.0,
        activation: str = "relu",
    ):
        super().__init__()
        self.self_attn = MultiHeadAttention(
            d_model, n_heads, attention_dropout
        )
        self.feed_forward = FeedForward(d_model, d_ff, activation)
        self.residual1 = Residual(d_model, dropout, norm_first)
        self.residual2 = Residual(d_model, dropout, norm_first)

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        cache: KVCache | None = None,
    ) -> Tensor:
        """Every position attends to every unmasked position, then is
        transformed on its own.

        With a causal ``mask`` this is a decoder-only model's block; ``cache``
        then keeps the keys and values of earlier positions, so ``x`` may hold
        only the new ones.
        """
        x = self.residual1(
            x, lambda y: self.self_attn(y, y, y, mask, cache=cache)
        )
        return self.residual2(x, self.feed_forward)


class Encoder(nn.Module):
    """N encoder layers, identical in shape but each with its own weights; [B, S, D] -> memory [B, S, D].

    With pre-LN a final LayerNorm normalises the last layer's output, which would
    otherwise be an un-normalised sum of residuals; post-LN layers already end in one.
    """

    def __init__(
        self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
        norm_first: bool = False, attention_dropout: float = 0.0, activation: str = "relu",
    ):
        super().__init__()
        check_int("n_layers", n_layers, low=1)
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, n_heads, d_ff, dropout, norm_first, attention_dropout, activation)
            for _ in range(n_layers)
        )
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        caches: list[KVCache] | None = None,
    ) -> Tensor:
        """Run the stack: each layer's output is the next layer's input;
        ``caches``: one KVCache a layer, or None."""
        if caches is not None and len(caches) != len(self.layers):
            raise ValueError(
                f"caches must hold one KVCache per layer "
                f"({len(self.layers)}), got {len(caches)}."
            )
        # a decoding's later steps skip it: x comes from the same model
        if caches is None or caches[0].length == 0:
            check_dtype(
                "x", x, self.layers[0].self_attn.w_q.weight, "the encoder"
            )
        for i, layer in enumerate(self.layers):
            x = layer(x, mask, None if caches is None else caches[i])
        return self.norm(x)
