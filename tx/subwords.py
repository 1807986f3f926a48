"""Subwords: a byte-pair-encoding (BPE) vocabulary for real corpora, which keeps case.

Axes: T sequence length (ids).

A word vocabulary gives every word it never saw in training the same id, <unk>; on a real
corpus that is a large share of the words of new sentences. Byte-pair encoding (Sennrich et
al. 2016; the paper's 37,000 shared tokens are BPE) starts from single characters and
repeatedly merges the most frequent adjacent pair into a new piece, so frequent words become
one piece and a rare word is spelled out of smaller pieces the model knows.

:class:`SubwordVocab` offers the interface of :class:`tx.data.Vocab` (``encode``, ``decode``,
``tokens``, ids 0-3 for <pad> <bos> <eos> <unk>), so batches, decoding, evaluation and
checkpoints take either. It wraps a Hugging Face ``tokenizers`` BPE model, trained on the
training split only, and is stored inside a checkpoint as that library's JSON (never pickle).
The word-level ``Vocab`` stays the vocabulary of the built-in corpus and chapters 1-11.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from torch import Tensor

from .checks import check_int, guarded
from .tokens import BOS_ID, EOS_ID, PAD_ID, SPECIALS, UNK, UNK_ID, as_id_list

__all__ = ["SubwordVocab", "tidy_typed", "split_words", "count_pairs", "merge_pair", "learn_merges", "unknown_rate"]

_KIND = "bpe"


class SubwordVocab:
    """A cased BPE vocabulary: text <-> subword ids, the four specials at ids 0-3 as in ``tx.data.Vocab``."""

    pad_id, bos_id, eos_id, unk_id = PAD_ID, BOS_ID, EOS_ID, UNK_ID
    # Case is kept end to end, so a translation is compared with its reference as written.
    comparison = "cased"
    unit = "pieces"  # what one id stands for, as error messages name it

    def __init__(self, tokenizer_json: str) -> None:
        """Wrap a trained ``tokenizers`` tokenizer given as its JSON; build one with :meth:`train`."""
        from tokenizers import Tokenizer

        if not isinstance(tokenizer_json, str):
            raise TypeError(f"tokenizer_json must be the tokenizer's JSON text, got {type(tokenizer_json).__name__}.")
        try:
            self._tok = Tokenizer.from_str(tokenizer_json)
        except Exception as e:  # the library raises its own exception type for bad JSON
            raise ValueError(f"not a tokenizers JSON ({e}); build a SubwordVocab with SubwordVocab.train(sentences).") from None
        found = [self._tok.id_to_token(i) for i in range(len(SPECIALS))]
        if tuple(found) != SPECIALS:
            raise ValueError(f"a SubwordVocab's ids 0-3 must be {list(SPECIALS)}, got {found}; build it with SubwordVocab.train.")
        self._json = self._tok.to_str()

    @classmethod
    def train(cls, sentences: Iterable[str], vocab_size: int = 8000, min_frequency: int = 2,
              byte_fallback: bool = False) -> SubwordVocab:
        """Learn BPE merges from ``sentences`` (a training split only) until ``vocab_size`` pieces; case kept.

        Text is NFC-normalised with runs of white space made one space, split at spaces (a piece that starts a word carries "▁") and
        before and after punctuation, then merged. Characters seen fewer than ``min_frequency``
        times are left out and later encode as <unk>; with ``byte_fallback``, 256 more pieces,
        ``<0x00>`` to ``<0xFF>``, spell such a character as its UTF-8 bytes instead, so that no
        input becomes <unk> (as Llama's and other byte-fallback BPE vocabularies do).
        """
        from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

        if isinstance(sentences, str):
            raise TypeError(f"sentences must be a list of strings, got the string {sentences!r:.60}: pass [{sentences!r:.60}].")
        check_int("vocab_size", vocab_size, low=len(SPECIALS) + 1)
        check_int("min_frequency", min_frequency, low=1)
        sentences = list(sentences)
        if not sentences or not all(isinstance(s, str) for s in sentences):
            raise ValueError("SubwordVocab.train needs a non-empty list of sentences (strings) to learn from.")
        tok = Tokenizer(models.BPE(unk_token=UNK))
        tok.normalizer = normalizers.Sequence([  # what normalise() does to a reference, in the same order
            normalizers.NFC(), normalizers.Replace(Regex(r"\s+"), " "), normalizers.Strip()])
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Metaspace(), pre_tokenizers.Punctuation()])
        tok.decoder = decoders.Metaspace()
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                      special_tokens=list(SPECIALS), show_progress=False)
        tok.train_from_iterator(sentences, trainer)
        if not byte_fallback:
            return cls(tok.to_str())
        spec = json.loads(tok.to_str())
        vocab = spec["model"]["vocab"]
        for byte in range(256):  # after the learned pieces: the specials keep ids 0-3
            vocab.setdefault(f"<0x{byte:02X}>", len(vocab))
        spec["model"]["byte_fallback"] = True
        # bytes back into characters first, then "▁" back into spaces
        spec["decoder"] = {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, spec["decoder"]]}
        return cls(json.dumps(spec))

    def __len__(self) -> int:
        """Number of pieces, specials included (V)."""
        return self._tok.get_vocab_size()

    def __contains__(self, piece: object) -> bool:
        """Whether ``piece`` is one of the vocabulary's pieces."""
        return isinstance(piece, str) and self._tok.token_to_id(piece) is not None

    def __eq__(self, other: object) -> bool:
        """Two subword vocabularies are equal when their tokenizers are (same pieces, same merges)."""
        return isinstance(other, SubwordVocab) and self._json == other._json

    __hash__ = None

    def __repr__(self) -> str:
        """Size and a few pieces."""
        return f"SubwordVocab({len(self)} BPE pieces: {self.tokens(range(4, min(len(self), 12)))}...)"

    def pieces(self, text: str) -> list[str]:
        """The BPE pieces of ``text``, without specials ("▁" marks a piece that starts a word)."""
        return self._tok.encode(_check_text(text), add_special_tokens=False).tokens

    def encode(self, text: str, add_bos: bool = True, add_eos: bool = True) -> list[int]:
        """Text -> ids [T], optionally framed by BOS ... EOS; characters never seen in training -> UNK_ID
        (or, with byte fallback, their UTF-8 bytes)."""
        ids = self._tok.encode(_check_text(text), add_special_tokens=False).ids
        return [BOS_ID] * add_bos + ids + [EOS_ID] * add_eos

    def encode_batch(self, texts: Sequence[str], add_bos: bool = True, add_eos: bool = True) -> list[list[int]]:
        """``encode`` of every text, in the library's parallel batch encoder (much faster on a corpus)."""
        found = self._tok.encode_batch([_check_text(t) for t in texts], add_special_tokens=False)
        return [[BOS_ID] * add_bos + e.ids + [EOS_ID] * add_eos for e in found]

    def tokens(self, ids: Iterable[int] | Tensor) -> list[str]:
        """Ids [T] -> piece strings, specials kept (for tick labels)."""
        out = []
        for i in as_id_list(ids):
            if not 0 <= i < len(self):
                raise ValueError(f"id {i} is out of range for a vocabulary of {len(self)} pieces")
            out.append(self._tok.id_to_token(i))
        return out

    def decode(self, ids: Iterable[int] | Tensor, strip_specials: bool = True) -> str:
        """Ids [T] -> text, cut at the first EOS, without BOS/PAD (strip_specials=False: pieces joined as they are)."""
        ids = as_id_list(ids)
        if not strip_specials:
            return " ".join(self.tokens(ids))
        end = ids.index(EOS_ID) if EOS_ID in ids else len(ids)
        self.tokens(ids[:end])  # range check, with its clear error
        kept = [i for i in ids[:end] if i not in (BOS_ID, PAD_ID)]
        # <unk> stays visible: a dropped word must not look like a clean translation.
        return self._tok.decode(kept, skip_special_tokens=False).strip()

    def normalise(self, text: str) -> str:
        """``text`` as decode writes it: NFC-normalised, runs of spaces made one, case kept."""
        return " ".join(unicodedata.normalize("NFC", _check_text(text)).split())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe form, to store in a checkpoint."""
        return {"kind": _KIND, "tokenizer": json.loads(self._json)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SubwordVocab:
        """Inverse of ``to_dict``."""
        if not isinstance(d, dict) or d.get("kind") != _KIND or "tokenizer" not in d:
            raise ValueError("a stored SubwordVocab is a dict {'kind': 'bpe', 'tokenizer': {...}}.")
        return cls(json.dumps(d["tokenizer"]))


def _check_text(text: object) -> str:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__} {text!r:.60}.")
    return text


# Typographic marks as the corpus writes them: Tatoeba's French has 40,902 lines with a plain
# apostrophe and 298 with a curly one, 27 with « ».
_PLAIN_MARKS = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u201c": '"', "\u201d": '"',
                              "\u201e": '"', "\u00ab": '"', "\u00bb": '"'})


def tidy_typed(text: str) -> str:
    """A sentence as a person types it, written as the real corpus writes its sentences.

    NFC; curly apostrophes and quotes (’ ‘ “ ” « ») made plain; runs of white space made one
    space, none at the ends; a sentence typed all in capitals (two capitals or more, no small
    letter) put in small letters with its first letter a capital; a final full stop added
    when the sentence ends in a letter or a digit. ``python -m tx.translate`` and the book's
    live blocks apply it to what a reader types (the page's JavaScript has the same rules,
    and the book's tests compare the two); measurements on the corpus do not, as its sentences are already written this way.
    A missing accent is not restored: only training could teach that.
    """
    text = re.sub(r"\u00ab\s*|\s*\u00bb", '"', unicodedata.normalize("NFC", _check_text(text)))
    text = " ".join(text.translate(_PLAIN_MARKS).split())
    # a capital is a letter that has a small form, a small letter one that has a capital form
    # (case mappings, which Unicode keeps stable, where its categories move between versions)
    letters = [c for c in text if c.isalpha()]
    if sum(c.lower() != c for c in letters) >= 2 and not any(c.upper() != c for c in letters):
        text = text.lower()
        text = text[:1].upper() + text[1:]
    if text and text[-1].isalnum():
        text += "."
    return text


# ----------------------------------------------------------------------------- one merge by hand


def split_words(sentences: Iterable[str]) -> dict[tuple[str, ...], int]:
    """Each word of ``sentences`` spelled as single characters, with its count: what BPE's first merge starts from.

    Words are cut exactly as :meth:`SubwordVocab.train` cuts them (the library's own
    pre-tokenizer: at spaces, with "▁" marking a word's start, and around punctuation).
    """
    from tokenizers import pre_tokenizers

    if isinstance(sentences, str):
        raise TypeError(f"sentences must be a list of strings, got the string {sentences!r:.60}: pass [{sentences!r:.60}].")
    cut = pre_tokenizers.Sequence([pre_tokenizers.Metaspace(), pre_tokenizers.Punctuation()])
    counts: Counter[tuple[str, ...]] = Counter()
    for sentence in sentences:
        text = " ".join(unicodedata.normalize("NFC", _check_text(sentence)).split())
        counts.update(tuple(word) for word, _ in cut.pre_tokenize_str(text))
    return dict(counts)


def count_pairs(words: dict[tuple[str, ...], int]) -> Counter[tuple[str, str]]:
    """How often each adjacent pair of pieces occurs, every word weighted by its count."""
    pairs: Counter[tuple[str, str]] = Counter()
    for pieces, n in words.items():
        for pair in zip(pieces, pieces[1:]):
            pairs[pair] += n
    return pairs


def _check_pair(words: dict[tuple[str, ...], int], pair: tuple[str, str]) -> None:
    if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
        raise TypeError(f"pair must be a tuple of two pieces (strings), such as ('e', 's'), got {pair!r:.60}.")


@guarded(_check_pair)
def merge_pair(
    words: dict[tuple[str, ...], int], pair: tuple[str, str]
) -> dict[tuple[str, ...], int]:
    """The same words with every occurrence of ``pair`` (read left to right)
    joined into one piece."""
    merged: dict[tuple[str, ...], int] = {}
    for pieces, n in words.items():
        out, i = [], 0
        while i < len(pieces):
            if pieces[i : i + 2] == pair:
                out.append(pair[0] + pair[1])
                i += 2
            else:
                out.append(pieces[i])
                i += 1
        merged[tuple(out)] = merged.get(tuple(out), 0) + n
    return merged


def learn_merges(words: dict[tuple[str, ...], int], n_merges: int) -> list[tuple[str, str]]:
    """The first ``n_merges`` merges BPE learns from ``words``: each time the most frequent pair is joined.

    A tie goes, as in ``tokenizers``, to the pair whose first piece is oldest, then to the one
    whose second piece is: single characters are the oldest, in code-point order, then merged
    pieces in the order they were made.
    """
    check_int("n_merges", n_merges, low=0)
    age = {c: i for i, c in enumerate(sorted({c for pieces in words for c in pieces}))}
    merges: list[tuple[str, str]] = []
    for _ in range(n_merges):
        pairs = count_pairs(words)
        if not pairs:
            break  # every word is one piece: nothing left to merge
        best = max(pairs, key=lambda p: (pairs[p], -age[p[0]], -age[p[1]]))
        merges.append(best)
        age.setdefault(best[0] + best[1], len(age))
        words = merge_pair(words, best)
    return merges


def unknown_rate(vocab: Any, sentences: Iterable[str]) -> float:
    """Fraction of the tokens of ``sentences`` that ``vocab`` (a word Vocab or a SubwordVocab) encodes as <unk>."""
    if isinstance(sentences, str):
        raise TypeError(f"sentences must be a list of strings, got the string {sentences!r:.60}: pass [{sentences!r:.60}].")
    ids = [i for s in sentences for i in vocab.encode(s, add_bos=False, add_eos=False)]
    if not ids:
        raise ValueError("unknown_rate needs at least one sentence with a token in it.")
    return sum(i == UNK_ID for i in ids) / len(ids)
