"""Checkers for chapter 12, real French: counting pairs, one BPE merge, and the unknown-token rate.

A word is a tuple of pieces with a count, ``{("▁", "l", "e", "s"): 3, ...}``, as
:func:`tx.subwords.split_words` gives it. Each checker compares the learner's answer with
:mod:`tx.subwords` (whose merges are tested against the ``tokenizers`` library) on words of
its own, some drawn from a seeded generator the learner never sees, and prints one line
when it is right.
"""

from __future__ import annotations

import random
from typing import Any, Callable

from .. import subwords
from ..data import Vocab
from . import CheckFailed, assert_number, call, forbids, part, parts, passed, seeded

__all__ = ["check_count_pairs", "check_merge_pair", "check_unknown_rate"]

Words = dict[tuple[str, ...], int]


def _hidden_words(seed: int) -> Words:
    """Random words over a small alphabet, with counts, so that pairs repeat within and across words."""
    rng = random.Random(seed)
    words: Words = {}
    while len(words) < 6:
        word = ("▁",) + tuple(rng.choice("aabst") for _ in range(rng.randint(1, 6)))
        words[word] = rng.randint(1, 5)
    return words


_SHOWN: Words = {("▁", "l", "e", "s"): 3, ("▁", "c", "h", "a", "t", "s"): 2, ("▁", "e", "s", "t"): 1}


def _as_counts(got: Any, what: str) -> dict:
    if not isinstance(got, dict):
        raise CheckFailed(f"{what} should return a dict (or a Counter), got {type(got).__name__}.")
    bad = [v for v in got.values() if isinstance(v, bool) or not isinstance(v, int)]
    if bad:
        raise CheckFailed(f"{what} should map to whole counts (ints), got {bad[0]!r}.")
    return {k: v for k, v in got.items() if v}  # a Counter may keep zero entries


@forbids([(subwords, "count_pairs")], "count the pairs yourself, with a loop over each word's pieces.")
@parts("the chapter's words", "random words", "a pair twice in one word", drawn=True)
def check_count_pairs(fn: Callable[[Words], dict[tuple[str, str], int]]) -> None:
    """``fn(words) -> {(a, b): count}``: every adjacent pair, each word weighted by its count."""
    cases = {"the chapter's words": [_SHOWN], "random words": [_hidden_words(seeded(12)), _hidden_words(seeded(120))],
             "a pair twice in one word": [{("a", "a", "a"): 2}]}
    for name, part_cases in cases.items():
        with part(name):
            for words in part_cases:
                _check_count_pairs(fn, words)
    passed("count_pairs counts every neighbouring pair, weighted by its word's count.")


def _check_count_pairs(fn: Callable[[Words], dict[tuple[str, str], int]], words: Words) -> None:
    got = _as_counts(call(fn, dict(words)), "count_pairs")
    expected = dict(subwords.count_pairs(words))
    if got == expected:
        return
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    if missing:
        raise CheckFailed(f"for the words {words}, the pair {missing[0]} is missing (it occurs "
                          f"{expected[missing[0]]} times). A pair was missed: run i from 0 to len(pieces) - 2, "
                          "the last pair included.")
    if extra:
        raise CheckFailed(f"for the words {words}, you count the pair {extra[0]}, which never occurs. "
                          "Only neighbours count: a pair is (pieces[i], pieces[i + 1]), never past the word's end.")
    pair = next(p for p in sorted(expected) if got[p] != expected[p])
    raise CheckFailed(f"for the words {words}, the pair {pair} should count {expected[pair]}, got {got[pair]}. "
                      "Multiply by each word's count, and count a pair every time it occurs in a word.")


@forbids([(subwords, "merge_pair")], "join the pieces yourself, walking each word left to right.")
@parts("the chapter's words", "random words", "a pair that overlaps itself", "two spellings that become one word",
       drawn=True)
def check_merge_pair(fn: Callable[[Words, tuple[str, str]], Words]) -> None:
    """``fn(words, pair) -> words``: every occurrence of ``pair`` joined, read left to right."""
    hidden = [_hidden_words(seeded(seed)) for seed in (7, 70)]
    cases = {
        "the chapter's words": [(_SHOWN, ("e", "s"))],
        "random words": [(words, subwords.count_pairs(words).most_common(1)[0][0]) for words in hidden],
        "a pair that overlaps itself": [({("a", "a", "a"): 2, ("▁", "a", "a", "a", "a"): 1}, ("a", "a"))],
        "two spellings that become one word": [({("▁", "a", "b"): 2, ("▁", "ab"): 3}, ("a", "b"))],
    }
    for name, part_cases in cases.items():
        with part(name):
            for words, pair in part_cases:
                _check_merge_pair(fn, words, pair)
    passed("merge_pair joins every occurrence of the pair, left to right, and keeps every count.")


def _check_merge_pair(fn: Callable[[Words, tuple[str, str]], Words], words: Words, pair: tuple[str, str]) -> None:
    # tx.subwords.merge_pair is folded on the page above the exercise: calling it is no answer
    got = _as_counts(call(fn, dict(words), pair), "merge_pair")
    expected = subwords.merge_pair(words, pair)
    if got == expected:
        return
    if sum(got.values()) != sum(expected.values()):
        raise CheckFailed(f"merging {pair} in {words}: the counts add up to {sum(got.values())}, not "
                          f"{sum(expected.values())}. Keep every word, and add up the counts of words that "
                          "become the same tuple.")
    for word, n in expected.items():
        if got.get(word) != n:
            raise CheckFailed(f"merging {pair} in {words}: expected {word}: {n}, got {got}. Walk the pieces "
                              "left to right; where pieces[i:i + 2] is the pair, append the joined piece and "
                              "skip two, else append pieces[i] and skip one.")


@forbids([(subwords, "unknown_rate")], "encode the sentences and count the <unk> ids yourself.")
@parts("a word vocabulary", "random sentences", "a BPE vocabulary", drawn=True)
def check_unknown_rate(fn: Callable[[Any, list[str]], float]) -> None:
    """``fn(vocab, sentences) -> float``: the share of the sentences' tokens ``vocab`` encodes as <unk>."""
    known = ["le chat dort .", "le chien mange .", "un chat mange le poisson ."]
    words = Vocab.build(known)
    rng = random.Random(seeded(12))
    hidden = [" ".join(rng.choice(["le", "chat", "loup", "dort", "vite", "."]) for _ in range(rng.randint(2, 7)))
              for _ in range(5)]
    bpe = subwords.SubwordVocab.train(known * 2, vocab_size=40, min_frequency=1)
    cases = {"a word vocabulary": [(words, ["le loup dort .", "le chat mange ."]),
                                   (words, ["un loup", "un loup affamé mange le chat ."])],
             "random sentences": [(words, hidden)],
             "a BPE vocabulary": [(bpe, ["le loup dort ."]), (bpe, ["le zèbre dort ."])]}
    for name, part_cases in cases.items():
        with part(name):
            for vocab, sentences in part_cases:
                expected = subwords.unknown_rate(vocab, sentences)
                got = call(fn, vocab, list(sentences))
                try:
                    assert_number(got, expected, f"unknown_rate for {sentences}", tol=1e-9)
                except CheckFailed as e:
                    raise CheckFailed(f"{e} Count tokens, not sentences or distinct words, and leave <bos> and "
                                      "<eos> out: vocab.encode(s, add_bos=False, add_eos=False).") from None
    passed("unknown_rate gives the share of tokens encoded as <unk>, for a word vocabulary and for BPE.")
