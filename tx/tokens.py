"""Tokens and the special ids: the bottom of every vocabulary, word-level or subword.

Axes: T sequence length (ids).

``tokenize`` splits the book's lowercased text into words and marks; ``detokenize`` joins
them back. The four special tokens hold ids 0-3 in every vocabulary of tx
(:class:`tx.data.Vocab` and :class:`tx.subwords.SubwordVocab` alike), so batches, masks and
decoding need not ask which one a model uses. ``tx.data`` re-exports every name here.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

from torch import Tensor

__all__ = [
    "Pair", "PAD", "BOS", "EOS", "UNK", "SPECIALS", "PAD_ID", "BOS_ID", "EOS_ID", "UNK_ID",
    "tokenize", "detokenize", "as_id_list",
]

Pair = tuple[str, str]

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3

# ----------------------------------------------------------------------------- words

# An elided word keeps its apostrophe ("j'", "l'") when a letter follows; then runs of
# letters and digits; then any other visible character is a token of its own.
_TOKEN_RE = re.compile(r"[^\W\d_]+'(?=[^\W_])|[^\W_]+|\S")
# The spaces detokenize removes: after an elision, and before . , ! ? ; (tokens hold no
# spaces, and no word token starts with a quote or a mark, so these are token boundaries).
_GLUE_RE = re.compile(r"(?<=') | (?=[.,!?;])")


def tokenize(text: str) -> list[str]:
    """Split lowercased text into words, elided words ("j'", "l'") and punctuation marks."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__} {text!r:.60}.")
    # NFC so that a decomposed "é" (e + combining accent) stays one letter of one word.
    text = unicodedata.normalize("NFC", text).lower().replace("\u2019", "'")
    return _TOKEN_RE.findall(text)


def detokenize(tokens: Sequence[str]) -> str:
    """Join tokens with spaces, except after an elision ("j'") and before . , ! ? ;."""
    return _GLUE_RE.sub("", " ".join(tokens))


# ----------------------------------------------------------------------------- ids


def as_id_list(ids: Iterable[int] | Tensor) -> list[int]:
    """Turn a 1-D tensor [T] or any iterable of ints into a list of Python ints."""
    if isinstance(ids, Tensor):
        if ids.dim() != 1:
            raise ValueError(f"expected a 1-D tensor of ids [T], got shape {tuple(ids.shape)}")
        return ids.tolist()
    return [int(i) for i in ids]
