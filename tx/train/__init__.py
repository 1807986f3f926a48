"""Training (chapter 10): the paper's optimiser, warm-up schedule and label-smoothed loss, and a seeded loop.

Axes: B batch, T target length, V target vocabulary size.

The command ``python -m tx.train`` (:mod:`tx.cli.train`) trains the book's model with
:func:`fit` and writes a checkpoint; a run's resumable state is :mod:`tx.train_state`, its
progress lines :mod:`tx.progress`, and mixed precision and data parallelism
:mod:`tx.parallel` (chapter A1's ``tx.scale`` re-exports it).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .. import data
# tx.scale's pieces, by the name fit and batch_loss give them (tx.scale itself runs fit, so it sits above)
from .. import parallel as scale
from ..checks import check_bool, check_float, check_int, check_same, check_tensor, guarded
from ..data import check_lengths
from ..model import Transformer
from ..progress import progress_bar as _progress_bar  # fit's name for it
from ..train_state import TrainState, load_state, save_state, state_path
from ..training_record import recorded

__all__ = [
    "TrainConfig", "rate", "warmup_schedule", "make_optimizer", "smoothed_targets",
    "loss_fn", "batch_loss", "fit", "valid_loss", "check_lengths", "cpu_threads",
    # a run's resumable state, re-exported: fit takes and saves it
    "TrainState", "save_state", "load_state", "state_path",
]


@dataclass(frozen=True)
class TrainConfig:
    """How long and how fast to train; the defaults train the book's model in about a CPU-minute."""

    steps: int = 1200  #: optimiser steps (batches); about 50 s on two CPU cores for the book model
    batch_size: int = 64  #: sentence pairs per step
    warmup: int = 300  #: steps of linear warm-up before the 1/sqrt(step) decay (paper: 4000)
    lr_factor: float = 1.0  #: multiplies the paper's schedule; 1.0 is the paper's
    label_smoothing: float = 0.1  #: epsilon of paper 5.4
    clip_norm: float = 1.0  #: gradient-norm clip: guards the first steps of post-LN training
    eval_every: int = 200  #: steps between validation losses
    seed: int = 0  #: seeds dropout and the shuffling of batches
    minutes: float | None = None  #: a time budget: stop after this many minutes of training even before `steps`
    save_every: int = 500  #: steps between the calls of fit's `save` (a checkpoint to resume from)
    bucket: int = 0  #: > 0: batches of like-length sentences, sorted within runs of this many batches (less padding)
    precision: str = "fp32"  #: "bf16" or "fp16" (CUDA only): matrix multiplies under torch.autocast; weights stay fp32
    compile: bool = False  #: train through torch.compile: the model's forward is one graph (tests/test_compile.py)

    def __post_init__(self) -> None:
        if self.precision not in scale.PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(scale.PRECISIONS)}, got {self.precision!r}.")
        check_int("bucket", self.bucket, low=0)
        check_bool("compile", self.compile)
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


def _check_rate(step: int, d_model: int, warmup: int, factor: float = 1.0) -> None:
    check_int("d_model", d_model, low=1)
    check_int("warmup", warmup, low=1)


@guarded(_check_rate)
def rate(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """The paper's learning rate (section 5.3, eq. 3): d_model^-0.5 *
    min(step^-0.5, step * warmup^-1.5).

    It rises linearly for ``warmup`` steps and then decays as 1/sqrt(step).
    Steps count from 1.
    """
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


def _check_fit_call(
    model: Transformer, train_pairs: Sequence[tuple[str, str]], valid_pairs: Sequence[tuple[str, str]],
    src_vocab: data.Vocab, tgt_vocab: data.Vocab, config: TrainConfig = TrainConfig(), progress: bool = True,
    callback: Callable[[dict[str, Any]], None] | None = None, resume: TrainState | None = None,
    save: Callable[[TrainState], None] | None = None,
) -> None:
    _check_fit(model, train_pairs, valid_pairs, src_vocab, tgt_vocab, config)
    if callback is not None and not callable(callback):
        raise TypeError(
            f"callback must be a function of the history, or None, got "
            f"{type(callback).__name__}."
        )
    _check_parallel(config, scale.world(), next(model.parameters()).device, len(train_pairs))


@guarded(_check_fit_call)
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
    start = resume if resume is not None else TrainState()
    world, dev = scale.world(), next(model.parameters()).device
    # each process its own dropout masks
    torch.manual_seed(config.seed + start.step + 7919 * world.rank)
    # DDP under torchrun; fp16's scaler
    net, scaler = scale.wrap(model), scale.grad_scaler(config.precision, dev)
    net = torch.compile(net) if config.compile else net
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
            _stop_if_diverged(value, step + 1, config)
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


# the book's tests record a run once and replay it (tx.training_record);
# a reader's kernel runs fit as written above
fit = recorded(fit)


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


def _stop_if_diverged(loss: float, step: int, config: TrainConfig) -> None:
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
