"""Training: the paper's optimiser, warm-up schedule and label-smoothed loss, and a seeded loop.

Axes: B batch, T target length, V target vocabulary size.

Run ``python -m tx.train --help`` to train the book's model on the built-in corpus and
write a checkpoint.
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from . import data
from .checks import check_float, check_int, check_same, check_tensor
from .config import TransformerConfig
from .model import Transformer

__all__ = [
    "TrainConfig", "rate", "warmup_schedule", "make_optimizer", "smoothed_targets",
    "loss_fn", "fit", "valid_loss", "check_lengths", "main",
]


@dataclass(frozen=True)
class TrainConfig:
    """How long and how fast to train; the defaults train the book's model in about a CPU-minute."""

    steps: int = 1200  # optimiser steps (batches); about 50 s on two CPU cores for the book model
    batch_size: int = 64  # sentence pairs per step
    warmup: int = 300  # steps of linear warm-up before the 1/sqrt(step) decay (paper: 4000)
    lr_factor: float = 1.0  # multiplies the paper's schedule; 1.0 is the paper's
    label_smoothing: float = 0.1  # epsilon of paper 5.4
    clip_norm: float = 1.0  # gradient-norm clip: guards the first steps of post-LN training
    eval_every: int = 200  # steps between validation losses
    seed: int = 0  # seeds dropout and the shuffling of batches

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "warmup", "eval_every"):
            check_int(name, getattr(self, name), low=1)
        check_float("lr_factor", self.lr_factor, 0, low_open=True)
        check_float("label_smoothing", self.label_smoothing, 0, 1, high_open=True)
        check_float("clip_norm", self.clip_norm, 0, low_open=True)
        check_int("seed", self.seed, low=-(2**63), high=2**63 - 1)  # what torch.manual_seed accepts


def rate(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """The paper's learning rate (section 5.3, eq. 3): d_model^-0.5 * min(step^-0.5, step * warmup^-1.5).

    It rises linearly for ``warmup`` steps and then decays as 1/sqrt(step). Steps count from 1.
    """
    check_int("d_model", d_model, low=1)
    check_int("warmup", warmup, low=1)
    step = max(step, 1)
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def make_optimizer(model: nn.Module) -> torch.optim.Adam:
    """Adam with the paper's beta1 = 0.9, beta2 = 0.98, eps = 1e-9; lr=1 so the schedule sets it."""
    return torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)


def warmup_schedule(
    optimizer: torch.optim.Optimizer, d_model: int, warmup: int, factor: float = 1.0
) -> torch.optim.lr_scheduler.LambdaLR:
    """A LambdaLR that sets the learning rate to :func:`rate` at every step."""
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: rate(s + 1, d_model, warmup, factor))


def smoothed_targets(target: Tensor, vocab_size: int, smoothing: float) -> Tensor:
    """Label-smoothed target distributions [N, V] for target ids [N] (paper 5.4).

    The true word gets 1 - smoothing, and smoothing is spread evenly over all V words
    (the true one included), as ``F.cross_entropy(..., label_smoothing=smoothing)`` does.
    """
    check_int("vocab_size", vocab_size, low=1)
    check_float("smoothing", smoothing, 0, 1, high_open=True)
    dist = torch.full((target.numel(), vocab_size), smoothing / vocab_size)
    dist.scatter_add_(1, target.view(-1, 1), torch.full((target.numel(), 1), 1.0 - smoothing))
    return dist  # [N, V]


def loss_fn(logits: Tensor, target: Tensor, pad_id: int = 0, smoothing: float = 0.0) -> Tensor:
    """Mean cross-entropy of logits [B, T, V] against ids [B, T], padding ignored, labels smoothed."""
    check_tensor("logits", logits, dims=3, floating=True)
    check_tensor("target", target, dims=2)
    check_same("the batch and length of logits and target", "logits.shape[:2]", tuple(logits.shape[:2]),
               "target.shape", tuple(target.shape), "Give one target id per predicted position.")
    V = logits.size(-1)
    return F.cross_entropy(
        logits.reshape(-1, V), target.reshape(-1), ignore_index=pad_id, label_smoothing=smoothing
    )


@torch.no_grad()
def valid_loss(
    model: Transformer, pairs: Sequence[tuple[str, str]], src_vocab: data.Vocab, tgt_vocab: data.Vocab,
    smoothing: float = 0.0, batch_size: int = 256,
) -> float:
    """Token-averaged loss over ``pairs`` in eval mode (no dropout)."""
    was_training = model.training
    model.eval()
    total, tokens = 0.0, 0
    dev = next(model.parameters()).device
    for batch in data.batches(pairs, src_vocab, tgt_vocab, batch_size):
        batch = batch.to(dev)
        logits = model(batch.src, batch.tgt_in)
        total += float(loss_fn(logits, batch.tgt_out, model.config.pad_id, smoothing)) * batch.n_tokens
        tokens += batch.n_tokens
    model.train(was_training)
    return total / tokens


def fit(
    model: Transformer,
    train_pairs: Sequence[tuple[str, str]],
    valid_pairs: Sequence[tuple[str, str]],
    src_vocab: data.Vocab,
    tgt_vocab: data.Vocab,
    config: TrainConfig = TrainConfig(),
    progress: bool = True,
    callback: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Train ``model`` in place with Adam, the warm-up schedule and label smoothing; return its history.

    The history is a dict of lists: ``step``, ``train_loss`` and ``lr`` for every step,
    ``valid_step`` and ``valid_loss`` every ``eval_every`` steps (and at the end), plus
    ``seconds`` and ``tokens`` (target tokens trained on). ``callback(history)`` runs after
    every validation, e.g. to redraw a live loss curve. The model stays on its device.
    """
    _check_fit(model, train_pairs, valid_pairs, src_vocab, tgt_vocab, config)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be a function of the history, or None, got {type(callback).__name__}.")
    torch.manual_seed(config.seed)
    dev = next(model.parameters()).device
    optimizer = make_optimizer(model)
    schedule = warmup_schedule(optimizer, model.config.d_model, config.warmup, config.lr_factor)
    history: dict[str, Any] = {"step": [], "train_loss": [], "lr": [], "valid_step": [], "valid_loss": []}
    bar = _progress_bar(config.steps, progress)
    start, tokens, step, epoch = time.perf_counter(), 0, 0, 0
    model.train()
    while step < config.steps:
        for batch in data.batches(train_pairs, src_vocab, tgt_vocab, config.batch_size, shuffle=True, seed=config.seed + epoch):
            batch = batch.to(dev)
            loss = loss_fn(model(batch.src, batch.tgt_in), batch.tgt_out, model.config.pad_id, config.label_smoothing)
            _check_finite(loss.item(), step + 1, config)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
            history["lr"].append(optimizer.param_groups[0]["lr"])
            optimizer.step()
            schedule.step()
            step, tokens, value = step + 1, tokens + batch.n_tokens, loss.item()
            history["step"].append(step)
            history["train_loss"].append(value)
            bar.update(1)
            bar.set_postfix(loss=f"{value:.3f}")
            if step % config.eval_every == 0 or step == config.steps:
                _validate(model, valid_pairs, src_vocab, tgt_vocab, config, step, history, callback)
            if step == config.steps:
                break
        epoch += 1
    bar.close()
    history["seconds"], history["tokens"] = time.perf_counter() - start, tokens
    model.eval()
    return history


def _check_fit(model, train_pairs, valid_pairs, src_vocab, tgt_vocab, config) -> None:
    """Everything fit needs, checked before the first step rather than discovered at step 900."""
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a tx.Transformer, got {type(model).__name__}.")
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a tx.train.TrainConfig, got {type(config).__name__}.")
    if not train_pairs:
        raise ValueError("fit needs training pairs, got none.")
    data.check_pairs(train_pairs, "train_pairs")
    if valid_pairs:
        data.check_pairs(valid_pairs, "valid_pairs")
    data.check_vocabs(model.config, src_vocab, tgt_vocab)
    for name, pairs in (("train_pairs", train_pairs), ("valid_pairs", valid_pairs)):
        check_lengths(pairs, model.config.max_len, name)


def check_lengths(pairs: Sequence[tuple[str, str]], max_len: int, name: str = "pairs") -> None:
    """Raise a clear error naming the pair if a source or target sentence needs more than ``max_len`` positions.

    A source takes its tokens + <eos>; a target, as decoder input, <bos> + its tokens.
    """
    for i, (src, tgt) in enumerate(pairs):
        for side, sentence in (("source", src), ("target", tgt)):
            n = len(data.tokenize(sentence)) + 1
            if n > max_len:
                raise ValueError(
                    f"{name}[{i}]: the {side} sentence needs {n} positions (its tokens and one special "
                    f"token), more than the model's max_len={max_len}: {sentence[:60]!r}. Shorten or drop it, "
                    "or build the model with a larger max_len."
                )


def _check_finite(loss: float, step: int, config: TrainConfig) -> None:
    """Stop at the first loss that is NaN or infinite: the steps after it would only spread NaN through the weights."""
    if not math.isfinite(loss):
        raise FloatingPointError(
            f"the training loss became {loss} at step {step}: the updates diverged. Lower lr_factor "
            f"(now {config.lr_factor}), lengthen warmup (now {config.warmup}) or lower clip_norm "
            f"(now {config.clip_norm}). The model holds the weights of step {step - 1}, which gave that loss: "
            "do not save them."
        )


def _validate(model, valid_pairs, src_vocab, tgt_vocab, config, step, history, callback) -> None:
    if valid_pairs:
        history["valid_step"].append(step)
        history["valid_loss"].append(valid_loss(model, valid_pairs, src_vocab, tgt_vocab, config.label_smoothing))
    if callback is not None:
        callback(history)


def _progress_bar(total: int, enabled: bool):
    """tqdm.auto picks a widget bar in Jupyter and a text bar in a terminal."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="training", unit="step", disable=not enabled, mininterval=0.5)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Train the book's model on the built-in corpus, report test-set figures, write a checkpoint.

    Every argument, the corpus and the output path are checked before the first step; a bad
    one stops the command with exit status 2 and a message that names it.
    """
    from . import checkpoint, evaluate

    parser = argparse.ArgumentParser(prog="python -m tx.train", description=main.__doc__)
    parser.add_argument("--out", type=Path, default=Path("runs/fr_en_small.safetensors"), help="checkpoint to write")
    parser.add_argument("--steps", type=int, default=TrainConfig.steps)
    parser.add_argument("--batch-size", type=int, default=TrainConfig.batch_size)
    parser.add_argument("--seed", type=int, default=0, help="seeds the corpus, the weights and the batches")
    parser.add_argument("--pairs", type=int, default=12000, help="sentence pairs in the built-in corpus")
    parser.add_argument("--tsv", type=Path, help="train on this tab-separated corpus instead (Tatoeba layout)")
    parser.add_argument("--norm-first", action="store_true", help="pre-LN instead of the paper's post-LN")
    parser.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    parser.add_argument("--threads", type=int, default=2,
                        help="CPU threads; sums split over threads round differently, and 2 wrote the book's checkpoint")
    args = parser.parse_args(argv)
    try:
        tcfg = _check_args(args)
        corpus = _load(args)
    except (ValueError, TypeError, OSError) as e:
        parser.error(str(e))
    torch.manual_seed(args.seed)
    cfg = TransformerConfig.small(len(corpus.src_vocab), len(corpus.tgt_vocab), norm_first=args.norm_first)
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)  # on CPU the same thread count gives the same weights, bit for bit
    model = Transformer.from_config(cfg).to(_device())
    try:
        history = fit(model, corpus.train, corpus.valid, corpus.src_vocab, corpus.tgt_vocab, tcfg)
    except FloatingPointError as e:
        raise SystemExit(f"python -m tx.train: error: {e} No checkpoint was written; {args.out} is unchanged.") from None
    scores = evaluate.evaluate(model, corpus.test, corpus.src_vocab, corpus.tgt_vocab)
    info = {"train": vars(tcfg) | {"pairs": args.pairs, "tsv": str(args.tsv) if args.tsv else None},
            "test": scores, "seconds": round(history["seconds"], 1), "final_valid_loss": history["valid_loss"][-1]}
    checkpoint.save(args.out, model, corpus.src_vocab, corpus.tgt_vocab, info=info)
    torch.set_num_threads(threads)  # the caller's count again
    print(f"trained {args.steps} steps in {history['seconds']:.0f} s; test exact match "
          f"{scores['exact_match']:.1%}, BLEU {scores['bleu']:.1f} on {scores['n']} sentences; wrote {args.out}")
    return info


def _check_args(args: argparse.Namespace) -> TrainConfig:
    """The command line's numbers and output path, checked before any corpus is read; returns the TrainConfig."""
    from .checkpoint import check_writable
    from .grammar import RUNNING_EXAMPLES

    for flag, value in (("--steps", args.steps), ("--batch-size", args.batch_size)):
        if value < 1:
            raise ValueError(f"{flag} must be at least 1, got {value}.")
    if args.tsv is None and args.pairs < len(RUNNING_EXAMPLES):
        raise ValueError(f"--pairs must be at least {len(RUNNING_EXAMPLES)} (the book's running examples), got {args.pairs}.")
    if args.tsv is not None and args.tsv.is_dir():
        raise IsADirectoryError(f"--tsv {args.tsv}: is a folder, not a corpus file.")
    if args.tsv is not None and not args.tsv.is_file():
        raise FileNotFoundError(f"--tsv {args.tsv}: no such file.")
    if args.out.exists() and not args.out.is_dir() and not args.force:
        raise FileExistsError(f"{args.out} exists; pass --force to overwrite it or choose another --out")
    check_writable(args.out)
    return TrainConfig(steps=args.steps, batch_size=args.batch_size, seed=args.seed)


def _load(args: argparse.Namespace) -> data.ParallelCorpus:
    """The corpus, checked: sentences that fit the model's positions, and pairs enough for every split."""
    max_len = TransformerConfig.small(4, 4).max_len
    if args.tsv is None:
        try:
            corpus = data.load_corpus(seed=args.seed, n_pairs=args.pairs)
        except ValueError as e:
            raise ValueError(f"--pairs {args.pairs}: {e}") from None
    else:
        pairs = data.load_parallel_tsv(args.tsv, max_tokens=max_len - 1)
        corpus = data.split_corpus(pairs, seed=args.seed)
    for split in ("train", "valid", "test"):
        if not getattr(corpus, split):
            n = sum(len(getattr(corpus, s)) for s in ("train", "valid", "test"))
            raise ValueError(
                f"the corpus of {n} pairs leaves the {split} split empty (5% of the distinct sources are held "
                "out for validation and 5% for testing); give more pairs, at least 11 with distinct source sentences."
            )
        check_lengths(getattr(corpus, split), max_len, split)
    return corpus


def _device() -> torch.device:
    from . import device

    return device()


if __name__ == "__main__":
    main()
