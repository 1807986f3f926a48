"""Checkers for chapter 8, the decoder side: the causal mask, the cache's memory, cross-attention keys.

Axes: B batch, S source length, T target length, V vocabulary size, H heads, Dh head size.

Every checker builds its inputs and models from seeds of its own, so running a check
leaves the learner's random stream where it was.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import torch
from torch import Tensor

from ..config import TransformerConfig
from ..decoder import DecoderCache
from ..masks import causal_mask
from ..model import Transformer
from ..multi_head import split_heads
from . import CheckFailed, as_count, assert_tensor, call, forbids, keeps_random_state, part, parts, passed, seeded
from .. import masks

__all__ = ["check_causal_mask", "check_cache_bytes", "check_cross_attention_keys"]


def _tiny_model(seed: int = 0) -> Transformer:
    """A small untrained Transformer with fixed weights (src vocabulary 13, tgt 11, D 16, H 4)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return Transformer(src_vocab_size=13, tgt_vocab_size=11, d_model=16, n_heads=4, n_layers=2, d_ff=32,
                           dropout=0.0, max_len=16).eval()


def _source(seed: int = 1) -> Tensor:
    """Three source sentences [3, 5], the last one padded."""
    src = torch.randint(4, 13, (3, 5), generator=torch.Generator().manual_seed(seed))
    src[2, 3:] = 0  # a shorter sentence: padding must not matter
    return src


@forbids(lambda: [(sys.modules["tx"], "causal_mask"), (masks, "causal_mask")],
         "build the mask yourself, from torch.ones or torch.arange.")
@parts("four positions", "every size from 1 to 6")
def check_causal_mask(causal_mask_fn: Callable[[int], Tensor]) -> None:
    """``causal_mask_fn(T)`` must be bool [T, T], True where query i may see key j, i.e. j <= i."""
    # T = 4 first: a mask of one position cannot tell an inverted mask from a hidden diagonal.
    for name, sizes in (("four positions", (4,)), ("every size from 1 to 6", (1, 2, 3, 5, 6))):
        with part(name):
            for T in sizes:
                _check_causal_mask(causal_mask_fn, T)
    passed("your causal mask hides exactly the future positions, as tx.causal_mask does, for T = 1 to 6.")


def _check_causal_mask(causal_mask_fn: Callable[[int], Tensor], T: int) -> None:
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


def _cache_nbytes(config: TransformerConfig, batch: int, max_len: int, src_len: int, seed: int) -> int:
    """Bytes of the keys and values a tx cache holds after one decoding step of a model built from ``config``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Transformer.from_config(config).eval()
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, config.src_vocab_size, (batch, src_len), generator=g)  # [B, S]
    cache = model.new_cache(max_len)
    with torch.no_grad():
        model.decode(model.encode(src), src, torch.ones(batch, 1, dtype=torch.long), cache)
    return sum(t.nbytes for c in cache.self_attn + cache.cross_attn for t in (c.k, c.v))


def _cache_mistakes(config: TransformerConfig, B: int, max_len: int, S: int) -> list[tuple[int, str]]:
    """(what a mistake gives, its hint), most likely first: the count with one factor wrong or one part missing."""
    L, D, H = config.n_layers, config.d_model, config.n_heads
    right = L * 2 * B * D * (max_len + S) * 4
    return [
        (right // 2, "that is half the bytes: the cache keeps the keys and the values, two tensors "
                     "[B, H, positions, Dh] per attention layer, and a float32 number takes 4 bytes, not 2."),
        (right // 4, "that is a quarter of the bytes: you counted numbers (or 1 byte each); a float32 takes 4 bytes."),
        (right * 2, "that is twice the bytes: a float32 number takes 4 bytes, not 8."),
        (L * 2 * B * D * max_len * 4, "you left out the cross-attention's cache: every decoder layer also keeps the "
                                      "memory's keys and values, src_len positions, in a static KVCache."),
        (L * 2 * B * D * S * 4, "you counted only the cross-attention's cache: every decoder layer also keeps its "
                                "self-attention's keys and values, max_len positions."),
        (L * 2 * B * D * (1 + S) * 4, "after one step the self-attention's cache has one position filled, but "
                                      "KVCache.update allocates its buffers for all max_len positions at the first "
                                      "step: count max_len."),
        (L * 2 * B * D * 2 * max_len * 4, "the cross-attention's cache holds the source's keys and values: src_len "
                                          "positions, not max_len."),
        (right * H, "you gave every head d_model numbers; a head has Dh = d_model / n_heads, so the n_heads heads "
                    "together hold d_model numbers per position."),
        (right // H, "you counted one head: the cache holds every head, n_heads * Dh = d_model numbers per position."),
        (right // B, "the cache holds every sentence of the batch: multiply by batch."),
        (right // L, "every decoder layer has caches of its own: multiply by n_layers."),
    ]


@forbids([(Transformer, "__init__")], "count from the config, without building the model.")
@keeps_random_state
@parts("sizes where each mistake shows", "other sizes", "random sizes", drawn=True)
def check_cache_bytes(cache_bytes: Callable[[TransformerConfig, int, int, int], Any]) -> None:
    """``cache_bytes(config, batch, max_len, src_len) -> int``: the bytes of a filled tx cache, from the config
    alone."""
    g = torch.Generator().manual_seed(seeded(8))
    hidden = int(torch.randint(1, 4, (1,), generator=g)), int(torch.randint(2, 6, (1,), generator=g))
    # (n_layers, d_model, n_heads, batch, max_len, src_len): the first has every mistake give a different count
    cases = {"sizes where each mistake shows": [(3, 16, 8, 5, 7, 4)],
             "other sizes": [(2, 12, 3, 2, 3, 9), (1, 8, 1, 1, 1, 1)],
             "random sizes": [(hidden[0], 4 * hidden[1], 2, 3, 6, 5)]}
    for name, sizes in cases.items():
        with part(name):
            for case in sizes:
                _check_cache_bytes(cache_bytes, *case)
    passed("your count matches the bytes of the keys and values a tx cache holds, for every size.")


def _check_cache_bytes(cache_bytes: Callable[[TransformerConfig, int, int, int], Any], n_layers: int, d_model: int,
                       n_heads: int, B: int, max_len: int, S: int) -> None:
    config = TransformerConfig(src_vocab_size=13, tgt_vocab_size=11, d_model=d_model, n_heads=n_heads,
                               n_layers=n_layers, d_ff=2 * d_model, dropout=0.0, max_len=16)
    expected = _cache_nbytes(config, B, max_len, S, seed=n_layers * d_model)
    got = call(cache_bytes, config, B, max_len, S)
    got = as_count(got, "cache_bytes should return a whole number of bytes, an int; got {got!r}.")
    if got == expected:
        return
    where = (f"cache_bytes(config with n_layers={n_layers}, d_model={d_model}, n_heads={n_heads}; "
             f"batch={B}, max_len={max_len}, src_len={S}) = {got}; expected {expected}.")
    hints = [hint for value, hint in _cache_mistakes(config, B, max_len, S) if value == got]
    hint = hints[0][0].upper() + hints[0][1:] if hints else (
        "Count, for each of the n_layers decoder layers, the keys and the values of its self-attention "
        "(max_len positions) and of its cross-attention (src_len positions), each [batch, n_heads, positions, "
        "d_model / n_heads], at 4 bytes a number.")
    raise CheckFailed(f"{where} {hint}")


@parts("layer 0", "the next layer", drawn=True)
def check_cross_attention_keys(cross_attention_keys: Callable[..., Tensor]) -> None:
    """``cross_attention_keys(model, src, tgt, layer)`` must be the keys [B, H, S, Dh] that layer's cross-attention
    uses."""
    model, src = _tiny_model(seeded(0)), _source(seeded(1))
    tgt = torch.randint(4, 11, (3, 4), generator=torch.Generator().manual_seed(seeded(2)))
    with torch.no_grad():
        # The cache is an independent witness: its cross-attention entry holds exactly those keys.
        cache = model.new_cache()
        model.decode(model.encode(src), src, tgt, cache)
        for layer, name in zip(range(model.config.n_layers), ("layer 0", "the next layer")):
            with part(name):
                _check_cross_attention_keys(cross_attention_keys, model, src, tgt, layer, cache)
    passed("the keys of every decoder layer's cross-attention come from the memory, model.encode(src), through "
           "that layer's W^K.")


def _check_cross_attention_keys(cross_attention_keys: Callable[..., Tensor], model: Transformer, src: Tensor,
                                tgt: Tensor, layer: int, cache: DecoderCache) -> None:
    B, S, T, H = src.size(0), src.size(1), tgt.size(1), model.config.n_heads
    Dh = model.config.d_model // H
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
        raise CheckFailed(f"shape {tuple(got.shape)} is [B, S, D]: split it into heads, [B, H, S, Dh] "
                          "(tx.split_heads).")
    attn = model.decoder.layers[layer].cross_attn
    embedded = split_heads(attn.w_k(model.src_embed(src)), H)
    close = lambda other: (isinstance(got, Tensor) and got.shape == other.shape  # noqa: E731
                           and torch.allclose(got.float(), other, atol=1e-5))
    if close(embedded):
        raise CheckFailed("these keys come from the source embeddings; use the top encoder's output, "
                          "model.encode(src).")
    if close(split_heads(attn.w_v(model.encode(src)), H)):
        raise CheckFailed("these are the values, made by w_v; the keys are made by the key projection, w_k.")
    if layer > 0 and close(cache.cross_attn[0].k):
        raise CheckFailed(f"for layer={layer} you returned layer 0's keys: use model.decoder.layers[layer].")
    assert_tensor(got, cache.cross_attn[layer].k, f"cross_attention_keys(model, src, tgt, layer={layer})")
