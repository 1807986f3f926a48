"""Checkers for chapter 8, the decoder side: the causal mask, one greedy step, cross-attention keys.

Axes: B batch, S source length, T target length, V vocabulary size, H heads, Dh head size.

Every checker builds its inputs and models from seeds of its own, so running a check
leaves the learner's random stream where it was.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

from ..decoding import greedy_decode
from ..masks import causal_mask
from ..model import Transformer
from ..multi_head import split_heads
from . import CheckFailed, assert_tensor, call, forbidding, passed
from .. import masks

__all__ = ["check_causal_mask", "check_next_tokens", "check_cross_attention_keys"]


def _tiny_model(seed: int = 0) -> Transformer:
    """A small untrained Transformer with fixed weights (src vocabulary 13, tgt 11, D 16, H 4)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return Transformer(13, 11, d_model=16, n_heads=4, n_layers=2, d_ff=32, dropout=0.0, max_len=16).eval()


def _source(seed: int = 1) -> Tensor:
    """Three source sentences [3, 5], the last one padded."""
    src = torch.randint(4, 13, (3, 5), generator=torch.Generator().manual_seed(seed))
    src[2, 3:] = 0  # a shorter sentence: padding must not matter
    return src


def check_causal_mask(causal_mask_fn: Callable[[int], Tensor]) -> None:
    """``causal_mask_fn(T)`` must be bool [T, T], True where query i may see key j, i.e. j <= i."""
    import tx

    # T = 4 first: a mask of one position cannot tell an inverted mask from a hidden diagonal.
    for T in (4, 1, 2, 3, 5, 6):
        with forbidding([(tx, "causal_mask"), (masks, "causal_mask")], "build the mask yourself, from torch.ones or torch.arange."):
            got = call(causal_mask_fn, T)
        if not isinstance(got, Tensor):
            raise CheckFailed(f"causal_mask({T}) should return a torch.Tensor, got {type(got).__name__}.")
        if got.dtype != torch.bool:
            raise CheckFailed(
                f"causal_mask({T}) has dtype {got.dtype}; tx masks are bool, True = may attend "
                "(build it from torch.ones(T, T, dtype=torch.bool), or convert with .bool())."
            )
        if got.shape != (T, T):
            raise CheckFailed(f"causal_mask({T}) has shape {tuple(got.shape)}; expected ({T}, {T}).")
        expected = causal_mask(T)
        if T > 1 and torch.equal(got, ~expected):
            raise CheckFailed(
                f"causal_mask({T}) is inverted: it is True where attention is blocked. In tx, as in "
                "F.scaled_dot_product_attention, True means may attend: keep the diagonal and below True."
            )
        if T > 1 and torch.equal(got, expected.T):
            raise CheckFailed(
                f"causal_mask({T}) is the transpose of the causal mask: rows are queries i and columns keys j, "
                "and query i may see key j when j <= i, the lower triangle (torch.tril)."
            )
        for i in range(T):
            for j in range(T):
                if j > i and got[i, j]:
                    raise CheckFailed(
                        f"causal_mask({T})[{i}, {j}] is True: position {i} can see position {j}, which "
                        "comes later. No position may see the future: keep only the diagonal and below."
                    )
                if j <= i and not got[i, j]:
                    raise CheckFailed(
                        f"causal_mask({T})[{i}, {j}] is False: position {i} cannot see position {j}"
                        f"{' (itself)' if i == j else ', which comes earlier'}. Every position sees itself and the past."
                    )
        assert_tensor(got, causal_mask(T), f"causal_mask({T})")
    passed("your causal mask hides exactly the future positions, as tx.causal_mask does, for T = 1 to 6.")


def check_next_tokens(next_tokens: Callable[[Tensor, Tensor, int], Tensor]) -> None:
    """``next_tokens(logits [B, T, V], done [B], pad_id) -> [B]``: argmax at the last position, pad if done."""
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(4, 3, 7, generator=g)
    logits[:, 0, 6] = 10.0  # the first position would always pick id 6; the last position must decide
    done = torch.tensor([False, True, False, False])
    got = call(next_tokens, logits, done, 0)
    expected = logits[:, -1].argmax(dim=-1).masked_fill(done, 0)  # [B]
    if isinstance(got, Tensor) and got.shape == expected.shape:
        if torch.equal(got, logits[:, 0].argmax(-1).masked_fill(done, 0)):
            raise CheckFailed("you used the first position's logits: the next word is predicted by the last one, logits[:, -1].")
        if torch.equal(got, logits[:, -1].argmax(-1)):
            raise CheckFailed(f"row 1 has finished (done[1] is True): its token must be pad_id, got {int(got[1])}.")
    if isinstance(got, Tensor) and got.is_floating_point():
        raise CheckFailed("next_tokens should return integer token ids (argmax gives torch.long), not probabilities.")
    assert_tensor(got, expected, "next_tokens(logits [4, 3, 7], done, pad_id=0)")
    # Another batch, with a pad_id other than 0: the learner never sees it.
    logits, done = torch.randn(2, 5, 9, generator=g), torch.tensor([True, False])
    got = call(next_tokens, logits.clone(), done.clone(), 3)
    expected = logits[:, -1].argmax(dim=-1).masked_fill(done, 3)  # [B]
    if isinstance(got, Tensor) and got.shape == expected.shape and int(got[0]) == 0:
        raise CheckFailed("a finished sentence got id 0: use the pad_id argument (here 3), not a fixed 0.")
    assert_tensor(got.long() if isinstance(got, Tensor) and not got.is_floating_point() else got, expected,
                  "next_tokens(logits [2, 5, 9], done, pad_id=3)")
    # Now drive a whole decoding loop with it and compare with tx.greedy_decode.
    model, src = _tiny_model(), _source()
    first = greedy_decode(model, src, 6, bos_id=1, eos_id=-1, use_cache=False)  # -1: never stops
    eos = int(first[0, 3])  # so that row 0 finishes at step 3 and the others must wait, padded
    expected_ys = greedy_decode(model, src, 6, bos_id=1, eos_id=eos, use_cache=False)
    with torch.no_grad():
        memory = model.encode(src)
        ys = torch.ones(3, 1, dtype=torch.long)
        finished = torch.zeros(3, dtype=torch.bool)
        for _ in range(6):
            token = call(next_tokens, model.decode(memory, src, ys), finished.clone(), 0)
            if not isinstance(token, Tensor) or token.shape != (ys.size(0),):
                shape = tuple(token.shape) if isinstance(token, Tensor) else type(token).__name__
                raise CheckFailed(f"in a decoding loop over {ys.size(0)} sentences, next_tokens returned {shape}; "
                                  f"expected one id per sentence, shape ({ys.size(0)},).")
            ys = torch.cat([ys, token.view(-1, 1).long()], dim=1)
            finished = finished | (token == eos)
            if bool(finished.all()):
                break
    if ys.shape != expected_ys.shape or not torch.equal(ys, expected_ys):
        raise CheckFailed(f"a greedy loop built on next_tokens gave\n{ys}\nbut tx.greedy_decode gives\n{expected_ys}.")
    passed("next_tokens picks the most probable word at the last position and pads finished rows, as tx.greedy_decode does.")


def check_cross_attention_keys(cross_attention_keys: Callable[..., Tensor]) -> None:
    """``cross_attention_keys(model, src, tgt, layer)`` must be the keys [B, H, S, Dh] that layer's cross-attention uses."""
    model, src = _tiny_model(), _source()
    tgt = torch.randint(4, 11, (3, 4), generator=torch.Generator().manual_seed(2))
    B, S, T, H = src.size(0), src.size(1), tgt.size(1), model.config.n_heads
    Dh = model.config.d_model // H
    with torch.no_grad():
        # The cache is an independent witness: its cross-attention entry holds exactly those keys.
        cache = model.new_cache()
        model.decode(model.encode(src), src, tgt, cache)
        for layer in range(model.config.n_layers):
            got = call(cross_attention_keys, model, src, tgt, layer)
            if isinstance(got, Tensor) and got.shape == (B, T, model.config.d_model):
                raise CheckFailed(
                    f"shape {tuple(got.shape)} is [B, T, D]: the keys have the source's length S = {S}, and "
                    "are split into heads, [B, H, S, Dh] (tx.split_heads)."
                )
            if isinstance(got, Tensor) and got.shape == (B, H, T, Dh):
                raise CheckFailed(
                    f"shape {tuple(got.shape)} has the target's length T = {T}: the encoder-decoder attention "
                    "takes its keys from the encoder's output (the memory), not from the decoder's input."
                )
            if isinstance(got, Tensor) and got.shape == (B, S, model.config.d_model):
                raise CheckFailed(f"shape {tuple(got.shape)} is [B, S, D]: split it into heads, [B, H, S, Dh] (tx.split_heads).")
            attn = model.decoder.layers[layer].cross_attn
            embedded = split_heads(attn.w_k(model.src_embed(src)), H)
            close = lambda other: (isinstance(got, Tensor) and got.shape == other.shape  # noqa: E731
                                   and torch.allclose(got.float(), other, atol=1e-5))
            if close(embedded):
                raise CheckFailed("these keys come from the source embeddings; use the top encoder's output, model.encode(src).")
            if close(split_heads(attn.w_v(model.encode(src)), H)):
                raise CheckFailed("these are the values, made by w_v; the keys are made by the key projection, w_k.")
            if layer > 0 and close(cache.cross_attn[0].k):
                raise CheckFailed(f"for layer={layer} you returned layer 0's keys: use model.decoder.layers[layer].")
            assert_tensor(got, cache.cross_attn[layer].k, f"cross_attention_keys(model, src, tgt, layer={layer})")
    passed("the keys of every decoder layer's cross-attention come from the memory, model.encode(src), through that layer's W^K.")
