"""Positional encoding: how the model is told where each word is.

Axes: B batch, T sequence length, D d_model, V vocabulary size, L max_len.

Attention treats its inputs as a set, so the order of words must be written into the
vectors themselves. The paper (section 3.5) adds fixed sinusoids, not learned ones::

    PE[pos, 2i]   = sin(pos / 10000^(2i / d_model))
    PE[pos, 2i+1] = cos(pos / 10000^(2i / d_model))

It reports that a learned table did as well; GPT-2 and the Vision Transformer learn
theirs (:class:`LearnedPositions`).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .checks import check_bool, check_choice, check_int, check_tensor, check_tokens, guarded
from .config import POSITIONS
from .layers import Dropout, _check_p

__all__ = ["positional_encoding", "LearnedPositions", "Embedding"]


def _check_table(max_len: int, d_model: int) -> None:
    check_int("max_len", max_len, low=1)
    check_int("d_model", d_model, low=2)
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even to pair sines with cosines, got {d_model}.")


def check_rows(start: int, length: int, rows: int) -> None:
    """Raise ValueError when positions start .. start+length-1 do not fit a table of ``rows`` rows."""
    if start + length > rows:
        raise ValueError(
            f"positions {start}..{start + length - 1} are past the positional table's {rows} rows; "
            "shorten the sequence or build the model with a larger max_len."
        )


def _check_embedding(
    embedding: "Embedding", tokens: Tensor, start: int = 0, positions: Tensor | None = None
) -> None:
    """Token ids [B, T] of the vocabulary at positions inside the table."""
    rows, vocab = embedding.max_len, embedding.token.num_embeddings
    check_int("start", start, low=0)
    if positions is None:
        if isinstance(tokens, Tensor) and tokens.dim() == 2:
            check_rows(start, tokens.size(1), rows)
        check_tokens(tokens, vocab, rows, "tokens", start)
        return
    check_tokens(tokens, vocab, rows, "tokens")
    check_tensor("positions", positions, dims=2)
    if positions.shape != tokens.shape or int(positions.min()) < 0 or int(positions.max()) >= rows:
        raise ValueError(
            f"positions must give every token of tokens {tuple(tokens.shape)} a row of the positional "
            f"table (0..{rows - 1}); got shape {tuple(positions.shape)}."
        )


@guarded(_check_table)
def positional_encoding(max_len: int, d_model: int) -> Tensor:
    """The paper's sinusoidal table [max_len, d_model], sines on even and cosines on odd dimensions."""
    pos = torch.arange(max_len, dtype=torch.float32)[:, None]  # [L, 1]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)  # [D/2]: the even dimensions 2i
    angle = pos / 10000 ** (two_i / d_model)  # [L, D/2]
    pe = torch.empty(max_len, d_model)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe  # [L, D]


def _check_learned(table: "LearnedPositions | None", max_len: int, d_model: int) -> None:
    check_int("max_len", max_len, low=1)
    check_int("d_model", d_model, low=1)


def _check_length(table: "LearnedPositions", length: int, start: int = 0) -> None:
    check_rows(start, length, table.table.size(0))


class LearnedPositions(nn.Module):
    """A trained table of position vectors [L, D], one row a position (GPT-2, BERT, ViT); T -> [T, D].

    Rows start small (normal, std 0.02, as GPT-2 initialises them) and are learned with the rest.
    """

    @guarded(_check_learned)
    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        self.table = nn.Parameter(torch.randn(max_len, d_model) * 0.02)  # [L, D]

    @guarded(_check_length)
    def forward(self, length: int, start: int = 0) -> Tensor:
        """The rows of positions start .. start+length-1: [T, D]."""
        return self.table[start : start + length]  # [T, D]


def _check_sizes(
    embedding: "Embedding", vocab_size: int, d_model: int, max_len: int, dropout: float = 0.1,
    positions: str = "sinusoidal", scale: bool = True,
) -> None:
    # everything the parts it builds would check: their own checks do not run inside this one
    check_int("vocab_size", vocab_size, low=1)
    check_choice("positions", positions, POSITIONS)
    check_bool("scale", scale)
    if positions == "sinusoidal":
        _check_table(max_len, d_model)
    else:
        _check_learned(None, max_len, d_model)
    _check_p(None, dropout)


class Embedding(nn.Module):
    """Token ids [B, T] -> vectors [B, T, D]: embedding * sqrt(D) + positional
    encoding, then dropout.

    The sqrt(D) scale (paper 3.4) puts the embeddings on the same scale as the
    encoding, whose entries lie in [-1, 1]. Dropout on the sum is one of the
    paper's places (5.4). ``positions="learned"`` trains the table instead
    (:class:`LearnedPositions`); ``scale=False`` drops the sqrt(D), as GPT-2
    does.
    """

    @guarded(_check_sizes)
    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        max_len: int,
        dropout: float = 0.1,
        positions: str = "sinusoidal",
        scale: bool = True,
    ):
        super().__init__()
        self.token = nn.Embedding(vocab_size, d_model)
        self.scale = math.sqrt(d_model) if scale else 1.0
        self.dropout = Dropout(dropout)
        self.max_len = max_len
        self.learned = (
            LearnedPositions(max_len, d_model)
            if positions == "learned"
            else None
        )
        # A buffer, not a parameter: the paper's encoding is fixed, never
        # trained.
        pe = (
            positional_encoding(max_len, d_model)
            if positions == "sinusoidal"
            else None
        )
        self.register_buffer("pe", pe, persistent=False)

    @guarded(_check_embedding)
    def forward(
        self, tokens: Tensor, start: int = 0, positions: Tensor | None = None
    ) -> Tensor:
        """Tokens [B, T] at positions start .. start+T-1 -> [B, T, D].

        ``positions`` [B, T] gives every token its own position instead (a
        language model's left-padded rows start at different places).
        """
        T = tokens.size(1)
        table = self.pe if self.learned is None else self.learned.table  # [L, D]
        if positions is None:
            where = table[start : start + T]  # [T, D]
        else:
            where = table[positions]  # [B, T, D]
        return self.dropout(self.token(tokens) * self.scale + where)  # [B, T, D]
