"""Measuring a translator: translate sentences, then exact match and corpus BLEU (sacrebleu)."""

from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from . import data
from .checks import check_finite_weights, check_int, guarded
from .decoding import beam_search, greedy_decode, output_limit

__all__ = ["translate", "exact_match", "bleu", "evaluate"]


def translate(
    model: nn.Module, sentences: Sequence[str], src_vocab: data.Vocab, tgt_vocab: data.Vocab,
    beam_size: int = 1, max_len: int | None = None, length_penalty: float = 0.0, batch_size: int = 128,
    penalty_form: str = "power", length_margin: int | None = None,
) -> list[str]:
    """Translate sentences with greedy decoding (``beam_size=1``) or beam search; returns strings.

    ``sentences`` is a list of strings (one string alone is an error, not a list of letters);
    ``max_len`` caps the generated tokens, by default the model's max_len - 1. With
    ``length_margin``, each sentence writes at most its source's length + ``length_margin``
    tokens as well (:func:`tx.decoding.output_limit`, the paper's "input length + 50").
    """
    _check_sentences(sentences)
    data.check_vocabs(model.config, src_vocab, tgt_vocab)
    check_int("beam_size", beam_size, low=1)
    check_int("batch_size", batch_size, low=1)
    check_finite_weights(model, "the model")  # once a call, not a step: NaN weights translate into nonsense
    max_len = model.config.max_len - 1 if max_len is None else max_len
    encoded = [src_vocab.encode(s, add_bos=False) for s in sentences]
    _check_source_lengths(encoded, model.config.max_len, getattr(src_vocab, "unit", "tokens"))
    limits = [output_limit(len(ids), max_len, length_margin) for ids in encoded]
    dev = next(model.parameters()).device
    out: list[str] = [""] * len(sentences)
    for limit in sorted(set(limits)):  # one group per limit: a batch decodes to one length
        group = [i for i, n in enumerate(limits) if n == limit]
        for start in range(0, len(group), batch_size):
            rows = group[start : start + batch_size]
            src = data.pad([encoded[i] for i in rows], src_vocab.pad_id).to(dev)
            for i, tokens in zip(rows, _decode(model, src, tgt_vocab, beam_size, limit, length_penalty, penalty_form)):
                out[i] = tgt_vocab.decode(tokens)
    return out


def _decode(model: nn.Module, src: torch.Tensor, tgt_vocab: data.Vocab, beam_size: int, max_len: int,
            length_penalty: float, penalty_form: str) -> list[torch.Tensor]:
    """src [B, S] -> the best token row of each sentence, greedy or by beam search."""
    if beam_size == 1:
        return list(greedy_decode(model, src, max_len, tgt_vocab.bos_id, tgt_vocab.eos_id))
    found = beam_search(model, src, beam_size, max_len, tgt_vocab.bos_id, tgt_vocab.eos_id, length_penalty,
                        penalty_form=penalty_form)
    return [hyps[0][0] for hyps in found]


def exact_match(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Fraction of hypotheses identical to their reference (after stripping outer spaces)."""
    _same_length(hypotheses, references)
    return sum(h.strip() == r.strip() for h, r in zip(hypotheses, references)) / len(references)


def bleu(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Corpus BLEU (0-100) with sacrebleu's default 13a tokenisation, one reference per sentence."""
    import sacrebleu

    _same_length(hypotheses, references)
    return float(sacrebleu.corpus_bleu(list(hypotheses), [list(references)]).score)


def _check_evaluate(
    model: nn.Module, pairs: Sequence[tuple[str, str]], src_vocab: data.Vocab, tgt_vocab: data.Vocab,
    beam_size: int = 1, length_penalty: float = 0.0, penalty_form: str = "power",
) -> None:
    data.check_pairs(pairs)
    data.check_vocabs(model.config, src_vocab, tgt_vocab)


@guarded(_check_evaluate)
def evaluate(
    model: nn.Module,
    pairs: Sequence[tuple[str, str]],
    src_vocab: data.Vocab,
    tgt_vocab: data.Vocab,
    beam_size: int = 1,
    length_penalty: float = 0.0,
    penalty_form: str = "power",
) -> dict[str, float]:
    """Translate the source side of ``pairs``; return ``{"exact_match", "bleu",
    "n"}``.

    Each reference is first written the way ``tgt_vocab`` writes its output
    (``tgt_vocab.normalise``), so both sides are compared on the same footing:
    lowercased for a word :class:`~tx.data.Vocab`, whose tokenizer lowercases,
    and cased for a :class:`~tx.subwords.SubwordVocab`.
    ``tgt_vocab.comparison`` names which; report it beside the figures.
    """
    sources = [s for s, _ in pairs]
    references = [tgt_vocab.normalise(t) for _, t in pairs]
    hyps = translate(
        model,
        sources,
        src_vocab,
        tgt_vocab,
        beam_size,
        length_penalty=length_penalty,
        penalty_form=penalty_form,
    )
    return {
        "exact_match": exact_match(hyps, references),
        "bleu": bleu(hyps, references),
        "n": len(pairs),
    }


def _same_length(hypotheses: Sequence[str], references: Sequence[str]) -> None:
    if len(hypotheses) != len(references) or not references:
        raise ValueError(
            f"need one hypothesis per reference and at least one pair, got {len(hypotheses)} "
            f"hypotheses and {len(references)} references."
        )


def _check_sentences(sentences: Sequence[str]) -> None:
    if isinstance(sentences, str):
        raise TypeError(
            f"sentences must be a list of strings, got the string {sentences!r:.60}; "
            f"to translate one sentence, pass [{sentences!r:.60}]."
        )
    if not isinstance(sentences, Sequence) or not all(isinstance(s, str) for s in sentences):
        raise TypeError(f"sentences must be a list of strings, got {sentences!r:.80}.")


def _check_source_lengths(encoded: list[list[int]], max_len: int, unit: str = "words") -> None:
    """``unit`` names what the ids are: "words" for a word Vocab, "pieces" for a SubwordVocab."""
    for i, ids in enumerate(encoded):
        if len(ids) > max_len:
            raise ValueError(
                f"sentence {i} has {len(ids) - 1} {unit}, and with <eos> {len(ids)} tokens, more than the "
                f"model's max_len of {max_len} positions; shorten or split it."
            )
