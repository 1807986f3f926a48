"""The pieces every encoder and decoder layer is built from.

Axes: B batch, T sequence length, D d_model, F d_ff.

- :class:`FeedForward`: the same two-layer network applied to every position on its own.
- :class:`Residual`: a residual connection and LayerNorm around a sub-layer, post-LN as in
  the paper or pre-LN as in most models trained today.
- :class:`Dropout`: inverted dropout, the same as ``nn.Dropout`` with a cheaper mask.

Both layers take a :class:`~tx.config.LayerConfig` (any model's config is one), which
checked its values when it was made.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor, nn

from .checks import check_float, guarded
from .config import LayerConfig

__all__ = ["FeedForward", "Residual", "Dropout", "RMSNorm", "make_norm"]


def _check_p(dropout: "Dropout | None", p: float = 0.1) -> None:
    check_float("dropout probability p", p, 0, 1, high_open=True)


class Dropout(nn.Module):
    """Inverted dropout: in training, zero each entry with probability p and scale the rest by 1/(1-p).

    Same distribution as ``nn.Dropout``, but the mask is drawn with ``torch.rand_like``,
    which on a CPU is about twice as fast as the ``bernoulli_`` that ``nn.Dropout`` uses;
    at the book's size dropout masks are a fifth of a training step.
    """

    @guarded(_check_p)
    def __init__(self, p: float = 0.1):
        super().__init__()
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        """x [...] -> [...]; the identity in eval mode or with p = 0."""
        if not self.training or self.p == 0.0:
            return x
        scale = (torch.rand_like(x) >= self.p).to(x.dtype).mul_(1.0 / (1.0 - self.p))
        return x * scale

    def extra_repr(self) -> str:
        return f"p={self.p}"


class RMSNorm(nn.Module):
    """Root-mean-square normalisation (Zhang & Sennrich, 2019); [..., D] -> [..., D].

    ``x / sqrt(mean(x**2) + eps) * weight``: LayerNorm without subtracting the mean and
    without the bias. Each vector is rescaled to a root mean square of 1, then by a learned
    gain per feature; one reduction instead of two. Llama and most models since use it.
    """

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))  # the gain, one per feature

    def forward(self, x: Tensor) -> Tensor:
        rms = (x.pow(2).mean(dim=-1, keepdim=True) + self.eps).sqrt()  # [..., 1]
        return x / rms * self.weight

    def extra_repr(self) -> str:
        return f"{self.weight.numel()}, eps={self.eps}"


def make_norm(config: LayerConfig) -> nn.Module:
    """The normalisation every layer and stack of ``config`` uses, over d_model: LayerNorm or RMSNorm."""
    return RMSNorm(config.d_model) if config.norm == "rms" else nn.LayerNorm(config.d_model)


class FeedForward(nn.Module):
    """Position-wise feed-forward network (paper 3.3): max(0, x W1 + b1) W2 +
    b2; [B, T, D] -> [B, T, D].

    ``config.activation="gelu"`` swaps the ReLU for the smooth GELU of GPT-2
    and ViT; the weights (and so the parameter count) are the same either way.
    """

    def __init__(self, config: LayerConfig):
        super().__init__()
        self.linear1 = nn.Linear(config.d_model, config.d_ff)
        self.linear2 = nn.Linear(config.d_ff, config.d_model)
        self.activation = config.activation

    def forward(self, x: Tensor) -> Tensor:
        """Expand every position to d_ff, apply the activation, project back to
        d_model."""
        h = self.linear1(x)  # [B, T, F]
        h = h.relu() if self.activation == "relu" else nn.functional.gelu(h)
        return self.linear2(h)  # [B, T, D]

    def extra_repr(self) -> str:
        return f"activation={self.activation!r}"


class Residual(nn.Module):
    """A sub-layer wrapped in a residual connection and LayerNorm.

    Post-LN (``config.norm_first=False``, the paper's section 3.1 and the
    default): ``LayerNorm(x + Dropout(sublayer(x)))``. Pre-LN
    (``norm_first=True``, what most models trained today use because it trains
    stably without warm-up): ``x + Dropout(sublayer(LayerNorm(x)))``. Dropout
    sits where paper 5.4 puts it: on the sub-layer's output, before it is
    added to the input. ``config.norm="rms"`` puts RMSNorm where LayerNorm is.
    """

    def __init__(self, config: LayerConfig):
        super().__init__()
        self.norm = make_norm(config)
        self.dropout = Dropout(config.dropout)
        self.norm_first = config.norm_first

    def forward(
        self, x: Tensor, sublayer: Callable[[Tensor], Tensor]
    ) -> Tensor:
        """Apply ``sublayer`` to ``x`` [B, T, D] with the residual and the
        norm; returns [B, T, D]."""
        if self.norm_first:
            return x + self.dropout(sublayer(self.norm(x)))
        return self.norm(x + self.dropout(sublayer(x)))
