"""Training a language model, and translation by a decoder alone: "french <sep> english" sequences.

Axes: B batch, T sequence length, V vocabulary size.

A language model's targets are its inputs shifted by one. For translation without an
encoder, each training sequence is ``<bos> french <sep> english <eos>`` and the loss counts
only the English tokens (and the final ``<eos>``): the French part is given, never
predicted. At test time the prompt is ``<bos> french <sep>`` and the model continues it.

``python -m tx.lm_train`` (:mod:`tx.cli.lm_train`) trains the decoder-only translator of chapter 13.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from .. import data
from ..checks import check_float, check_int
from ..config import LanguageModelConfig
from ..generation import generate, left_pad
from ..language_model import LanguageModel
from ..train import loss_fn, make_optimizer, warmup_schedule
from ..training_record import recorded

__all__ = ["SEP", "joint_vocab", "sentence_ids", "pair_ids", "batch", "perplexity",
           "fit_lm", "step_times", "translate", "translator_config"]

SEP = "<sep>"  # between the French prompt and the English answer


def joint_vocab(pairs: Sequence[tuple[str, str]]) -> data.Vocab:
    """One vocabulary for both languages (a decoder-only model reads and writes one stream), then ``<sep>``."""
    both = data.Vocab.build([fr for fr, _ in pairs] + [en for _, en in pairs])
    return data.Vocab([*both.itos, SEP])


def sentence_ids(vocab: data.Vocab, sentence: str) -> tuple[list[int], int]:
    """``<bos> sentence <eos>`` ids, and 1: every token after ``<bos>`` is a target."""
    return vocab.encode(sentence), 1


def pair_ids(
    vocab: data.Vocab, french: str, english: str | None = None
) -> tuple[list[int], int]:
    """``<bos> french <sep> english <eos>`` ids, and where the English starts
    (the first target).

    Without ``english``: the prompt ``<bos> french <sep>`` alone.
    """
    prompt = vocab.encode(french, add_eos=False) + [vocab.stoi[SEP]]
    answer = [] if english is None else vocab.encode(english, add_bos=False)
    return prompt + answer, len(prompt)


def batch(
    examples: Sequence[tuple[list[int], int]], pad_id: int = data.PAD_ID
) -> tuple[Tensor, Tensor]:
    """Inputs [B, T] and targets [B, T] (the next token, ``pad_id`` where not a
    target), padded on the right."""
    seqs = data.pad([ids for ids, _ in examples], pad_id)  # [B, T + 1]
    inputs, targets = seqs[:, :-1], seqs[:, 1:].clone()  # [B, T] each
    for row, (_, first) in zip(targets, examples):
        # targets before the first counted token are given, not predicted
        row[: first - 1] = pad_id
    return inputs, targets


@torch.no_grad()
def perplexity(model: LanguageModel, examples: Sequence[tuple[list[int], int]], batch_size: int = 256) -> float:
    """exp of the mean cross-entropy per target token (eval mode): the number of equally likely choices it amounts to."""
    model.eval()
    total, count = 0.0, 0
    for i in range(0, len(examples), batch_size):
        inputs, targets = batch(examples[i : i + batch_size], model.config.pad_id)
        n = int((targets != model.config.pad_id).sum())
        total += float(loss_fn(model(inputs), targets, model.config.pad_id)) * n
        count += n
    return math.exp(total / count)


def fit_lm(
    model: LanguageModel, examples: Sequence[tuple[list[int], int]], steps: int, batch_size: int = 64,
    warmup: int = 300, label_smoothing: float = 0.1, seed: int = 0, seconds: float | None = None,
) -> dict[str, Any]:
    """Train with tx.train's recipe (Adam, warm-up schedule, label smoothing, clipping); returns the history.

    Stops after ``steps`` optimiser steps, or once ``seconds`` of training are spent.
    History: ``train_loss`` per step, ``steps`` done and ``seconds`` taken.
    """
    check_int("steps", steps, low=1)
    check_int("batch_size", batch_size, low=1)
    if seconds is not None:
        check_float("seconds", seconds, 0, low_open=True)
    if not examples:
        raise ValueError("fit_lm needs training examples, got none.")
    torch.manual_seed(seed)
    optimizer = make_optimizer(model)
    schedule = warmup_schedule(optimizer, model.config.d_model, warmup)
    order = torch.randperm(len(examples), generator=torch.Generator().manual_seed(seed)).tolist()
    losses, began, model = [], time.perf_counter(), model.train()
    for step in range(steps):
        at = step * batch_size % len(order)
        inputs, targets = batch([examples[i] for i in order[at : at + batch_size]], model.config.pad_id)
        loss = loss_fn(model(inputs), targets, model.config.pad_id, label_smoothing)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if seconds is not None and time.perf_counter() - began >= seconds:
            break
    model.eval()
    return {"train_loss": losses, "steps": len(losses), "seconds": time.perf_counter() - began}


fit_lm = recorded(fit_lm)  # the book's tests replay a run they trained once (tx.training_record)


def translate(model: LanguageModel, vocab: data.Vocab, sentences: Sequence[str], batch_size: int = 128) -> list[str]:
    """Greedy translations: each French sentence prompted as ``<bos> french <sep>``, continued to ``<eos>``."""
    out = []
    for i in range(0, len(sentences), batch_size):
        prompts = [pair_ids(vocab, fr)[0] for fr in sentences[i : i + batch_size]]
        width = max(map(len, prompts))
        room = model.config.max_len - width
        rows = generate(model, left_pad(prompts, vocab.pad_id), room, temperature=0, eos_id=vocab.eos_id)
        out.extend(vocab.decode(row[width:]) for row in rows)
    return out


def translator_config(vocab_size: int) -> LanguageModelConfig:
    """The decoder-only translator: the book's width, five blocks so its size matches the 2+2-layer translator's."""
    return LanguageModelConfig.small(vocab_size, n_layers=5)


def step_times(lm: LanguageModel, examples: Sequence[tuple[list[int], int]], corpus: data.ParallelCorpus,
               rounds: int = 6, batch_size: int = 64) -> tuple[float, float]:
    """CPU seconds of one training step (forward and backward) of ``lm`` and of the book's encoder-decoder.

    The two are timed in turns on the same batches, so a machine shared with other work
    slows both alike; the ratio is what matters, not the seconds.
    """
    from ..config import TransformerConfig
    from ..model import Transformer

    book = Transformer.from_config(TransformerConfig.small(len(corpus.src_vocab), len(corpus.tgt_vocab))).train()
    pairs = corpus.train[:batch_size]
    inputs, targets = batch(examples[:batch_size], lm.config.pad_id)
    b = next(iter(data.batches(pairs, corpus.src_vocab, corpus.tgt_vocab, batch_size)))
    steps = {"lm": lambda: loss_fn(lm(inputs), targets), "book": lambda: loss_fn(book(b.src, b.tgt_in), b.tgt_out)}
    spent = {"lm": 0.0, "book": 0.0}
    lm.train()
    for r in range(rounds + 1):
        for name, step in steps.items():
            t0 = time.process_time()
            step().backward()
            if r:  # the first round warms up
                spent[name] += time.process_time() - t0
    lm.zero_grad(set_to_none=True)
    return spent["lm"] / rounds, spent["book"] / rounds
