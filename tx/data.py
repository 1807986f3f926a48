"""Words to ids and back, the book's French -> English corpus, and padded batches.

Axes: B batch, S source length (tokens + EOS), T target length (BOS + tokens + EOS),
V vocabulary size. Every id tensor is ``torch.long`` and padded on the right with PAD_ID = 0.

The built-in corpus comes from the small grammar in :mod:`tx.grammar`, so it needs no
download and is the same on every machine. ``load_parallel_tsv`` reads a real corpus (the
Tatoeba ``fra.txt`` layout) for readers who want one, and ``subword_vocabs`` learns its
BPE vocabularies (:mod:`tx.near_duplicates` finds its test sentences that nearly repeat a
training one). The tokenizer and the special ids live in :mod:`tx.tokens` and are
re-exported here.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from .checks import check_int
from .config import TransformerConfig
from .grammar import PHRASES, RUNNING_EXAMPLES, generate_pairs
from .subwords import SubwordVocab
from .tokens import (  # re-exported: tx.data is where the chapters meet them
    BOS, BOS_ID, EOS, EOS_ID, PAD, PAD_ID, SPECIALS, UNK, UNK_ID, Pair, as_id_list, detokenize, tokenize,
)

__all__ = [
    "PAD", "BOS", "EOS", "UNK", "SPECIALS", "PAD_ID", "BOS_ID", "EOS_ID", "UNK_ID",
    "tokenize", "detokenize", "Vocab", "vocab_from_dict", "check_vocabs", "check_pairs", "check_lengths",
    "ParallelCorpus", "load_corpus", "split_corpus",
    "load_parallel_tsv", "subword_vocabs", "copy_pairs",
    "Batch", "encode_pairs", "pad", "batches",
]

# ----------------------------------------------------------------------------- vocabulary


class Vocab:
    """Word-level vocabulary: token strings <-> ids, the four specials always at ids 0-3."""

    pad_id, bos_id, eos_id, unk_id = PAD_ID, BOS_ID, EOS_ID, UNK_ID
    # tokenize() lowercases, so a translation can only be compared with a reference lowercased too.
    comparison = "lowercased"
    unit = "words"  # what one id stands for, as error messages name it

    def __init__(self, itos: Sequence[str]) -> None:
        """Wrap a list of tokens (id -> token); it must start with PAD, BOS, EOS, UNK."""
        itos = list(itos)
        if tuple(itos[:4]) != SPECIALS:
            raise ValueError(
                f"a Vocab's first four tokens must be the specials {list(SPECIALS)} "
                f"(ids 0-3), got {itos[:4]}; build one with Vocab.build(sentences)"
            )
        if len(set(itos)) != len(itos):
            repeated = sorted(w for w, c in Counter(itos).items() if c > 1)
            raise ValueError(f"a Vocab lists each token once; repeated: {repeated[:10]}")
        self.itos: list[str] = itos
        self.stoi: dict[str, int] = {word: i for i, word in enumerate(itos)}

    @classmethod
    def build(cls, sentences: Iterable[str], min_freq: int = 1) -> Vocab:
        """Specials, then every word seen >= min_freq times, most frequent first, ties A-Z."""
        if isinstance(sentences, str):
            raise TypeError(f"sentences must be a list of strings, got the string {sentences!r:.60}: pass [{sentences!r:.60}].")
        if min_freq < 1:
            raise ValueError(f"min_freq must be >= 1, got {min_freq}")
        counts = Counter(token for sentence in sentences for token in tokenize(sentence))
        words = [w for w, c in counts.items() if c >= min_freq]
        words.sort(key=lambda w: (-counts[w], w))  # ties alphabetical: the same ids every run
        return cls([*SPECIALS, *words])

    def __len__(self) -> int:
        """Number of tokens, specials included (V)."""
        return len(self.itos)

    def __contains__(self, word: object) -> bool:
        """Whether ``word`` has an id of its own (otherwise it encodes as UNK)."""
        return word in self.stoi

    def __eq__(self, other: object) -> bool:
        """Two vocabularies are equal when they give every token the same id."""
        return isinstance(other, Vocab) and self.itos == other.itos

    __hash__ = None  # mutable lists inside: equal-by-value objects must not be dict keys

    def __repr__(self) -> str:
        """Size and the first few ordinary words."""
        return f"Vocab({len(self)} tokens: {self.itos[4:12]}...)"

    def encode(self, text: str, add_bos: bool = True, add_eos: bool = True) -> list[int]:
        """Text -> ids [T], unknown words -> UNK_ID, optionally framed by BOS ... EOS."""
        ids = [self.stoi.get(token, UNK_ID) for token in tokenize(text)]
        return [BOS_ID] * add_bos + ids + [EOS_ID] * add_eos

    def tokens(self, ids: Iterable[int] | Tensor) -> list[str]:
        """Ids [T] -> token strings, specials kept (for the tick labels of attention plots)."""
        out = []
        for i in as_id_list(ids):
            if not 0 <= i < len(self.itos):
                raise ValueError(f"id {i} is out of range for a vocabulary of {len(self)} tokens")
            out.append(self.itos[i])
        return out

    def decode(self, ids: Iterable[int] | Tensor, strip_specials: bool = True) -> str:
        """Ids [T] -> text, cut at the first EOS, without BOS/PAD (strip_specials=False: all)."""
        ids = as_id_list(ids)
        if strip_specials:
            # A decoder keeps emitting after EOS while the rest of its batch finishes.
            end = ids.index(EOS_ID) if EOS_ID in ids else len(ids)
            ids = [i for i in ids[:end] if i not in (BOS_ID, PAD_ID)]
        return detokenize(self.tokens(ids))

    def normalise(self, text: str) -> str:
        """``text`` as this vocabulary's decode would write it: lowercased, spaced by tokenize/detokenize.

        Evaluation passes references through this, so that a translation (which comes out
        lowercased) is compared with its reference on the same footing, never with a cased one.
        """
        return detokenize(tokenize(text))

    def to_dict(self) -> dict[str, list[str]]:
        """A JSON-safe form, to store in a checkpoint."""
        return {"itos": list(self.itos)}

    @classmethod
    def from_dict(cls, d: dict[str, list[str]]) -> Vocab:
        """Inverse of ``to_dict``."""
        return cls(d["itos"])


def vocab_from_dict(d: dict) -> Vocab:
    """A word :class:`Vocab` or a :class:`tx.subwords.SubwordVocab`, from the dict its ``to_dict`` wrote."""
    if not isinstance(d, dict):
        raise TypeError(f"a vocabulary is stored as a dict, got {type(d).__name__}.")
    if d.get("kind") == "bpe":
        return SubwordVocab.from_dict(d)
    return Vocab.from_dict(d)


def _is_vocab(vocab: object) -> bool:
    return isinstance(vocab, (Vocab, SubwordVocab))


def check_vocabs(config: object, src_vocab: Vocab | None, tgt_vocab: Vocab | None) -> None:
    """Raise a clear error unless the vocabularies fit a model's ``config`` (sizes and pad id).

    Swapped vocabularies, or ones from another corpus, would otherwise give wrong words silently.
    """
    for side, vocab in (("src", src_vocab), ("tgt", tgt_vocab)):
        if vocab is None:
            continue
        if not _is_vocab(vocab):
            raise TypeError(f"{side}_vocab must be a tx.data.Vocab (words) or a tx.subwords.SubwordVocab (subwords), got {type(vocab).__name__}.")
        size = getattr(config, f"{side}_vocab_size")
        if len(vocab) != size:
            swapped = src_vocab is not None and tgt_vocab is not None and (
                len(src_vocab), len(tgt_vocab)) == (config.tgt_vocab_size, config.src_vocab_size)
            raise ValueError(
                f"{side}_vocab has {len(vocab)} words but the model's {side}_vocab_size is {size}"
                + (": the source and target vocabularies look swapped. " if swapped else ". ")
                + "Pass the vocabularies the model was trained with (e.g. those tx.checkpoint.load returns)."
            )
        if vocab.pad_id != config.pad_id:
            raise ValueError(f"{side}_vocab pads with id {vocab.pad_id} but the model's pad_id is {config.pad_id}.")


def check_pairs(pairs: object, name: str = "pairs") -> None:
    """Raise a clear error unless ``pairs`` is a non-empty sequence of (source, target) strings."""
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Sequence):
        raise TypeError(f"{name} must be a list of (source, target) string pairs, got {type(pairs).__name__}.")
    if len(pairs) == 0:
        raise ValueError(f"{name} is empty; give at least one (source, target) pair.")
    for i, pair in enumerate(pairs):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
            raise TypeError(f"{name}[{i}] must be a (source, target) pair of strings, got {pair!r:.80}.")


def check_lengths(pairs: Sequence[tuple[str, str]], max_len: int, name: str = "pairs",
                  src_vocab: Any = None, tgt_vocab: Any = None) -> None:
    """Raise a clear error naming the pair if a source or target sentence needs more than ``max_len`` positions.

    A source takes its tokens + <eos>; a target, as decoder input, <bos> + its tokens. Tokens
    are words (``tx.data.tokenize``), or the pieces of the vocabularies when they are given.
    """
    for i, (src, tgt) in enumerate(pairs):
        for side, sentence, vocab in (("source", src, src_vocab), ("target", tgt, tgt_vocab)):
            n = 1 + (len(tokenize(sentence)) if vocab is None else len(vocab.encode(sentence, False, False)))
            if n > max_len:
                raise ValueError(
                    f"{name}[{i}]: the {side} sentence needs {n} positions (its tokens and one special "
                    f"token), more than the model's max_len={max_len}: {sentence[:60]!r}. Shorten or drop it, "
                    "or build the model with a larger max_len."
                )


# ----------------------------------------------------------------------------- corpora


@dataclass(frozen=True)
class ParallelCorpus:
    """Train/valid/test (French, English) pairs and the vocabularies of the train split."""

    train: list[Pair]  #: the pairs the model learns from
    valid: list[Pair]  #: pairs for the validation loss during training
    test: list[Pair]  #: held-out pairs, scored once at the end
    src_vocab: Vocab  #: French words of train only: a held-out word comes out as <unk>
    tgt_vocab: Vocab  #: English words of train only


def load_corpus(seed: int = 0, n_pairs: int = 12000, valid_fraction: float = 0.05,
                test_fraction: float = 0.05, phrase_repeats: int = 20) -> ParallelCorpus:
    """The grammar's corpus split three ways (disjoint sources; running examples in train).

    The set phrases ("merci" -> "thanks", "au revoir" -> "goodbye", ...) follow no rule the
    other sentences teach, so a model can only memorise them, and among ten thousand
    sentences each would be seen a handful of times in a minute of training. They are
    therefore never held out, and the train split repeats each ``phrase_repeats`` times.
    """
    if phrase_repeats < 1:
        raise ValueError(f"phrase_repeats must be at least 1, got {phrase_repeats}")
    pairs = generate_pairs(seed, n_pairs)
    phrases = dict(PHRASES)
    corpus = split_corpus(pairs, seed, valid_fraction, test_fraction,
                          keep_in_train={fr for fr, _ in RUNNING_EXAMPLES} | set(phrases))
    extra = [p for p in corpus.train if p[0] in phrases] * (phrase_repeats - 1)
    train = corpus.train + extra
    return ParallelCorpus(train, corpus.valid, corpus.test, Vocab.build(fr for fr, _ in train),
                          Vocab.build(en for _, en in train))


def split_corpus(pairs: Sequence[Pair], seed: int = 0, valid_fraction: float = 0.05,
                 test_fraction: float = 0.05, keep_in_train: Iterable[str] = ()) -> ParallelCorpus:
    """Split any parallel corpus into train/valid/test so that no source sentence is in two splits.

    Held-out sentences are drawn among distinct sources (a source with several translations
    goes whole into one split); sources in ``keep_in_train`` always stay in train.
    Vocabularies are built from the train split.
    """
    if not (0 <= valid_fraction and 0 <= test_fraction and valid_fraction + test_fraction < 1):
        raise ValueError("valid_fraction and test_fraction must be >= 0 and sum to less than 1, "
                         f"got {valid_fraction} and {test_fraction}")
    if not pairs:
        raise ValueError("split_corpus got no sentence pairs; give at least a few (source, target) pairs.")
    check_pairs(pairs)
    keep = set(keep_in_train)
    sources = sorted({fr for fr, _ in pairs} - keep)
    # A string seed gives a stream of its own, unrelated to tx.grammar.generate_pairs' stream.
    random.Random(f"split-{seed}").shuffle(sources)
    n_valid, n_test = round(valid_fraction * len(pairs)), round(test_fraction * len(pairs))
    if n_valid + n_test > len(sources):
        raise ValueError(f"{len(pairs)} pairs are too few to hold out {n_valid} + {n_test} source sentences")
    valid_src, test_src = set(sources[:n_valid]), set(sources[n_valid : n_valid + n_test])
    train = [p for p in pairs if p[0] not in valid_src and p[0] not in test_src]
    valid = [p for p in pairs if p[0] in valid_src]
    test = [p for p in pairs if p[0] in test_src]
    return ParallelCorpus(train, valid, test, Vocab.build(fr for fr, _ in train),
                          Vocab.build(en for _, en in train))


_NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four"}


def load_parallel_tsv(path: str | os.PathLike, src_column: int = 1, tgt_column: int = 0,
                      max_tokens: int | None = None) -> list[Pair]:
    """(source, target) pairs from a UTF-8 TSV laid out like Tatoeba's fra.txt (English, French).

    Lines end at newlines only (\\n or \\r\\n; other Unicode line breaks stay inside a
    sentence). Blank lines are skipped; a line with an empty side, a file that is not
    UTF-8 and, with ``max_tokens``, a sentence of more tokens than that are errors that
    give the line number.
    """
    check_int("src_column", src_column, low=0)
    check_int("tgt_column", tgt_column, low=0)
    need = max(src_column, tgt_column) + 1
    pairs = []
    for number, line in enumerate(_read_lines(path), start=1):
        if not line.strip():
            continue
        columns = line.split("\t")
        where = f"{os.fspath(path)}, line {number}"
        if len(columns) < need:
            raise ValueError(
                f"{where}: expected at least "
                f"{_NUMBER_WORDS.get(need, need)} tab-separated columns, found {len(columns)}; "
                "fix or delete the line, or check that the file uses tabs (not spaces) "
                "between the sentences")
        pair = (columns[src_column].strip(), columns[tgt_column].strip())
        _check_tsv_pair(pair, where, max_tokens)
        pairs.append(pair)
    if not pairs:
        raise ValueError(f"{os.fspath(path)} holds no sentence pairs; give a file of source<TAB>target lines.")
    return pairs


def _read_lines(path: str | os.PathLike) -> list[str]:
    """The file's lines, decoded as UTF-8; a clear error with the line number where it is not."""
    try:
        raw = open(path, "rb").read()
    except FileNotFoundError:
        raise FileNotFoundError(f"no parallel corpus at {os.fspath(path)!r}") from None
    except IsADirectoryError:
        raise IsADirectoryError(f"{os.fspath(path)!r} is a folder; give the corpus file inside it.") from None
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ValueError(f"{os.fspath(path)} is UTF-16 (it starts with a UTF-16 byte-order mark); save it as UTF-8.")
    try:
        text = raw.decode("utf-8-sig")  # -sig: files saved by some editors start with a byte-order mark
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise ValueError(
            f"{os.fspath(path)}, line {line}: byte 0x{raw[e.start]:02x} is not UTF-8 (a Latin-1 or "
            "Windows-1252 file?). Convert the file to UTF-8, e.g. `iconv -f latin1 -t utf-8 IN > OUT`."
        ) from None
    return [line.removesuffix("\r") for line in text.split("\n")]


def _check_tsv_pair(pair: Pair, where: str, max_tokens: int | None) -> None:
    for side, sentence in zip(("source", "target"), pair):
        if not sentence:
            raise ValueError(f"{where}: the {side} sentence is empty; fill it in or delete the line.")
        if max_tokens is not None and len(tokenize(sentence)) > max_tokens:
            raise ValueError(
                f"{where}: the {side} sentence has {len(tokenize(sentence))} tokens, more than the "
                f"{max_tokens} the model's positions allow; shorten or split it, or delete the line."
            )


def subword_vocabs(corpus: ParallelCorpus, vocab_size: int = 4000,
                   shared: bool = False) -> tuple[SubwordVocab, SubwordVocab]:
    """Cased BPE vocabularies (French, English) learned from ``corpus.train`` alone, every split checked to fit.

    With ``shared``, one vocabulary of ``vocab_size`` pieces learned from both languages and
    returned twice, with byte fallback (no input is <unk>): the paper's design (section 3.4),
    which lets the model tie its embeddings and copy a name or a number piece by piece.
    What ``python -m tx.train --tsv`` trains with; ``bench/real_corpus.py`` uses it too.
    """
    if shared:
        src_vocab = tgt_vocab = SubwordVocab.train([s for pair in corpus.train for s in pair], vocab_size,
                                                   byte_fallback=True)
    else:
        src_vocab = SubwordVocab.train([fr for fr, _ in corpus.train], vocab_size)
        tgt_vocab = SubwordVocab.train([en for _, en in corpus.train], vocab_size)
    for split in ("train", "valid", "test"):  # in pieces now: a long word may need many
        check_lengths(getattr(corpus, split), TransformerConfig.real(4, 4).max_len, split, src_vocab, tgt_vocab)
    return src_vocab, tgt_vocab


def copy_pairs(n: int, vocab_words: int = 20, min_len: int = 3, max_len: int = 8,
               seed: int = 0) -> list[Pair]:
    """The copy task: ``n`` random sentences of the words ``w0``, ``w1``, ... (``vocab_words`` of them), target = source."""
    if n < 0 or vocab_words < 1 or not 1 <= min_len <= max_len:
        raise ValueError(f"need n >= 0, vocab_words >= 1 and 1 <= min_len <= max_len, got "
                         f"n={n}, vocab_words={vocab_words}, min_len={min_len}, max_len={max_len}")
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        sentence = " ".join(f"w{rng.randrange(vocab_words)}"
                            for _ in range(rng.randint(min_len, max_len)))
        pairs.append((sentence, sentence))
    return pairs


# ----------------------------------------------------------------------------- batches


@dataclass
class Batch:
    """Padded ids: src [B, S] = tokens + EOS, tgt [B, T] = BOS + tokens + EOS, PAD on the right."""

    src: Tensor  #: [B, S] source ids: tokens, EOS, then PAD
    tgt: Tensor  #: [B, T] target ids: BOS, tokens, EOS, then PAD

    @property
    def tgt_in(self) -> Tensor:
        """Decoder input [B, T-1]: the target without its last position (teacher forcing)."""
        return self.tgt[:, :-1]

    @property
    def tgt_out(self) -> Tensor:
        """What the decoder must predict [B, T-1]: the target shifted left by one."""
        return self.tgt[:, 1:]

    @property
    def n_tokens(self) -> int:
        """Number of real (non-PAD) tokens in ``tgt_out``: the loss is averaged over these."""
        return int((self.tgt_out != PAD_ID).sum())

    def to(self, device: torch.device | str) -> Batch:
        """The same batch on ``device``."""
        return Batch(self.src.to(device), self.tgt.to(device))


def encode_pairs(pairs: Iterable[Pair], src_vocab: Vocab,
                 tgt_vocab: Vocab) -> list[tuple[list[int], list[int]]]:
    """Strings -> ids: source = tokens + EOS (no BOS), target = BOS + tokens + EOS."""
    # The source is only read, never generated, so it needs no start symbol.
    return [(src_vocab.encode(src, add_bos=False), tgt_vocab.encode(tgt)) for src, tgt in pairs]


def pad(seqs: Sequence[Sequence[int]], pad_id: int = PAD_ID) -> Tensor:
    """Stack id lists of different lengths into a LongTensor [B, L], pad_id on the right."""
    if len(seqs) == 0:
        raise ValueError("pad() needs at least one sequence")
    out = torch.full((len(seqs), max(map(len, seqs))), pad_id, dtype=torch.long)
    for row, seq in zip(out, seqs):
        row[: len(seq)] = torch.as_tensor(seq, dtype=torch.long)
    return out


def batches(pairs: Iterable[Pair], src_vocab: Vocab, tgt_vocab: Vocab, batch_size: int,
            shuffle: bool = False, seed: int = 0, drop_last: bool = False, bucket: int = 0) -> Iterator[Batch]:
    """Padded batches of ``batch_size`` pairs, in order or in a seeded shuffled order.

    ``bucket=N`` (with ``shuffle``) sorts each run of N batches' worth of shuffled pairs by
    length before cutting it into batches, and shuffles those batches: sentences of like
    length share a batch, so a real corpus of mixed lengths wastes little on padding.
    """
    pairs = list(pairs)
    # Checked here, not inside the generator, so a bad call fails where it is made.
    if not pairs:
        raise ValueError("batches() got no sentence pairs; pass a non-empty list of "
                         "(source, target) strings")
    check_pairs(pairs)
    check_int("batch_size", batch_size, low=1)
    check_int("bucket", bucket, low=0)
    return _iter_batches(encode_pairs(pairs, src_vocab, tgt_vocab), batch_size, shuffle, seed,
                         drop_last, bucket)


def _iter_batches(encoded: list[tuple[list[int], list[int]]], batch_size: int, shuffle: bool,
                  seed: int, drop_last: bool, bucket: int = 0) -> Iterator[Batch]:
    """The generator behind ``batches``."""
    order = list(range(len(encoded)))
    starts = list(range(0, len(order), batch_size))
    if shuffle:
        gen = torch.Generator().manual_seed(seed)
        order = torch.randperm(len(order), generator=gen).tolist()
        if bucket:
            size = bucket * batch_size
            length = lambda i: max(len(encoded[i][0]), len(encoded[i][1]))  # noqa: E731
            order = [i for a in range(0, len(order), size) for i in sorted(order[a : a + size], key=length)]
            starts = [starts[k] for k in torch.randperm(len(starts), generator=gen).tolist()]
    for start in starts:
        chunk = [encoded[i] for i in order[start : start + batch_size]]
        if drop_last and len(chunk) < batch_size:
            return
        yield Batch(pad([s for s, _ in chunk]), pad([t for _, t in chunk]))
