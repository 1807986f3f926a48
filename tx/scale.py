"""Training at scale (chapter A1): mixed precision (autocast) and data parallelism (DistributedDataParallel).

Axes: B global batch (sentence pairs a step, over all processes), Bp one process's rows,
S source length, T target length, W world size (processes), r rank (this process, 0..W-1).

The pieces ``tx.train.fit`` uses (which dtype, which backend, which rows of a global batch
a process trains on, and how its loss is weighted) live in :mod:`tx.parallel`, below
training, and are re-exported here. What this module adds sits above training: it runs
``fit`` and ``batch_loss`` in W processes on this machine, to show that they compute
exactly what one process computes on the whole batch.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
from torch import Tensor

from .data import Batch
from .model import Transformer
from .parallel import (
    PRECISIONS, World, agree, autocast, backend, broadcast_object, check_precision, finish, free_port,
    grad_scaler, init_from_env, shard, spawn, usable_batches, world, wrap,
)
from .train import batch_loss, fit

__all__ = [
    "PRECISIONS", "check_precision", "autocast", "grad_scaler", "World", "world", "backend",
    "init_from_env", "finish", "wrap", "shard", "usable_batches", "agree", "broadcast_object",
    "free_port", "spawn", "fit_in_processes", "gradients_in_processes",
]


def _fit_worker(model_config: Any, seed: int, pairs: Sequence[tuple[str, str]], vocabs: tuple[Any, Any],
                train_config: Any) -> dict[str, Any]:
    """Build the model from ``seed`` and train it with fit in this process's group; rank 0 returns weights and history."""
    torch.manual_seed(seed)
    model = Transformer.from_config(model_config)
    history = fit(model, pairs, [], *vocabs, train_config, progress=False)
    if world().rank != 0:
        return {}
    # numpy arrays travel through the queue as plain bytes; tensors would go through shared
    # memory that vanishes with this process.
    return {"state": {k: v.numpy().copy() for k, v in model.state_dict().items()}, "history": history,
            "world_size": world().size}


def fit_in_processes(world_size: int, model_config: Any, seed: int, pairs: Sequence[tuple[str, str]],
                     vocabs: tuple[Any, Any], train_config: Any, timeout: float = 120.0) -> dict[str, Any]:
    """Train a fresh model (seeded) with ``tx.train.fit`` in ``world_size`` gloo processes on this machine.

    Returns rank 0's ``{"state": state_dict, "history": ..., "world_size": W}``; the model
    every process holds is the same, since DDP gives every process the same gradients.
    """
    out = spawn(_fit_worker, world_size, model_config, seed, list(pairs), vocabs, train_config, timeout=timeout)[0]
    return out | {"state": {k: torch.from_numpy(v) for k, v in out["state"].items()}}


def _gradient_worker(model_config: Any, seed: int, batch: Batch, smoothing: float) -> dict[str, Any]:
    """The gradient of one global batch's loss, as DDP leaves it in this process (averaged over all)."""
    torch.manual_seed(seed)
    model = Transformer.from_config(model_config)
    net = wrap(model)  # kept alive until backward has run: its hooks average the gradients
    batch_loss(net, batch, model_config.pad_id, smoothing).backward()
    return {k: p.grad.numpy().copy() for k, p in model.named_parameters()}


def gradients_in_processes(world_size: int, model_config: Any, seed: int, batch: Batch, smoothing: float = 0.0,
                           timeout: float = 120.0) -> list[dict[str, Tensor]]:
    """Each process's gradient ``{name: grad}`` of one global ``batch`` [B] under DDP, W processes on this CPU."""
    out = spawn(_gradient_worker, world_size, model_config, seed, batch, smoothing, timeout=timeout)
    return [{k: torch.from_numpy(v) for k, v in grads.items()} for grads in out]
