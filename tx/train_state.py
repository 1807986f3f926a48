"""A training run's state, kept beside its checkpoint so that the run can resume where it stopped.

``tx.train.fit`` takes a ``TrainState`` to resume from and hands one to its ``save``
callback; ``python -m tx.train --tsv ... --resume`` (:mod:`tx.cli.train`) writes and
reads it with ``save_state`` and ``load_state``, as safetensors, never pickle. ``tx.train``
re-exports all four names, and the API page documents them there.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._files import FORMAT_VERSION, NewerFormatError, atomic_write, check_format_version

__all__ = ["TrainState", "state_path", "save_state", "load_state"]


@dataclass
class TrainState:
    """Where a run stands, to resume it: steps done, the optimiser's and the schedule's states, time spent."""

    step: int = 0  #: optimiser steps done
    seconds: float = 0.0  #: training time of every run so far (a time budget counts them all)
    tokens: int = 0  #: target tokens trained on so far
    optimizer: dict[str, Any] = field(default_factory=dict)  #: Adam's state_dict()
    schedule: dict[str, Any] = field(default_factory=dict)  #: the LambdaLR's state_dict()


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
    meta = {"format": "tx-train-state", "format_version": str(FORMAT_VERSION), "step": str(state.step),
            "seconds": repr(float(state.seconds)), "tokens": str(state.tokens),
            "param_groups": json.dumps(state.optimizer.get("param_groups", [])), "schedule": json.dumps(state.schedule)}
    with atomic_write(path) as tmp:  # a run killed while saving leaves the previous state whole
        save_file(tensors, str(tmp), metadata=meta)
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
        check_format_version(path, meta)
        optimizer: dict[str, Any] = {"state": {}, "param_groups": json.loads(meta["param_groups"])}
        for name, value in tensors.items():
            i, key = name.split(".", 1)
            optimizer["state"].setdefault(int(i), {})[key] = value
        return TrainState(int(meta["step"]), float(meta["seconds"]), int(meta["tokens"]), optimizer,
                          json.loads(meta["schedule"]))
    except NewerFormatError:
        raise
    except Exception as e:  # safetensors raises its own error types for a damaged file
        raise ValueError(f"{path} is not a readable tx training state ({e}); train again without --resume.") from None
