"""Attention masks, and the one convention every part of tx uses.

Axes: B batch, H heads, S source length, T target length, Tq query positions, Tk key positions.

A mask is a bool tensor broadcastable to the attention scores [..., Tq, Tk], and
**True means "may attend"**: the convention of
:func:`torch.nn.functional.scaled_dot_product_attention`. A False entry becomes
-inf before the softmax, so that position gets exactly zero weight.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .checks import check_int, check_tensor, guarded

__all__ = ["causal_mask", "padding_mask", "check_mask"]


def _check_causal(T: int, device: torch.device | str | None = None, start: int = 0) -> None:
    check_int("T", T, low=1)
    check_int("start", start, low=0)


def _check_padding(tokens: Tensor, pad_id: int = 0) -> None:
    check_tensor("tokens", tokens, dims=2)
    check_int("pad_id", pad_id, low=0)


@guarded(_check_causal)
def causal_mask(
    T: int, device: torch.device | str | None = None, start: int = 0
) -> Tensor:
    """Bool [T, start + T], True on and below the diagonal: position t may see
    positions 0..t.

    ``start`` counts positions before these (decoding with a cache): query i
    is position start + i and sees keys 0 .. start + i.
    """
    allowed = torch.ones(T, start + T, dtype=torch.bool, device=device)
    return allowed.tril(start)  # [T, start + T]


@guarded(_check_padding)
def padding_mask(tokens: Tensor, pad_id: int = 0) -> Tensor:
    """Bool [B, 1, 1, S] from token ids [B, S]: True where the key is a real token, not padding.

    The two singleton axes broadcast over heads and query positions.
    """
    return (tokens != pad_id)[:, None, None, :]  # [B, 1, 1, S]


def check_mask(mask: Tensor, scores_shape: torch.Size | tuple[int, ...]) -> None:
    """Raise a clear error unless ``mask`` is a bool tensor broadcastable to ``scores_shape``."""
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        kind = mask.dtype if isinstance(mask, Tensor) else type(mask).__name__
        raise TypeError(
            f"mask must be a bool tensor (True = may attend), got {kind}. "
            "Build one with tx.causal_mask / tx.padding_mask, or convert with `mask.bool()`."
        )
    fits = mask.dim() <= len(scores_shape) and all(
        m in (1, s) for m, s in zip(reversed(mask.shape), reversed(tuple(scores_shape)))
    )
    if not fits:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to the attention scores "
            f"{tuple(scores_shape)} ([..., Tq, Tk]). Give it shape [Tq, Tk] or one that broadcasts, "
            "such as [B, 1, 1, Tk] for padding."
        )
