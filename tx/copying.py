"""Training pairs that teach a translator to copy what it should not translate: names and numbers.

A name or a number is written the same in French and in English, so a translator should
copy it, piece by piece if it is spelled in several. A corpus holds few examples of each
one (Tatoeba's names are mostly a handful of characters), so a model learns the frequent
ones as words and mangles the rest: "Il a 25 ans." comes out as "He is 250."
:func:`with_copies` adds to the training pairs copies of the pairs that hold the same
number or capitalised word on both sides, with that word or number replaced, on both sides,
by another: a number by a random one of one to four digits, a name by a made-up one of one
to three syllables, as new to the model as a reader's own. The syllables mix French and
English spellings (clusters such as "br" and "ch", vowels such as "é" and "ou", endings
such as "n" and "lle"), so the made-up names are cut into the same kinds of subword pieces
as real ones. Numbers are rarer than names (Tatoeba's French-English pairs share about 46
names for each number), so a pair holding a number can be given more copies.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence

from .tokens import Pair

__all__ = ["shared_words", "with_copies", "fits_model"]

_NUMBER_OR_NAME = re.compile(r"\b(?:\d+|[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+)\b")
_ONSETS = ["", "", "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w",
           "z", "bl", "br", "ch", "cl", "dr", "fl", "gr", "ph", "pr", "sh", "st", "th", "tr"]
_VOWELS = ["a", "a", "e", "e", "i", "o", "u", "y", "é", "è", "ai", "au", "ea", "ee", "eu", "ie", "oi", "ou"]
_ENDINGS = ["", "", "c", "ck", "l", "lle", "m", "n", "n", "nd", "ne", "r", "rre", "rt", "s", "t", "tte", "x"]


def shared_words(pair: Pair) -> list[str]:
    """The numbers and capitalised words written the same in both sentences of ``pair``, in order."""
    french, english = pair
    in_english = set(_NUMBER_OR_NAME.findall(english))
    seen: list[str] = []
    for word in _NUMBER_OR_NAME.findall(french):
        if word in in_english and word not in seen:
            seen.append(word)
    return seen


def _replacement(word: str, rng: random.Random) -> str:
    if word.isdigit():
        digits = rng.randint(1, 4)
        return str(rng.randrange(10 ** (digits - 1) if digits > 1 else 0, 10 ** digits))
    name = ""
    while len(name) < 3:  # "A" or "Eu" would be too short to learn copying from
        syllables = [rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(rng.randint(1, 3))]
        name = "".join(syllables) + rng.choice(_ENDINGS)
    return name.capitalize()


def fits_model(src_vocab, tgt_vocab, max_len: int) -> Callable[[Pair], bool]:
    """The ``fits`` test :func:`with_copies` takes for a model of ``max_len`` positions: True when both
    sentences of a pair, in their vocabulary's pieces plus one special token, fit in it (as
    :func:`tx.data.check_lengths` counts)."""
    def fits(pair: Pair) -> bool:
        return max(len(src_vocab.encode(pair[0], False, False)),
                   len(tgt_vocab.encode(pair[1], False, False))) + 1 <= max_len
    return fits


def with_copies(pairs: Sequence[Pair], copies: int = 1, seed: int = 0,
                fits: Callable[[Pair], bool] | None = None, number_copies: int | None = None) -> list[Pair]:
    """``pairs``, then ``copies`` new pairs for each pair holding a shared number or name, with
    each such word replaced on both sides by another (numbers by numbers, names by made-up
    names); a pair holding a shared number gets ``number_copies`` instead (``copies`` if None).
    Seeded: the same arguments give the same pairs. A new pair for which ``fits`` returns
    False (one too long for the model, say) is left out.
    """
    number_copies = copies if number_copies is None else number_copies
    if copies < 0 or number_copies < 0:
        raise ValueError(f"copies must be at least 0, got {min(copies, number_copies)}.")
    rng = random.Random(seed)
    out = list(pairs)
    for french, english in pairs:
        words = shared_words((french, english))
        n = number_copies if any(w.isdigit() for w in words) else copies if words else 0
        for _ in range(n):
            new_fr, new_en = french, english
            for word in words:
                other = _replacement(word, rng)
                pattern = re.compile(rf"\b{re.escape(word)}\b")
                new_fr, new_en = pattern.sub(other, new_fr), pattern.sub(other, new_en)
            if fits is None or fits((new_fr, new_en)):
                out.append((new_fr, new_en))
    return out
