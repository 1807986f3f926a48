"""The encoder: a stack of identical layers, each self-attention then feed-forward.

Axes: B batch, S source length, D d_model.
"""

from __future__ import annotations

from torch import Tensor, nn

from .checks import check_dtype, check_tensor, guarded
from .config import LayerConfig
from .layers import FeedForward, Residual, make_norm
from .multi_head import KVCache, MultiHeadAttention, check_inputs

__all__ = ["EncoderLayer", "Encoder"]


def _check_stack(
    encoder: "Encoder", x: Tensor, mask: Tensor | None = None, caches: list[KVCache] | None = None
) -> None:
    """x [B, S, D] of the weights' dtype, a mask its self-attention can use; one cache per layer, if any."""
    if caches is not None and len(caches) != len(encoder.layers):
        raise ValueError(
            f"caches must hold one KVCache per layer "
            f"({len(encoder.layers)}), got {len(caches)}."
        )
    check_tensor("x", x, dims=3, floating=True)
    check_dtype("x", x, encoder.layers[0].self_attn.w_q.weight, "the encoder")
    # what every layer's self-attention would check: the first layer's stands for all
    check_inputs(encoder.layers[0].self_attn, x, x, x, mask, cache=None if caches is None else caches[0])


class EncoderLayer(nn.Module):
    """Self-attention, then the feed-forward network, each inside a
    :class:`~tx.layers.Residual`; [B, S, D] -> [B, S, D]."""

    def __init__(self, config: LayerConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(
            config.d_model, config.n_heads, config.attention_dropout
        )
        self.feed_forward = FeedForward(config)
        self.residual1 = Residual(config)
        self.residual2 = Residual(config)

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

    With pre-LN a final norm normalises the last layer's output, which would
    otherwise be an un-normalised sum of residuals; post-LN layers already end in one.
    """

    def __init__(self, config: LayerConfig):
        super().__init__()
        self.layers = nn.ModuleList(
            EncoderLayer(config) for _ in range(config.n_layers)
        )
        self.norm = make_norm(config) if config.norm_first else nn.Identity()

    @guarded(_check_stack)
    def forward(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        caches: list[KVCache] | None = None,
    ) -> Tensor:
        """Run the stack: each layer's output is the next layer's input;
        ``caches``: one KVCache a layer, or None."""
        for i, layer in enumerate(self.layers):
            x = layer(x, mask, None if caches is None else caches[i])
        return self.norm(x)
