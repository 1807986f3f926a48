"""Checkers for chapter 9, the final linear and softmax layer.

Axes: V vocabulary size, T target length. Each checker calls the learner's function on
inputs of its own, compares the answer with torch, and prints one line when it is right.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from . import CheckFailed, assert_tensor, call, forbids, keeps_random_state, part, parts, passed, seeded
from .ch03 import SOFTMAXES

__all__ = ["POST_VOCAB", "check_log_softmax_with_temperature", "check_next_word_targets", "check_sample_word"]

POST_VOCAB = ("a", "am", "i", "thanks", "student", "<eos>")
"""The six-word output vocabulary of The Illustrated Transformer's training example."""

LOG_SOFTMAXES = SOFTMAXES + [(torch, "logsumexp"), (torch.Tensor, "logsumexp"), (torch.special, "logsumexp")]
"""torch's softmax, log-softmax and log-sum-exp, which exercise 9.1 asks the learner to do without."""


def _log_softmax_hint(got: Tensor, z: Tensor) -> str | None:
    """A hint for a log-softmax answer ``got`` of the tempered logits ``z`` that holds inf or nan, or None."""
    stable = (z - z.amax(-1, keepdim=True)).exp()
    probs = stable / stable.sum(-1, keepdim=True)
    same_failure = lambda e: torch.equal(torch.isfinite(got), torch.isfinite(e))  # noqa: E731
    if same_failure(probs.log()):
        return ("holds -inf where a probability rounds to 0 (exp of a logit far below the largest underflows): "
                "do not take the log of the softmax. Write log p_i = (z_i - m) - log(sum_j exp(z_j - m)), "
                "with m the row's largest logit: the log never sees a 0.")
    if float(z.abs().max()) > 80:
        return ("holds inf or nan: exp() of a large logit overflows. Subtract each row's largest logit, "
                "z.max(dim=-1, keepdim=True).values, before exp(); the log-softmax does not change.")
    return None


@forbids(LOG_SOFTMAXES, "write the log-softmax yourself, with exp, log, max, sum and arithmetic.")
@keeps_random_state
@parts("the worked logits", "a random batch", "very large and very small logits", drawn=True)
def check_log_softmax_with_temperature(fn: Callable[[Tensor, float], Tensor]) -> None:
    """``fn(logits [..., V], temperature) -> log-probabilities [..., V]``, as
    ``torch.log_softmax(logits / temperature, -1)``."""
    g = torch.Generator().manual_seed(seeded(9))
    cases = {
        "the worked logits": [(torch.tensor([2.0, 1.0, 0.1]), t) for t in (1.0, 0.5, 4.0)],
        "a random batch": [(torch.randn(4, 6, generator=g) * 3, 2.0)],  # one distribution per row
        "very large and very small logits": [
            (torch.tensor([1000.0, 999.0, 990.0]), 1.0),  # exp(1000) overflows unless the max is taken out
            # exp(-200) underflows to 0 in float32: the log of the softmax is -inf, the log-softmax is not.
            (torch.tensor([[3.0, -200.0, 0.5], [1.0, 2.0, -150.0]]), 1.0),
            (torch.tensor([[1000.0, 999.0, 995.0], [-1000.0, -1001.0, -1003.0]]), 1.0),
            (torch.randn(3, 8, generator=g) * 80, 0.7),
        ],
    }
    for name, part_cases in cases.items():
        with part(name):
            for logits, temperature in part_cases:
                _check_log_softmax(fn, logits, temperature)
    passed("your log-softmax matches torch.log_softmax(logits / temperature, dim=-1), large and tiny "
           "probabilities included.")


def _check_log_softmax(fn: Callable[[Tensor, float], Tensor], logits: Tensor, temperature: float) -> None:
    got = call(fn, logits.clone(), temperature)
    what = f"log_softmax_with_temperature(logits of shape {tuple(logits.shape)}, temperature={temperature})"
    z = logits / temperature
    expected = torch.log_softmax(z, dim=-1)
    if isinstance(got, Tensor) and got.shape == logits.shape:
        got_f = got.detach().float()
        if not bool(torch.isfinite(got_f).all()) and (hint := _log_softmax_hint(got_f, z)):
            raise CheckFailed(f"{what} {hint}")
        if torch.allclose(got_f, expected.exp(), atol=1e-5):
            raise CheckFailed(f"{what} returned probabilities (they sum to 1 along the row): return their "
                              "logarithms, which are all at most 0.")
        if temperature != 1.0 and torch.allclose(got_f, torch.log_softmax(logits, -1), atol=1e-5):
            raise CheckFailed(f"{what} matches the log-softmax of the logits themselves: divide them by the "
                              "temperature first.")
    assert_tensor(got, expected, what)


def _next_word_targets(sentence: str, vocab: Sequence[str], length: int) -> Tensor:
    ids = [list(vocab).index(w) for w in sentence.split()] + [list(vocab).index("<eos>")]
    rows = F.one_hot(torch.tensor(ids), len(vocab)).float()  # [n_words + 1, V]
    return torch.cat([rows, torch.zeros(length - len(ids), len(vocab))])  # [T, V]: padding rows all 0


def _targets_hint(got: Tensor, expected: Tensor, n_words: int) -> str | None:
    """A hint for an answer ``got`` of ``expected``'s shape, whose first ``n_words + 1`` rows are real, or None."""
    got = got.float()
    real, padding = got[: n_words + 1], got[n_words + 1:]
    if not bool((got[n_words] == 0).all()) and bool((padding == expected[n_words]).all()) and len(padding):
        return ("fills the padding positions with <eos>: a padding position has no word to predict, so its "
                "row is all zeros.")
    if bool((got[n_words] == 0).all()):
        return (f"has no target at position {n_words}, the last word's: the decoder reads <bos> and the "
                f"{n_words} words, {n_words + 1} positions, and the last one must predict <eos>.")
    if not bool(((real == 1).sum(-1) == 1).all() and ((real == 0).sum(-1) == got.shape[1] - 1).all()):
        return "every row of a real position must hold a single 1 and zeros elsewhere."
    if torch.equal(real[1:], expected[:n_words]):
        return ("is shifted by one: row 0 is the position of <bos>, which must predict the first word, not "
                "<bos> itself.")
    if not bool((padding == 0).all()):
        return "a padding position has no word to predict: its row must be all zeros."
    return None


@forbids([(F, "one_hot")], "build the rows with torch.zeros and set one entry of each to 1.")
@parts("the chapter's sentence", "padded sentences", "other vocabularies", drawn=True)
def check_next_word_targets(fn: Callable[[str, Sequence[str], int], Tensor]) -> None:
    """``fn(sentence, vocab, length) -> [length, V]``: the one-hot next word of each position, zeros for padding."""
    numbers = ("<eos>", "zero", "one", "two", "three", "four", "five", "six", "seven")
    g = torch.Generator().manual_seed(seeded(9))
    hidden = ["<eos>"] + [f"w{int(i)}" for i in torch.randperm(40, generator=g)[:12]]  # never shown
    cases = {
        "the chapter's sentence": [("i am a student", POST_VOCAB, 5)],
        "padded sentences": [("i am a student", POST_VOCAB, 7), ("thanks", POST_VOCAB, 4),
                             ("a student a student", POST_VOCAB, 6)],
        "other vocabularies": [("three one four one five", numbers, 9),
                               (" ".join(hidden[5:1:-1]), hidden, 5 + int(torch.randint(1, 4, (), generator=g)))],
    }
    for name, part_cases in cases.items():
        with part(name):
            for sentence, vocab, length in part_cases:
                _check_next_word_targets(fn, sentence, vocab, length)
    passed("your targets match F.one_hot of the words that follow each position, <eos> last, then zero rows "
           "for the padding.")


def _check_next_word_targets(fn: Callable[[str, Sequence[str], int], Tensor], sentence: str, vocab: Sequence[str],
                             length: int) -> None:
    got = call(fn, sentence, list(vocab), length)
    expected = _next_word_targets(sentence, vocab, length)
    what = f"next_word_targets({sentence!r}, {list(vocab)}, {length})"
    n_words = len(sentence.split())
    if isinstance(got, Tensor) and got.dim() == 2 and got.shape[1] == len(vocab):
        if got.shape[0] == n_words:
            raise CheckFailed(f"{what} has {n_words} rows, one per word; the decoder reads <bos> and the "
                              f"{n_words} words, {n_words + 1} positions, and the last one must predict "
                              "<eos>.")
        if got.shape[0] == n_words + 1 != length:
            raise CheckFailed(f"{what} has {n_words + 1} rows, one per position of the sentence: pad it to "
                              f"{length} rows, one per decoder position of the batch, all zeros past <eos>.")
    if isinstance(got, Tensor) and got.shape == expected.shape:
        if hint := _targets_hint(got, expected, n_words):
            raise CheckFailed(f"{what} {hint}")
    assert_tensor(got, expected, what, dtype=torch.float32)


def _word_at(probs: Tensor, u: float) -> int:
    """The index i with cdf[i-1] <= u < cdf[i], cdf the running sum of ``probs`` [V]; the last word past cdf[-1]."""
    cdf = probs.double().cumsum(0)  # [V]
    return min(int((cdf <= u).sum()), probs.numel() - 1)


def _as_index(got: object, what: str) -> int:
    """The learner's answer as a Python int, or CheckFailed saying what came back."""
    if isinstance(got, Tensor) and got.numel() == 1 and not got.is_floating_point() and got.dtype != torch.bool:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, int):
        raise CheckFailed(f"{what} should return the index of a word, an int, got {type(got).__name__} {got!r}.")
    return got


SAMPLERS = [(torch, "multinomial"), (torch.Tensor, "multinomial"), (torch.distributions.Categorical, "sample")]
"""What exercise 9.3 asks the learner to do without: torch's own ways to draw an index."""


_Answer = tuple[str, int, Tensor, Tensor, float, float]  # (what, got, probs, logits, temperature, u)


@forbids(SAMPLERS, "turn u into a word yourself, with the running sum of the probabilities.")
@keeps_random_state
@parts("temperature 1", "other temperatures", "u on a boundary", drawn=True)
def check_sample_word(fn: Callable[[Tensor, float, float], int]) -> None:
    """``fn(logits [V], temperature, u) -> int``: the word i whose slice [cdf[i-1], cdf[i]) of [0, 1) holds u,
    cdf the running sum of softmax(logits / temperature)."""
    g = torch.Generator().manual_seed(seeded(11))
    post = torch.tensor([1.0, 3.0, 0.5, -1.0, 0.0, 2.0])
    cases = {
        "temperature 1": _aimed_at_every_slice([(post, 1.0)]),
        "other temperatures": _aimed_at_every_slice([(post, 0.5), (post, 4.0),
                                                     (torch.randn(9, generator=g) * 2, 2.0)]),
        # Equal logits give exact slices, [0, 0.25), [0.25, 0.5), ...: u on a boundary belongs to the word it starts.
        "u on a boundary": [(torch.full((4,), 2.0), 3.0, u) for u in (0.0, 0.25, 0.5, 0.75)],
    }
    answers: list[_Answer] = []  # every case so far, for the hint: which wrong rule explains them all?
    for name, part_cases in cases.items():
        with part(name):
            for logits, temperature, u in part_cases:
                got = call(fn, logits.clone(), temperature, u)
                what = (f"sample_word(logits={[round(v, 2) for v in logits.tolist()]}, temperature={temperature}, "
                        f"u={u:.4f})")
                probs = torch.softmax(logits / temperature, dim=-1)
                answers.append((what, _as_index(got, what), probs, logits, temperature, u))
            _check_samples(answers)
    passed("u in [cdf[i-1], cdf[i]) gives word i: a uniform u draws each word with its probability.")


def _aimed_at_every_slice(settings: list[tuple[Tensor, float]]) -> list[tuple[Tensor, float, float]]:
    """(logits, temperature, u) with u at the middle and near both ends of every slice wide enough to aim at."""
    cases = []
    for logits, temperature in settings:
        cdf = torch.softmax(logits / temperature, dim=-1).double().cumsum(0)  # [V]
        lower = torch.cat([torch.zeros(1, dtype=cdf.dtype), cdf[:-1]])
        wide = (cdf - lower) > 4e-3  # slices wide enough to aim at their inside and both ends
        us = [(lo + hi) / 2 for lo, hi in zip(lower[wide].tolist(), cdf[wide].tolist())]
        us += [lo + 1e-3 for lo in lower[wide].tolist()] + [hi - 1e-3 for hi in cdf[wide].tolist()]
        cases += [(logits, temperature, u) for u in us]
    return cases


def _check_samples(answers: list[_Answer]) -> None:
    """CheckFailed for the first wrong answer, naming the wrong rule that explains every answer, if one does."""
    wrong = [a for a in answers if a[1] != _word_at(a[2], a[5])]
    if not wrong:
        return
    what, got, probs, _, _, u = wrong[0]
    cdf = probs.double().cumsum(0)  # [V]
    said = (f"{what} returned {got}; expected {_word_at(probs, u)} (the running sum is "
            f"{', '.join(f'{c:.3f}' for c in cdf.tolist())}).")
    # Which wrong rule explains every answer, the right ones included?
    rules = [
        (lambda p, u: int((p.double().cumsum(0) < u).sum()),
         "u lies exactly on a boundary of the running sum: the slice of word i is cdf[i-1] <= u < cdf[i], "
         "closed on the left, so u belongs to the next word. Count the cdf entries <= u (or use "
         "torch.searchsorted(cdf, u, right=True))."),
        (lambda p, u: _word_at(p, u) + 1, "That is one word late: word i owns cdf[i-1] <= u < cdf[i], so the "
         "answer is the number of cdf entries <= u."),
        (lambda p, u: _word_at(p, u) - 1, "That is one word early: word i owns cdf[i-1] <= u < cdf[i], so "
         "the answer is the number of cdf entries <= u."),
        (lambda p, u: int(p.argmax()), "That is always the most probable word, greedy picking; u must choose "
         "the word."),
    ]
    for rule, hint in rules:
        if all(got == rule(probs, u) for _, got, probs, _, _, u in answers):
            raise CheckFailed(f"{said} {hint}")
    tempered = [a for a in answers if a[4] != 1.0]
    if tempered and all(got == _word_at(torch.softmax(logits, -1), u) for _, got, _, logits, _, u in tempered):
        raise CheckFailed(f"{said} That is the word of softmax(logits): divide the logits by the temperature "
                          "first.")
    raise CheckFailed(f"{said} Take the running sum of the probabilities softmax(logits / temperature), "
                      "not of the logits, and return the first i whose cdf[i] is greater than u.")
