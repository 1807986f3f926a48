"""Checkers for chapter 9, the final linear and softmax layer.

Axes: V vocabulary size. Each checker calls the learner's function on inputs of its own,
compares the answer with torch, and prints one line when it is right.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from . import CheckFailed, assert_tensor, call, forbidding, passed
from .ch03 import SOFTMAXES

__all__ = ["POST_VOCAB", "check_softmax_with_temperature", "check_one_hot", "check_pick_word"]

POST_VOCAB = ("a", "am", "i", "thanks", "student", "<eos>")
"""The six-word output vocabulary of The Illustrated Transformer's training example."""


def check_softmax_with_temperature(fn: Callable[[Tensor, float], Tensor]) -> None:
    """``fn(logits [..., V], temperature) -> probabilities [..., V]`` must equal ``torch.softmax(logits / temperature, -1)``."""
    g = torch.Generator().manual_seed(9)
    cases = [
        (torch.tensor([2.0, 1.0, 0.1]), 1.0),
        (torch.tensor([2.0, 1.0, 0.1]), 0.5),
        (torch.tensor([2.0, 1.0, 0.1]), 4.0),
        (torch.randn(4, 6, generator=g) * 3, 2.0),  # a batch: softmax runs along the last axis
        (torch.tensor([1000.0, 999.0, 990.0]), 1.0),  # exp(1000) overflows unless the max is taken out
        # Rows on different scales: only each row's own largest logit keeps both rows finite.
        (torch.tensor([[1000.0, 999.0, 995.0], [-1000.0, -1001.0, -1003.0]]), 1.0),
        # A wide range: subtracting the smallest logit instead of the largest overflows, the mean does not.
        (torch.tensor([3.0, -150.0, 0.5, -2.0]), 1.0),
        # One logit far above the rest of its row: subtracting the row's mean still leaves exp(124).
        (torch.tensor([[120.0, -40.0, -45.0, -50.0], [1.0, 2.0, 0.0, -1.0]]), 1.0),
        (torch.randn(3, 8, generator=g) * 80, 0.7),
    ]
    for logits, temperature in cases:
        with forbidding(SOFTMAXES, "write the softmax yourself, with exp, max, sum and arithmetic."):
            got = call(fn, logits.clone(), temperature)
        what = f"softmax_with_temperature(logits of shape {tuple(logits.shape)}, temperature={temperature})"
        overflows = float((logits / temperature).abs().max()) > 80  # exp(80) is near float32's limit
        if isinstance(got, Tensor) and got.shape == logits.shape and not bool(torch.isfinite(got).all()) and overflows:
            z = logits / temperature
            by_min, by_global_max = (z - z.amin(-1, keepdim=True)).exp(), (z - z.max()).exp()
            by_mean = (z - z.mean(-1, keepdim=True)).exp()
            same_failure = lambda e: torch.equal(torch.isfinite(got), torch.isfinite(e / e.sum(-1, keepdim=True)))  # noqa: E731
            if z.dim() > 1 and same_failure(by_global_max) and not same_failure(by_min):
                raise CheckFailed(
                    f"{what} holds inf or nan in a row whose logits are far below another row's: subtract "
                    "each row's own largest logit, z.max(dim=-1, keepdim=True).values, not the largest of the whole tensor."
                )
            if same_failure(by_mean):
                gap = float((z.amax(-1) - z.mean(-1)).max())
                raise CheckFailed(
                    f"{what} holds inf or nan: subtracting each row's mean logit still leaves an exponent of "
                    f"{gap:.0f}, and exp of anything above about 88 overflows in float32. Subtract the largest "
                    "logit of each row, so every exponent is at most 0."
                )
            if same_failure(by_min):
                raise CheckFailed(
                    f"{what} holds inf or nan: the logits of a row span more than exp can take (about 88 "
                    "in float32). Subtract the largest logit of each row, so every exponent is at most 0, "
                    "not the smallest."
                )
            raise CheckFailed(
                f"{what} holds inf or nan. exp() of a large logit overflows: subtract the largest "
                "logit (of each row) before exp(); the softmax does not change."
            )
        assert_tensor(got, torch.softmax(logits / temperature, dim=-1), what)
    passed("your softmax matches torch.softmax(logits / temperature, dim=-1), large logits included.")


def _expected_one_hot(word: str, vocab: Sequence[str]) -> Tensor:
    return F.one_hot(torch.tensor(list(vocab).index(word)), len(vocab)).float()  # [V]


def check_one_hot(fn: Callable[[str, Sequence[str]], Tensor]) -> None:
    """``fn(word, vocab) -> [V]``: 1 at the word's index in ``vocab``, 0 elsewhere (as ``F.one_hot``)."""
    numbers = ("zero", "one", "two", "three", "four", "five", "six", "seven")
    g = torch.Generator().manual_seed(9)
    hidden = [f"w{int(i)}" for i in torch.randperm(40, generator=g)[:13]]  # a vocabulary the prompt never shows
    cases = [("am", POST_VOCAB), ("a", POST_VOCAB), ("<eos>", POST_VOCAB), ("five", numbers), (hidden[7], hidden)]
    for word, vocab in cases:
        with forbidding([(F, "one_hot")], "build the vector with torch.zeros and set one entry to 1."):
            got = call(fn, word, list(vocab))
        expected = _expected_one_hot(word, vocab)
        if isinstance(got, Tensor) and got.shape == expected.shape and float(got.sum()) != 1.0:
            raise CheckFailed(f"one_hot({word!r}, ...) sums to {float(got.sum()):g}; a one-hot vector holds a single 1.")
        assert_tensor(got, expected, f"one_hot({word!r}, {list(vocab)})", dtype=torch.float32)
    passed("your one-hot vectors match F.one_hot.")


def check_pick_word(fn: Callable[[Tensor, Sequence[str]], str]) -> None:
    """``fn(logits [V], vocab) -> str``: the word with the largest logit, hence the largest probability."""
    g = torch.Generator().manual_seed(10)
    cases = [
        torch.tensor([0.5, 3.0, 1.0, -1.0, 0.0, 2.0]),
        torch.tensor([-4.0, -3.0, -5.0, -0.5, -2.0, -6.0]),  # all negative: the largest is the least negative
        torch.randn(6, generator=g),
        torch.tensor([0.1, 0.2, 0.3, 0.4, 0.5, 9.0]),
    ]
    for logits in cases:
        got = call(fn, logits.clone(), list(POST_VOCAB))
        expected = POST_VOCAB[int(logits.argmax())]
        if not isinstance(got, str):
            raise CheckFailed(f"pick_word should return the word as a str, got {type(got).__name__}.")
        if got != expected:
            raise CheckFailed(
                f"for logits {[round(v, 2) for v in logits.tolist()]} over {list(POST_VOCAB)} you picked "
                f"{got!r}; the largest logit belongs to {expected!r}."
            )
    passed("you pick the word with the highest score.")
