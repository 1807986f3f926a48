"""Positional encoding: how the model is told where each word is.

Axes: B batch, T sequence length, D d_model, V vocabulary size.

Attention treats its inputs as a set, so the order of words must be written into the
vectors themselves. The paper (section 3.5) adds fixed sinusoids, not learned ones:

    PE[pos, 2i]   = sin(pos / 10000^(2i / d_model))
    PE[pos, 2i+1] = cos(pos / 10000^(2i / d_model))
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .checks import check_int
from .layers import Dropout

__all__ = ["positional_encoding", "Embedding"]


def positional_encoding(max_len: int, d_model: int) -> Tensor:
    """The paper's sinusoidal table [max_len, d_model], sines on even and cosines on odd dimensions."""
    check_int("max_len", max_len, low=1)
    check_int("d_model", d_model, low=2)
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even to pair sines with cosines, got {d_model}.")
    pos = torch.arange(max_len, dtype=torch.float32)[:, None]  # [L, 1]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)  # [D/2]: the even dimensions 2i
    angle = pos / 10000 ** (two_i / d_model)  # [L, D/2]
    pe = torch.empty(max_len, d_model)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe  # [L, D]


class Embedding(nn.Module):
    """Token ids [B, T] -> vectors [B, T, D]: embedding * sqrt(D) + positional encoding, then dropout.

    The sqrt(D) scale (paper 3.4) puts the embeddings on the same scale as the encoding,
    whose entries lie in [-1, 1]. Dropout on the sum is one of the paper's places (5.4).
    """

    def __init__(self, vocab_size: int, d_model: int, max_len: int, dropout: float = 0.1):
        super().__init__()
        check_int("vocab_size", vocab_size, low=1)
        self.token = nn.Embedding(vocab_size, d_model)
        self.scale = math.sqrt(d_model)
        self.dropout = Dropout(dropout)
        # A buffer, not a parameter: the encoding is fixed, never trained.
        self.register_buffer("pe", positional_encoding(max_len, d_model), persistent=False)

    def forward(self, tokens: Tensor, start: int = 0) -> Tensor:
        """Embed tokens that sit at positions start .. start+T-1; returns [B, T, D]."""
        T = tokens.size(1)
        if start + T > self.pe.size(0):
            raise ValueError(
                f"positions {start}..{start + T - 1} are past the positional table's {self.pe.size(0)} rows; "
                "shorten the sequence or build the model with a larger max_len."
            )
        x = self.token(tokens) * self.scale + self.pe[start : start + T]  # [B, T, D]
        return self.dropout(x)
