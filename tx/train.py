"""Training: the paper's optimiser, warm-up schedule and label-smoothed loss, and a seeded loop.

Axes: B batch, T target length, V target vocabulary size.

Run ``python -m tx.train --help`` to train the book's model on the built-in corpus and
write a checkpoint.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from . import data, scale
from .checks import check_float, check_int, check_same, check_tensor
from .config import TransformerConfig
from .model import Transformer

__all__ = [
    "TrainConfig", "rate", "warmup_schedule", "make_optimizer", "smoothed_targets",
    "loss_fn", "batch_loss", "fit", "valid_loss", "check_lengths", "main",
    "TrainState", "save_state", "load_state", "state_path", "subword_vocabs",
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
    minutes: float | None = None  # a time budget: stop after this many minutes of training even before `steps`
    save_every: int = 500  # steps between the calls of fit's `save` (a checkpoint to resume from)
    bucket: int = 0  # > 0: batches of like-length sentences, sorted within runs of this many batches (less padding)
    precision: str = "fp32"  # "bf16" or "fp16" (CUDA only): matrix multiplies under torch.autocast; weights stay fp32

    def __post_init__(self) -> None:
        if self.precision not in scale.PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(scale.PRECISIONS)}, got {self.precision!r}.")
        check_int("bucket", self.bucket, low=0)
        for name in ("steps", "batch_size", "warmup", "eval_every", "save_every"):
            check_int(name, getattr(self, name), low=1)
        if self.minutes is not None:
            check_float("minutes", self.minutes, 0, low_open=True)
        check_float("lr_factor", self.lr_factor, 0, low_open=True)
        check_float("label_smoothing", self.label_smoothing, 0, 1, high_open=True)
        check_float("clip_norm", self.clip_norm, 0, low_open=True)
        check_int("seed", self.seed, low=-(2**63), high=2**63 - 1)  # what torch.manual_seed accepts

    @classmethod
    def real(cls, **overrides: Any) -> "TrainConfig":
        """The preset for a real corpus (``python -m tx.train --tsv``): bounded by time, checkpointed as it goes."""
        preset = dict(steps=100_000, batch_size=96, warmup=1000, lr_factor=1.0, eval_every=1000,
                      save_every=500, minutes=10.0, bucket=50)
        return cls(**{**preset, **overrides})


@dataclass
class TrainState:
    """Where a run stands, to resume it: steps done, the optimiser's and the schedule's states, time spent."""

    step: int = 0
    seconds: float = 0.0  # training time of every run so far (a time budget counts them all)
    tokens: int = 0
    optimizer: dict[str, Any] = field(default_factory=dict)  # Adam's state_dict()
    schedule: dict[str, Any] = field(default_factory=dict)  # the LambdaLR's state_dict()


def state_path(checkpoint_path: str | os.PathLike) -> Path:
    """Where ``python -m tx.train`` keeps a run's :class:`TrainState`: beside the checkpoint, NAME.state.safetensors."""
    path = Path(checkpoint_path)
    return path.with_name(path.name.removesuffix(".safetensors") + ".state.safetensors")


def save_state(path: str | os.PathLike, state: TrainState) -> Path:
    """Write a :class:`TrainState` as safetensors (Adam's moments as tensors, the rest as JSON); never pickle."""
    from safetensors.torch import save_file

    path = Path(path)
    tensors = {f"{i}.{key}": value.detach().cpu().contiguous()
               for i, entries in state.optimizer.get("state", {}).items() for key, value in entries.items()}
    meta = {"format": "tx-train-state", "step": str(state.step), "seconds": repr(float(state.seconds)),
            "tokens": str(state.tokens), "param_groups": json.dumps(state.optimizer.get("param_groups", [])),
            "schedule": json.dumps(state.schedule)}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        save_file(tensors, str(tmp), metadata=meta)
        os.replace(tmp, path)  # a run killed while saving leaves the previous state whole
    finally:
        tmp.unlink(missing_ok=True)
    return path


def load_state(path: str | os.PathLike) -> TrainState:
    """Read what :func:`save_state` wrote; a clear error if the file is missing or not a training state."""
    from safetensors import safe_open

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no training state at {path}, so the run cannot be resumed; train without --resume.")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            tensors = {key: f.get_tensor(key) for key in f.keys()}
        if meta.get("format") != "tx-train-state":
            raise ValueError("not a tx training state")
        optimizer: dict[str, Any] = {"state": {}, "param_groups": json.loads(meta["param_groups"])}
        for name, value in tensors.items():
            i, key = name.split(".", 1)
            optimizer["state"].setdefault(int(i), {})[key] = value
        return TrainState(int(meta["step"]), float(meta["seconds"]), int(meta["tokens"]), optimizer,
                          json.loads(meta["schedule"]))
    except Exception as e:  # safetensors raises its own error types for a damaged file
        raise ValueError(f"{path} is not a readable tx training state ({e}); train again without --resume.") from None


def rate(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """The paper's learning rate (section 5.3, eq. 3): d_model^-0.5 *
    min(step^-0.5, step * warmup^-1.5).

    It rises linearly for ``warmup`` steps and then decays as 1/sqrt(step).
    Steps count from 1.
    """
    check_int("d_model", d_model, low=1)
    check_int("warmup", warmup, low=1)
    step = max(step, 1)
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def make_optimizer(model: nn.Module) -> torch.optim.Adam:
    """Adam with the paper's beta1 = 0.9, beta2 = 0.98, eps = 1e-9; lr=1 so the
    schedule sets it."""
    return torch.optim.Adam(
        model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9
    )


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


def loss_fn(logits: Tensor, target: Tensor, pad_id: int = 0, smoothing: float = 0.0, reduction: str = "mean") -> Tensor:
    """Mean (or, with ``reduction="sum"``, summed) cross-entropy of logits [B, T, V] against ids [B, T],
    padding ignored, labels smoothed."""
    check_tensor("logits", logits, dims=3, floating=True)
    check_tensor("target", target, dims=2)
    check_same("the batch and length of logits and target", "logits.shape[:2]", tuple(logits.shape[:2]),
               "target.shape", tuple(target.shape), "Give one target id per predicted position.")
    V = logits.size(-1)
    return F.cross_entropy(
        logits.reshape(-1, V), target.reshape(-1), ignore_index=pad_id, label_smoothing=smoothing, reduction=reduction
    )


def batch_loss(
    model: nn.Module,
    batch: data.Batch,
    pad_id: int,
    smoothing: float = 0.0,
    precision: str = "fp32",
) -> Tensor:
    """This process's share of the loss of a global batch: the batch's mean
    loss when it runs alone.

    Under W processes it takes its rows of the batch (``tx.scale.shard``) and
    returns the sum of their token losses / the global batch's target tokens *
    W. DDP averages the W gradients, so their mean is the gradient of the
    global batch's mean over tokens, as one process would compute it; averaging
    per-process means would weigh a token of a short shard more. The forward
    pass runs under autocast in ``precision``; the loss is computed in fp32.
    """
    world = scale.world()
    dev = batch.src.device
    mine = (
        batch
        if world.size == 1
        else scale.shard(batch, world.rank, world.size)
    )
    with scale.autocast(precision, dev):
        logits = model(mine.src, mine.tgt_in)  # [Bp, T, V]
    if world.size == 1:
        return loss_fn(logits.float(), mine.tgt_out, pad_id, smoothing)
    summed = loss_fn(
        logits.float(), mine.tgt_out, pad_id, smoothing, reduction="sum"
    )
    return summed * (world.size / batch.n_tokens)


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
    resume: TrainState | None = None,
    save: Callable[[TrainState], None] | None = None,
) -> dict[str, Any]:
    """Train ``model`` in place with Adam, the warm-up schedule and label
    smoothing; return its history.

    The history is a dict of lists: ``step``, ``train_loss`` and ``lr`` for
    every step, ``valid_step`` and ``valid_loss`` every ``eval_every`` steps
    (and at the end), plus ``seconds`` and ``tokens`` (target tokens trained
    on). ``callback(history)`` runs after every validation, e.g. to redraw a
    live loss curve. The model stays on its device.

    ``config.minutes`` ends training early when the time budget is spent.
    ``save(state)`` runs every ``config.save_every`` steps and at the end with
    a :class:`TrainState`; ``resume=state`` continues from it (the model must
    hold the weights saved with it): the step count, the optimiser, the
    schedule and the place in the shuffled batches go on where they were, and
    the budget counts the time already spent.

    ``config.precision`` runs the forward pass under autocast (``tx.scale``).
    In a process group of W processes (``torchrun``), each trains on its shard
    of every batch of ``config.batch_size`` through DistributedDataParallel,
    and rank 0 alone validates and calls ``callback`` and ``save``.
    """
    _check_fit(model, train_pairs, valid_pairs, src_vocab, tgt_vocab, config)
    if callback is not None and not callable(callback):
        raise TypeError(
            f"callback must be a function of the history, or None, got "
            f"{type(callback).__name__}."
        )
    start = resume if resume is not None else TrainState()
    world, dev = scale.world(), next(model.parameters()).device
    _check_parallel(config, world, dev, len(train_pairs))
    # each process its own dropout masks
    torch.manual_seed(config.seed + start.step + 7919 * world.rank)
    # DDP under torchrun; fp16's scaler
    net, scaler = scale.wrap(model), scale.grad_scaler(config.precision, dev)
    optimizer = make_optimizer(model)
    schedule = warmup_schedule(
        optimizer, model.config.d_model, config.warmup, config.lr_factor
    )
    if resume is not None:
        optimizer.load_state_dict(resume.optimizer)
        schedule.load_state_dict(resume.schedule)
    history: dict[str, Any] = {
        "step": [],
        "train_loss": [],
        "lr": [],
        "valid_step": [],
        "valid_loss": [],
    }
    bar = _progress_bar(
        config.steps, progress and world.rank == 0, start.step, config.minutes
    )
    began, tokens, step = time.perf_counter(), start.tokens, start.step
    # an epoch's last batch; skipped if some process would get no row
    short = len(train_pairs) % config.batch_size
    per_epoch = math.ceil(len(train_pairs) / config.batch_size) - (
        0 < short < world.size
    )
    # a resumed run takes up the shuffled order where it stopped
    epoch, skip = divmod(step, per_epoch)
    spent = lambda: start.seconds + time.perf_counter() - began  # noqa: E731
    state = lambda: TrainState(  # noqa: E731
        step, spent(), tokens, optimizer.state_dict(), schedule.state_dict()
    )
    net.train()
    last = False
    while step < config.steps:
        stream = data.batches(
            train_pairs,
            src_vocab,
            tgt_vocab,
            config.batch_size,
            shuffle=True,
            seed=config.seed + epoch,
            bucket=config.bucket,
        )
        for batch in itertools.islice(
            scale.usable_batches(stream, world.size), skip, None
        ):
            batch = batch.to(dev)
            loss = batch_loss(
                net,
                batch,
                model.config.pad_id,
                config.label_smoothing,
                config.precision,
            )
            # Every process learns the global loss and whether any is out of
            # time, so all stop together.
            value, out_of_time = scale.agree(
                loss,
                config.minutes is not None and spent() >= 60 * config.minutes,
            )
            _check_finite(value, step + 1, config)
            optimizer.zero_grad(set_to_none=True)
            # under DDP, backward also averages the gradients of all processes
            scaler.scale(loss).backward()
            # clip the true gradients, not fp16's scaled ones
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
            history["lr"].append(optimizer.param_groups[0]["lr"])
            scaler.step(optimizer)
            scaler.update()
            schedule.step()
            step, tokens = step + 1, tokens + batch.n_tokens
            history["step"].append(step)
            history["train_loss"].append(value)
            bar.update(1)
            bar.set_postfix(loss=f"{value:.3f}")
            last = step == config.steps or out_of_time
            # rank 0 alone evaluates and saves
            if world.rank == 0 and (step % config.eval_every == 0 or last):
                _validate(
                    model,
                    valid_pairs,
                    src_vocab,
                    tgt_vocab,
                    config,
                    step,
                    history,
                    callback,
                )
            if (
                world.rank == 0
                and save is not None
                and (step % config.save_every == 0 or last)
            ):
                save(state())
            if last:
                break
        if last:
            break
        epoch, skip = epoch + 1, 0
    bar.close()
    history["seconds"], history["tokens"] = spent(), tokens
    model.eval()
    return history


def _check_parallel(config: TrainConfig, world: scale.World, dev: torch.device, n_pairs: int) -> None:
    """The precision runs on this device, and a global batch splits evenly over the processes."""
    scale.check_precision(config.precision, dev)
    if n_pairs < world.size:
        raise ValueError(f"{n_pairs} training pairs cannot give each of {world.size} processes a sentence; "
                         "give more pairs or fewer processes.")
    if config.batch_size % world.size:
        raise ValueError(f"batch_size {config.batch_size} (the global batch) does not split evenly over "
                         f"{world.size} processes; give a multiple of {world.size}.")


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
        check_lengths(pairs, model.config.max_len, name, src_vocab, tgt_vocab)


def check_lengths(pairs: Sequence[tuple[str, str]], max_len: int, name: str = "pairs",
                  src_vocab: Any = None, tgt_vocab: Any = None) -> None:
    """Raise a clear error naming the pair if a source or target sentence needs more than ``max_len`` positions.

    A source takes its tokens + <eos>; a target, as decoder input, <bos> + its tokens. Tokens
    are words (``tx.data.tokenize``), or the pieces of the vocabularies when they are given.
    """
    for i, (src, tgt) in enumerate(pairs):
        for side, sentence, vocab in (("source", src, src_vocab), ("target", tgt, tgt_vocab)):
            n = 1 + (len(data.tokenize(sentence)) if vocab is None else len(vocab.encode(sentence, False, False)))
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


def _progress_bar(total: int, enabled: bool, initial: int = 0, minutes: float | None = None):
    """One bar that redraws itself: a widget in Jupyter, one line in a terminal; a few lines in a log file.

    A text bar written to a file (``python -m tx.train ... 2> log``) would leave one line
    per redraw, thousands in all; there a line every tenth of the run (of its steps, or of
    its time budget) is printed instead.
    """
    if not enabled or "ipykernel" in sys.modules or sys.stderr.isatty():
        from tqdm.auto import tqdm

        return tqdm(total=total, initial=initial, desc="training", unit="step", disable=not enabled, mininterval=0.5)
    return _LogProgress(total, initial, minutes)


class _LogProgress:
    """The part of tqdm's interface fit uses, printing a plain line every tenth of the run."""

    def __init__(self, total: int, initial: int = 0, minutes: float | None = None, lines: int = 10) -> None:
        self.total, self.n, self.every = total, initial, max(1, total // lines)
        self.seconds = math.inf if minutes is None else 60 * minutes / lines
        self.postfix, self.began, self.start, self.last = "", time.perf_counter(), initial, time.perf_counter()

    def update(self, n: int = 1) -> None:
        self.n += n
        if self.n % self.every == 0 or time.perf_counter() - self.last >= self.seconds:
            self._print()

    def set_postfix(self, **values: Any) -> None:
        self.postfix = ", ".join(f"{k}={v}" for k, v in values.items())

    def close(self) -> None:
        if self.n % self.every:
            self._print()

    def _print(self) -> None:
        took = time.perf_counter() - self.began
        rate = (self.n - self.start) / took if took > 0 else 0.0
        self.last = time.perf_counter()
        print(f"training: step {self.n}/{self.total}, {took:.0f} s, {rate:.1f} steps/s, {self.postfix}",
              file=sys.stderr, flush=True)



@contextlib.contextmanager
def cpu_threads(n: int) -> Iterator[None]:
    """Run the block on ``n`` CPU threads, then give back the caller's count, also after an error
    (a process left on more threads than it planned for stalls beside other busy processes)."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Train the book's model on the built-in corpus (or, with --tsv, a cased subword model of a real corpus,
    within a time budget), report test-set figures, write a checkpoint.

    Every argument, the corpus and the output path are checked before the first step; a bad
    one stops the command with exit status 2 and a message that names it. Under
    ``torchrun --nproc_per_node N -m tx.train ...`` N processes train one model together
    (DistributedDataParallel; ``--batch-size`` is then the global batch, split over them).
    """
    parser = argparse.ArgumentParser(prog="python -m tx.train", description=main.__doc__)
    parser.add_argument("--out", type=Path, default=Path("runs/fr_en_small.safetensors"), help="checkpoint to write")
    parser.add_argument("--steps", type=int, help=f"optimiser steps (default {TrainConfig.steps}; with --tsv, "
                        f"{TrainConfig.real().steps}, the time budget deciding)")
    parser.add_argument("--batch-size", type=int, help=f"sentence pairs a step (default {TrainConfig.batch_size}; "
                        f"with --tsv, {TrainConfig.real().batch_size})")
    parser.add_argument("--seed", type=int, default=0, help="seeds the corpus, the weights and the batches")
    parser.add_argument("--pairs", type=int, default=12000, help="sentence pairs in the built-in corpus")
    parser.add_argument("--tsv", type=Path, help="train on this tab-separated corpus instead (Tatoeba layout)")
    parser.add_argument("--norm-first", action="store_true", help="pre-LN instead of the paper's post-LN")
    parser.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    parser.add_argument("--threads", type=int, default=2,
                        help="CPU threads; sums split over threads round differently, and 2 wrote the book's checkpoint")
    parser.add_argument("--precision", choices=list(scale.PRECISIONS), default="fp32",
                        help="bf16 or fp16 (CUDA only): train under torch.autocast; the checkpoint stays fp32")
    _add_real_corpus_args(parser)
    args = parser.parse_args(argv)
    world = scale.init_from_env()  # under torchrun: one of WORLD_SIZE processes, gloo on CPU, nccl on GPUs
    try:
        return (_main_tsv if args.tsv is not None else _main_builtin)(parser, args, world)
    finally:
        scale.finish()


def _main_builtin(parser: argparse.ArgumentParser, args: argparse.Namespace, world: scale.World) -> dict[str, Any]:
    """The built-in corpus: the book's small model, trained by ``steps``."""
    from . import checkpoint, evaluate

    try:
        tcfg = _check_args(args)
        corpus = _load(args)
    except (ValueError, TypeError, OSError) as e:
        parser.error(str(e))
    torch.manual_seed(args.seed)
    cfg = TransformerConfig.small(len(corpus.src_vocab), len(corpus.tgt_vocab), norm_first=args.norm_first)
    with cpu_threads(args.threads):  # on CPU the same thread count gives the same weights, bit for bit
        model = Transformer.from_config(cfg).to(_device())
        try:
            history = fit(model, corpus.train, corpus.valid, corpus.src_vocab, corpus.tgt_vocab, tcfg)
        except FloatingPointError as e:
            raise SystemExit(f"python -m tx.train: error: {e} No checkpoint was written; {args.out} is unchanged.") from None
        if world.rank != 0:  # the other processes hold the same weights; rank 0 tests and writes them
            return {}
        scores = evaluate.evaluate(model, corpus.test, corpus.src_vocab, corpus.tgt_vocab)
        info = {"train": vars(tcfg) | {"pairs": args.pairs, "tsv": str(args.tsv) if args.tsv else None},
                "test": scores, "seconds": round(history["seconds"], 1), "final_valid_loss": history["valid_loss"][-1],
                "compared": corpus.tgt_vocab.comparison, "world_size": world.size}
        checkpoint.save(args.out, model, corpus.src_vocab, corpus.tgt_vocab, info=info)
    print(f"trained {history['step'][-1]} steps in {history['seconds']:.0f} s; test exact match "
          f"{scores['exact_match']:.1%}, BLEU {scores['bleu']:.1f} on {scores['n']} sentences "
          f"({corpus.tgt_vocab.comparison}); wrote {args.out}")
    return info


def _check_args(args: argparse.Namespace) -> TrainConfig:
    """The command line's numbers and output path, checked before any corpus is read; returns the TrainConfig."""
    from .checkpoint import check_writable
    from .grammar import RUNNING_EXAMPLES

    preset = TrainConfig.real() if args.tsv is not None else TrainConfig()
    args.steps = preset.steps if args.steps is None else args.steps
    args.batch_size = preset.batch_size if args.batch_size is None else args.batch_size
    for flag, value in (("--steps", args.steps), ("--batch-size", args.batch_size), ("--threads", args.threads)):
        if value < 1:
            raise ValueError(f"{flag} must be at least 1, got {value}.")
    minutes = preset.minutes if getattr(args, "minutes", None) is None else args.minutes
    if minutes is not None and not minutes > 0:
        raise ValueError(f"--minutes must be more than 0, got {minutes}.")
    if args.tsv is None and args.pairs < len(RUNNING_EXAMPLES):
        raise ValueError(f"--pairs must be at least {len(RUNNING_EXAMPLES)} (the book's running examples), got {args.pairs}.")
    if args.tsv is not None and args.tsv.is_dir():
        raise IsADirectoryError(f"--tsv {args.tsv}: is a folder, not a corpus file.")
    if args.tsv is not None and not args.tsv.is_file():
        raise FileNotFoundError(f"--tsv {args.tsv}: no such file.")
    resume = getattr(args, "resume", False)
    if resume and args.tsv is None:
        raise ValueError("--resume continues a --tsv run; the built-in corpus trains in a minute, train it anew.")
    if args.out.exists() and not args.out.is_dir() and not args.force and not resume:
        raise FileExistsError(f"{args.out} exists; pass --force to overwrite it, --resume to continue its run, "
                              "or choose another --out")
    if resume and not args.out.is_file():
        raise FileNotFoundError(f"--resume: no checkpoint at {args.out} to continue; train without --resume first.")
    check_writable(args.out)
    precision = getattr(args, "precision", "fp32")
    scale.check_precision(precision, _device())
    world = scale.world()
    if args.batch_size % world.size:
        raise ValueError(f"--batch-size {args.batch_size} is the global batch of all {world.size} processes and "
                         f"must split evenly over them; give a multiple of {world.size}.")
    return preset.__class__(**{**vars(preset), "steps": args.steps, "batch_size": args.batch_size,
                               "seed": args.seed, "minutes": minutes, "precision": precision})


def _load(args: argparse.Namespace, max_len: int | None = None) -> data.ParallelCorpus:
    """The corpus, checked: sentences that fit the model's positions, and pairs enough for every split."""
    max_len = TransformerConfig.small(4, 4).max_len if max_len is None else max_len
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


def _add_real_corpus_args(parser: argparse.ArgumentParser) -> None:
    """The options of training on a real corpus (``--tsv``), beside the built-in corpus's."""
    parser.add_argument("--minutes", type=float, help="stop after this many minutes of training (default with "
                        f"--tsv: {TrainConfig.real().minutes:g}; the steps still cap it)")
    parser.add_argument("--resume", action="store_true", help="--tsv: continue the run whose checkpoint is --out")
    parser.add_argument("--vocab-size", type=int, default=4000, help="--tsv: BPE pieces per language (default 4000)")
    parser.add_argument("--credit", default="", help="--tsv: the corpus's source and licence, kept in the checkpoint")


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _main_tsv(parser: argparse.ArgumentParser, args: argparse.Namespace, world: scale.World) -> dict[str, Any]:
    """``--tsv``: BPE vocabularies of the training split, the real-corpus presets, a time budget, resumable."""
    from . import checkpoint, evaluate

    try:
        tcfg = _check_args(args)
        if args.vocab_size < 5:
            raise ValueError(f"--vocab-size must be at least 5 (four specials and a piece), got {args.vocab_size}.")
        corpus = _load(args, TransformerConfig.real(4, 4).max_len)
        digest = _sha256(args.tsv)
        resume, model, credit = None, None, args.credit
        if args.resume:
            ck = checkpoint.load(args.out, _device())
            resume = load_state(state_path(args.out))
            _check_same_run(ck.info, args, digest, resume)
            if tcfg.minutes is not None and resume.seconds >= 60 * tcfg.minutes:
                raise ValueError(f"--resume: the run has trained {resume.seconds / 60:.1f} minutes, its whole "
                                 f"--minutes {tcfg.minutes:g}; give a larger --minutes to train it longer.")
            if resume.step >= tcfg.steps:
                raise ValueError(f"--resume: the run has done {resume.step} steps, its whole --steps {tcfg.steps}; "
                                 "give a larger --steps to train it longer.")
            model, src_vocab, tgt_vocab = ck.model, ck.src_vocab, ck.tgt_vocab
            credit = credit or ck.info.get("credit", "")
        else:  # learned once, by rank 0, so every process has the same pieces
            src_vocab, tgt_vocab = scale.broadcast_object(subword_vocabs(corpus, args.vocab_size)
                                                          if world.rank == 0 else None)
    except (ValueError, TypeError, OSError) as e:
        parser.error(str(e))
    if model is None:
        torch.manual_seed(args.seed)
        cfg = TransformerConfig.real(len(src_vocab), len(tgt_vocab), norm_first=args.norm_first)
        model = Transformer.from_config(cfg).to(_device())
    run = {"tsv": args.tsv.name, "tsv_sha256": digest, "credit": credit, "seed": args.seed, "world_size": world.size,
           "vocab": f"BPE (Hugging Face tokenizers), cased, {len(src_vocab)} + {len(tgt_vocab)} pieces",
           "train": {k: v for k, v in vars(tcfg).items()}, "pairs": {s: len(getattr(corpus, s)) for s in ("train", "valid", "test")}}

    def save(state: TrainState) -> None:
        checkpoint.save(args.out, model, src_vocab, tgt_vocab, info=run | {"step": state.step,
                        "train_seconds": round(state.seconds, 1), "complete": False})
        save_state(state_path(args.out), state)

    try:
        history = fit(model, corpus.train, corpus.valid, src_vocab, tgt_vocab, tcfg, resume=resume, save=save)
    except FloatingPointError as e:
        raise SystemExit(f"python -m tx.train: error: {e} The last checkpoint in {args.out} is kept; --resume continues it.") from None
    if world.rank != 0:
        return {}
    scores = evaluate.evaluate(model, corpus.test, src_vocab, tgt_vocab)
    info = run | {"step": history["step"][-1] if history["step"] else resume.step, "complete": True,
                  "train_seconds": round(history["seconds"], 1), "final_valid_loss": history["valid_loss"][-1],
                  "test": scores, "compared": tgt_vocab.comparison}
    checkpoint.save(args.out, model, src_vocab, tgt_vocab, info=info)
    print(f"trained {info['step']} steps in {history['seconds'] / 60:.1f} min; on {scores['n']} held-out sentences "
          f"({tgt_vocab.comparison}): BLEU {scores['bleu']:.1f}, exact match {scores['exact_match']:.1%}; wrote {args.out}")
    return info


def subword_vocabs(corpus: data.ParallelCorpus, vocab_size: int = 4000) -> tuple[Any, Any]:
    """Cased BPE vocabularies (French, English) learned from ``corpus.train`` alone, every split checked to fit.

    What ``python -m tx.train --tsv`` trains with; ``bench/real_corpus.py`` uses it too.
    """
    from .subwords import SubwordVocab

    src_vocab = SubwordVocab.train([fr for fr, _ in corpus.train], vocab_size)
    tgt_vocab = SubwordVocab.train([en for _, en in corpus.train], vocab_size)
    for split in ("train", "valid", "test"):  # in pieces now: a long word may need many
        check_lengths(getattr(corpus, split), TransformerConfig.real(4, 4).max_len, split, src_vocab, tgt_vocab)
    return src_vocab, tgt_vocab


def _check_same_run(info: dict[str, Any], args: argparse.Namespace, digest: str, state: TrainState) -> None:
    """--resume continues one run: the same corpus file, the same seed, and weights saved with that state."""
    if info.get("tsv_sha256") != digest:
        raise ValueError(f"--resume: {args.out} was trained on another corpus than {args.tsv} (its contents differ); "
                         "resume with the same file, or train anew with --force.")
    if info.get("seed") != args.seed:
        raise ValueError(f"--resume: {args.out} was trained with --seed {info.get('seed')}, not {args.seed}.")
    if info.get("step") != state.step:
        raise ValueError(f"--resume: {args.out} holds step {info.get('step')} but its training state step {state.step}; "
                         "the two files are from different moments. Train anew with --force.")


def _device() -> torch.device:
    from . import device

    return device()


if __name__ == "__main__":
    main()
