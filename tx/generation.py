"""Generating text with a language model: temperature, top-k, top-p, one token at a time.

Axes: B batch, P prompt length, N new tokens, V vocabulary size.

At every step the model's last logits become a distribution over the next token:
divided by the temperature (0 means greedy: always the argmax), cut to the k most likely
tokens (top-k), cut to the smallest set whose probability reaches p (top-p, "nucleus"
sampling), renormalised, and sampled. Prompts of different lengths go in one batch
**padded on the left**, so that every row's next token lands in the same column.
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor, nn

from .checks import check_float, check_int, check_tensor, check_tokens, guarded

__all__ = ["filter_top_k", "filter_top_p", "next_token_probs", "left_pad", "generate"]


def filter_top_k(logits: Tensor, k: int) -> Tensor:
    """Logits [..., V] with all but the k largest of each row set to -inf (ties at the k-th kept)."""
    check_int("top_k", k, low=1)
    k = min(k, logits.size(-1))
    kth = logits.topk(k, dim=-1).values[..., -1:]  # [..., 1]: the k-th largest logit
    return logits.masked_fill(logits < kth, float("-inf"))


def _check_top_p(logits: Tensor, p: float) -> None:
    check_float("top_p", p, 0, 1, low_open=True)


@guarded(_check_top_p)
def filter_top_p(logits: Tensor, p: float) -> Tensor:
    """Logits [..., V] keeping, in each row, the smallest set of most likely
    tokens whose probability reaches p."""
    # [..., V]
    probs, order = logits.softmax(dim=-1).sort(dim=-1, descending=True)
    before = probs.cumsum(dim=-1) - probs  # mass of the more likely tokens
    # already reached p without this token: not needed
    drop_sorted = before >= p
    # back to vocabulary order
    drop = drop_sorted.scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


def _check_probs(logits: Tensor, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None) -> None:
    _check_sampling(temperature, top_k, top_p)


@guarded(_check_probs)
def next_token_probs(
    logits: Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> Tensor:
    """The distribution [..., V] that :func:`generate` samples from, given last
    logits [..., V].

    Temperature 0 gives all the probability to the argmax (greedy decoding).
    """
    if temperature == 0:
        return torch.nn.functional.one_hot(
            logits.argmax(dim=-1), logits.size(-1)
        ).to(logits.dtype)
    logits = logits / temperature
    if top_k is not None:
        logits = filter_top_k(logits, top_k)
    if top_p is not None:
        logits = filter_top_p(logits, top_p)
    return logits.softmax(dim=-1)


def left_pad(prompts: Sequence[Sequence[int]], pad_id: int = 0) -> Tensor:
    """Id lists of different lengths -> LongTensor [B, P], padded on the left."""
    if len(prompts) == 0 or any(len(p) == 0 for p in prompts):
        raise ValueError("left_pad needs at least one prompt, and every prompt at least one token.")
    out = torch.full((len(prompts), max(map(len, prompts))), pad_id, dtype=torch.long)  # [B, P]
    for row, ids in zip(out, prompts):
        row[row.numel() - len(ids):] = torch.as_tensor(list(ids), dtype=torch.long)
    return out


def _check_sampling(temperature: float, top_k: int | None, top_p: float | None) -> None:
    check_float("temperature", temperature, 0)
    if top_k is not None:
        check_int("top_k", top_k, low=1)
    if top_p is not None:
        check_float("top_p", top_p, 0, 1, low_open=True)


def _check_generate(
    model, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None, use_cache=True, generator=None,
    eos_id=None,
) -> None:
    """Everything generate needs, checked before the first step, with what to do instead."""
    config = getattr(model, "config", None)
    if not (hasattr(model, "new_cache") and hasattr(config, "max_len") and hasattr(config, "pad_id")):
        raise TypeError(f"model must be a tx.LanguageModel, got {type(model).__name__}.")
    check_tensor("prompt", prompt, dims=2)
    if prompt.numel() == 0 or not bool((prompt != config.pad_id).any(dim=1).all()):
        raise ValueError(
            f"the prompt is empty (shape {tuple(prompt.shape)}, or a row of padding only): give every row at "
            "least one token, e.g. the <bos> id, to start from."
        )
    if prompt.size(1) > config.max_len:
        raise ValueError(
            f"the prompt has {prompt.size(1)} positions but the model's context is {config.max_len}: "
            f"keep its last {config.max_len - 1} tokens (prompt[:, -{config.max_len - 1}:]) to leave room to generate."
        )
    vocab_size = getattr(config, "vocab_size", None)
    if vocab_size is not None:  # ids the embedding can look up, named as the caller knows them
        check_tokens(prompt, vocab_size, config.max_len, "prompt")
    check_int("max_new_tokens", max_new_tokens, low=0)
    _check_sampling(temperature, top_k, top_p)
    if eos_id is not None:
        check_int("eos_id", eos_id, low=0)


@guarded(_check_generate)
@torch.no_grad()
def generate(
    model: nn.Module,
    prompt: Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    use_cache: bool = True,
    generator: torch.Generator | None = None,
    eos_id: int | None = None,
) -> Tensor:
    """Continue prompts [B, P] (left-padded with the model's pad_id) by up to N tokens; returns [B, P + N].

    Greedy when ``temperature`` is 0; the pad id is never generated. ``generator`` seeds the sampling. With ``use_cache``
    each step feeds only the newest token and reuses earlier keys and values; without it
    the whole sequence runs again (the same numbers, slower). A row that has produced
    ``eos_id`` is padded from then on; generation stops early once every row has, or when the
    context (``max_len`` positions) is full.
    """
    pad_id = model.config.pad_id
    was_training = model.training
    model.eval()
    try:
        cache = model.new_cache() if use_cache else None
        tokens, done = prompt, torch.zeros(prompt.size(0), dtype=torch.bool, device=prompt.device)
        logits = model(prompt, cache)[:, -1]  # [B, V]
        for _ in range(max_new_tokens):
            logits[:, pad_id] = float("-inf")  # padding is layout, never a word to generate
            probs = next_token_probs(logits, temperature, top_k, top_p)  # [B, V]
            nxt = probs.argmax(-1) if temperature == 0 else torch.multinomial(probs, 1, generator=generator)[:, 0]
            nxt = nxt.masked_fill(done, pad_id)  # [B]
            tokens = torch.cat([tokens, nxt[:, None]], dim=1)  # [B, P + n]
            done = done | (nxt == eos_id) if eos_id is not None else done
            if bool(done.all()) or tokens.size(1) >= model.config.max_len:  # the context is full
                break
            logits = (model(nxt[:, None], cache) if use_cache else model(tokens))[:, -1]  # [B, V]
    finally:
        model.train(was_training)
    return tokens
