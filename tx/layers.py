"""The pieces every encoder and decoder layer is built from.

Axes: B batch, T sequence length, D d_model, F d_ff.

- :class:`FeedForward`: the same two-layer network applied to every position on its own.
- :class:`Residual`: a residual connection and LayerNorm around a sub-layer, post-LN as in
  the paper or pre-LN as in most models trained today.
"""

from __future__ import annotations

from typing import Callable

from torch import Tensor, nn

__all__ = ["FeedForward", "Residual"]


class FeedForward(nn.Module):
    """Position-wise feed-forward network (paper 3.3): max(0, x W1 + b1) W2 + b2; [B, T, D] -> [B, T, D]."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x: Tensor) -> Tensor:
        """Expand every position to d_ff, apply ReLU, project back to d_model."""
        return self.linear2(self.linear1(x).relu())  # [B, T, D]


class Residual(nn.Module):
    """A sub-layer wrapped in a residual connection and LayerNorm.

    Post-LN (``norm_first=False``, the paper's section 3.1 and the default):
    ``LayerNorm(x + Dropout(sublayer(x)))``. Pre-LN (``norm_first=True``, what most models
    trained today use because it trains stably without warm-up):
    ``x + Dropout(sublayer(LayerNorm(x)))``. Dropout sits where paper 5.4 puts it: on the
    sub-layer's output, before it is added to the input.
    """

    def __init__(self, d_model: int, dropout: float = 0.1, norm_first: bool = False):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x: Tensor, sublayer: Callable[[Tensor], Tensor]) -> Tensor:
        """Apply ``sublayer`` to ``x`` [B, T, D] with the residual and the norm; returns [B, T, D]."""
        if self.norm_first:
            return x + self.dropout(sublayer(self.norm(x)))
        return self.norm(x + self.dropout(sublayer(x)))
