"""Checkers for chapter 13, the decoder on its own: the language model's mask, top-k, perplexity.

Axes: B batch, T sequence length, V vocabulary size. Each checker calls the learner's
function on inputs of its own, compares the answer with tx's tested implementation, and
prints one line when it is right.
"""

from __future__ import annotations

import math
import sys
from typing import Callable

import torch
from torch import Tensor

from .. import language_model, masks
from ..generation import filter_top_k
from ..language_model import lm_mask
from . import CheckFailed, as_number, assert_tensor, call, forbids, keeps_random_state, part, parts, passed, seeded

__all__ = ["check_lm_mask", "check_top_k", "check_perplexity"]


def _padded_batches() -> dict[str, tuple[Tensor, int]]:
    """Token batches [B, T] without padding, with padding on the right, on the left, and with pad id 1;
    each with its pad id, by the name of its graded part."""
    g = torch.Generator().manual_seed(seeded(13))  # the tokens; where the padding goes is fixed
    ids = torch.randint(3, 20, (3, 6), generator=g)
    right = ids.clone()
    right[0, 4:] = 0
    right[2, 2:] = 0
    left = ids.clone()
    left[1, :3] = 0
    other_pad = torch.randint(3, 9, (2, 5), generator=g)
    other_pad[1, :2] = 1
    return {"no padding": (ids[:, :4], 0), "padding on the right": (right, 0), "padding on the left": (left, 0),
            "a pad id other than 0": (other_pad, 1)}


def _tx_masks() -> list[tuple[object, str]]:
    """tx's masks: the chapter shows tx.causal_mask(T) & tx.padding_mask(tokens) making this mask;
    calling them (or lm_mask itself) would pass without building anything."""
    import tx

    return [(owner, name) for owner in (tx, masks) for name in ("causal_mask", "padding_mask")] + \
        [(language_model, "lm_mask")]


@forbids(_tx_masks, "build the mask yourself, with torch.ones(...).tril() and a comparison with pad_id.")
@keeps_random_state
@parts("no padding", "padding on the right", "padding on the left", "a pad id other than 0", drawn=True)
def check_lm_mask(fn: Callable[[Tensor, int], Tensor]) -> None:
    """``fn(tokens [B, T], pad_id) -> bool [B, 1, T, T]``: causal, and no query may attend to a padded key."""
    for name, (tokens, pad_id) in _padded_batches().items():
        with part(name):
            _check_lm_mask(fn, tokens, pad_id)
    passed("your mask is causal and hides padding on either side, as tx.language_model.lm_mask.")


def _check_lm_mask(fn: Callable[[Tensor, int], Tensor], tokens: Tensor, pad_id: int) -> None:
    got = call(fn, tokens.clone(), pad_id)
    expected = lm_mask(tokens != pad_id, tokens.size(1))  # [B, 1, T, T]
    what = f"your mask for tokens {tokens.tolist()} (pad_id={pad_id})"
    if isinstance(got, Tensor) and got.shape == expected.shape and got.dtype == torch.bool:
        real = tokens != pad_id  # [B, T]
        causal = torch.ones(tokens.size(1), tokens.size(1), dtype=torch.bool).tril()  # [T, T]
        if bool((got & ~causal).any()):
            raise CheckFailed(f"{what} lets a position attend to a later one: the causal part must be "
                              "True on and below the diagonal only (tril, not triu).")
        if not torch.equal(got, expected) and torch.equal(got, causal.expand_as(got)):
            raise CheckFailed(f"{what} is causal but lets queries attend to padding: also require that the "
                              "key (the last axis) is not pad_id.")
        if not torch.equal(got, expected) and torch.equal(got, causal & real[:, None, :, None]):
            raise CheckFailed(f"{what} masks the padded queries (rows) instead of the padded keys (columns): "
                              "put the padding on the last axis, real[:, None, None, :].")
    assert_tensor(got, expected, what, dtype=torch.bool)


@forbids([(sys.modules[filter_top_k.__module__], "filter_top_k")],
         "keep the k largest yourself, with torch.topk and a comparison.")
@keeps_random_state
@parts("five logits, k = 2", "a random batch", "k = 1 on three axes, and k = V", drawn=True)
def check_top_k(fn: Callable[[Tensor, int], Tensor]) -> None:
    """``fn(logits [..., V], k) -> logits [..., V]``: the k largest of each row kept, the others -inf."""
    g = torch.Generator().manual_seed(seeded(31))
    cases = {"five logits, k = 2": [(torch.tensor([2.0, -1.0, 0.5, 3.0, 0.0]), 2)],
             "a random batch": [(torch.randn(4, 9, generator=g), 3)],
             "k = 1 on three axes, and k = V": [(torch.randn(2, 3, 7, generator=g) * 4, 1),
                                                (torch.randn(3, 6, generator=g), 6)]}
    for name, part_cases in cases.items():
        with part(name):
            for logits, k in part_cases:
                _check_top_k(fn, logits, k)
    passed("your top-k filter keeps the k best logits of every row and sends the rest to -inf.")


def _check_top_k(fn: Callable[[Tensor, int], Tensor], logits: Tensor, k: int) -> None:
    got = call(fn, logits.clone(), k)
    expected = filter_top_k(logits, k)
    what = f"top_k(logits of shape {tuple(logits.shape)}, k={k})"
    if isinstance(got, Tensor) and got.shape == logits.shape:
        kept = torch.isfinite(got)
        n_kept = kept.sum(-1)
        if bool((got.sum(-1) - 1).abs().lt(1e-4).all()) and bool((got >= 0).all()):
            raise CheckFailed(f"{what} returns probabilities; return the logits, filtered (the softmax comes "
                              "later).")
        if bool((got == 0).any()) and not bool((~kept).any()) and k < logits.size(-1):
            raise CheckFailed(f"{what} sets the dropped logits to 0; a logit of 0 still gets probability "
                              "after the softmax. Set them to float('-inf').")
        if bool((n_kept != k).any()) and bool((n_kept == n_kept.flatten()[0]).all()):
            raise CheckFailed(f"{what} keeps {int(n_kept.flatten()[0])} logits a row; keep exactly k={k} "
                              "(compare with the k-th largest, topk(k).values[..., -1:], using <).")
        if not torch.equal(got, expected) and torch.equal(got, expected.sort(-1, descending=True).values):
            raise CheckFailed(f"{what} returns the kept logits sorted; leave every logit at its own index "
                              "(its token id) and send the others to -inf.")
    assert_tensor(got, expected, what)


@keeps_random_state
@parts("a uniform guess over 40 words", "padded batches", "a pad id other than 0", drawn=True)
def check_perplexity(fn: Callable[[Tensor, Tensor, int], float]) -> None:
    """``fn(token_losses [B, T], targets [B, T], pad_id) -> float``: exp of the mean loss over real target tokens."""
    g = torch.Generator().manual_seed(seeded(7))
    padded = []
    for B, T, n_pad in ((2, 5, 2), (3, 4, 3), (1, 6, 0)):
        losses = torch.rand(B, T, generator=g) * 3
        targets = torch.randint(3, 30, (B, T), generator=g)
        targets[0, T - n_pad :] = 0  # the first sentence is shorter
        padded.append((losses, targets, 0))
    # A vocabulary whose <pad> is id 2, where id 0 is a real token: the pad id is the argument, not 0.
    losses = torch.rand(2, 5, generator=g) * 3
    targets = torch.tensor([[7, 0, 4, 2, 2], [0, 5, 0, 9, 6]])
    uniform = (torch.full((2, 3), math.log(40.0)), torch.ones(2, 3, dtype=torch.long) * 5, 0)  # over 40 words
    cases = {"a uniform guess over 40 words": [uniform], "padded batches": padded,
             "a pad id other than 0": [(losses, targets, 2)]}
    for name, part_cases in cases.items():
        with part(name):
            for losses, targets, pad_id in part_cases:
                _check_perplexity(fn, losses, targets, pad_id)
    passed("your perplexity is exp of the mean loss per real token; a uniform guess over 40 words scores 40.")


def _check_perplexity(fn: Callable[[Tensor, Tensor, int], float], losses: Tensor, targets: Tensor,
                      pad_id: int) -> None:
    got = as_number(call(fn, losses.clone(), targets.clone(), pad_id), "your perplexity")
    real = targets != pad_id
    expected = float(losses[real].mean().exp())
    if pad_id != 0 and math.isclose(got, float(losses[targets != 0].mean().exp()), rel_tol=1e-5):
        raise CheckFailed(f"your perplexity leaves out the targets equal to 0, but here pad_id is {pad_id} and 0 is "
                          "a real token: compare the targets with the pad_id argument, not with 0.")
    if math.isclose(got, float(losses.mean().exp()), rel_tol=1e-5) and not math.isclose(got, expected, rel_tol=1e-5):
        raise CheckFailed("your perplexity averages over padding too: count only the positions whose target is not "
                          "pad_id.")
    if math.isclose(got, float(losses[real].mean()), rel_tol=1e-5):
        raise CheckFailed("you return the mean loss; perplexity is exp of it.")
    per_sentence = sum(float(losses[i][real[i]].mean().exp()) for i in range(len(losses))) / len(losses)
    if math.isclose(got, per_sentence, rel_tol=1e-5) and not math.isclose(got, expected, rel_tol=1e-5):
        raise CheckFailed("you average the sentences' perplexities; average the losses of all real tokens "
                          "first, then take exp once (a long sentence counts for more tokens).")
    if not math.isclose(got, expected, rel_tol=1e-4):
        raise CheckFailed(f"your perplexity is {got:.6g}; expected {expected:.6g}, exp(mean loss over real tokens).")
