"""Measuring a translator: translate sentences, then exact match and corpus BLEU (sacrebleu)."""

from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from . import data
from .decoding import beam_search, greedy_decode

__all__ = ["translate", "exact_match", "bleu", "evaluate"]


def translate(
    model: nn.Module, sentences: Sequence[str], src_vocab: data.Vocab, tgt_vocab: data.Vocab,
    beam_size: int = 1, max_len: int | None = None, length_penalty: float = 0.0, batch_size: int = 128,
    penalty_form: str = "power",
) -> list[str]:
    """Translate sentences with greedy decoding (``beam_size=1``) or beam search; returns strings."""
    max_len = max_len or model.config.max_len - 1
    dev = next(model.parameters()).device
    out: list[str] = []
    for i in range(0, len(sentences), batch_size):
        chunk = sentences[i : i + batch_size]
        src = data.pad([src_vocab.encode(s, add_bos=False) for s in chunk], src_vocab.pad_id).to(dev)
        if beam_size == 1:
            rows = list(greedy_decode(model, src, max_len, tgt_vocab.bos_id, tgt_vocab.eos_id))
        else:
            found = beam_search(model, src, beam_size, max_len, tgt_vocab.bos_id, tgt_vocab.eos_id, length_penalty,
                                penalty_form=penalty_form)
            rows = [hyps[0][0] for hyps in found]
        out.extend(tgt_vocab.decode(r) for r in rows)
    return out


def exact_match(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Fraction of hypotheses identical to their reference (after stripping outer spaces)."""
    _same_length(hypotheses, references)
    return sum(h.strip() == r.strip() for h, r in zip(hypotheses, references)) / len(references)


def bleu(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Corpus BLEU (0-100) with sacrebleu's default 13a tokenisation, one reference per sentence."""
    import sacrebleu

    _same_length(hypotheses, references)
    return float(sacrebleu.corpus_bleu(list(hypotheses), [list(references)]).score)


def evaluate(
    model: nn.Module, pairs: Sequence[tuple[str, str]], src_vocab: data.Vocab, tgt_vocab: data.Vocab,
    beam_size: int = 1, length_penalty: float = 0.0, penalty_form: str = "power",
) -> dict[str, float]:
    """Translate the source side of ``pairs``; return ``{"exact_match", "bleu", "n"}``."""
    sources = [s for s, _ in pairs]
    references = [t for _, t in pairs]
    hyps = translate(model, sources, src_vocab, tgt_vocab, beam_size, length_penalty=length_penalty,
                     penalty_form=penalty_form)
    return {"exact_match": exact_match(hyps, references), "bleu": bleu(hyps, references), "n": len(pairs)}


def _same_length(hypotheses: Sequence[str], references: Sequence[str]) -> None:
    if len(hypotheses) != len(references) or not references:
        raise ValueError(
            f"need one hypothesis per reference and at least one pair, got {len(hypotheses)} "
            f"hypotheses and {len(references)} references."
        )
