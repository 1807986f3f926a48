"""Training runs the book's tests record once and replay, so no chapter trains twice in one test run.

`make test` runs every chapter twice: in the book build (with the exercises solved) and in
JupyterLab (the learner edition). The chapters train the same models both times, and the
second training tests nothing the first did not. So the build records each training run,
keyed by everything the run depends on, and the JupyterLab test replays a run it finds:

- ``TX_TRAINING_RECORD=DIR`` (the build's kernels): train as usual, then save the run into DIR.
- ``TX_TRAINING_REPLAY=DIR`` (the JupyterLab test's kernels): a run found in DIR is replayed
  (the trained weights, the history, the random state after it, the callback once with the
  whole history, the progress bar at its end); a run not found trains as usual.

Neither is set in a reader's kernel, where :func:`recorded` changes nothing. A run's key is a
digest of the function's name, the model's weights and its arguments (what the tensors hold,
not where they sit in memory), the CPU thread count and the source of every module of ``tx``:
a changed line of tx trains again. A run that saves or resumes training state, runs in a
process group (``torchrun``) or takes an argument the digest cannot read is never recorded.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import os
import struct
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

from ._files import atomic_write
from .progress import progress_bar

RECORD, REPLAY = "TX_TRAINING_RECORD", "TX_TRAINING_REPLAY"
_PACKAGE = Path(__file__).resolve().parent


class _Unreadable(Exception):
    """An argument the digest cannot read: the run is not recorded."""


@functools.cache
def _source_digest() -> bytes:
    digest = hashlib.sha256()
    for path in sorted(_PACKAGE.rglob("*.py")):
        digest.update(str(path.relative_to(_PACKAGE)).encode())
        digest.update(path.read_bytes())
    return digest.digest()


def _feed(digest, value: Any, depth: int = 0) -> None:
    """Feed ``value``'s content into ``digest``: the same content, the same bytes, in any process."""
    if depth > 20:
        raise _Unreadable("nested too deep")
    put = lambda tag, data=b"": digest.update(tag + struct.pack("<Q", len(data)) + data)  # noqa: E731
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        put(b"s", f"{type(value).__name__}:{value!r}".encode())
    elif isinstance(value, torch.Tensor):
        tensor = value.detach().cpu().contiguous()
        put(b"t", f"{tensor.dtype}{tuple(tensor.shape)}".encode())
        put(b"d", tensor.view(torch.uint8).numpy().tobytes() if tensor.numel() else b"")
    elif isinstance(value, nn.Module):
        put(b"m", type(value).__qualname__.encode())
        _feed(digest, dict(value.state_dict()), depth + 1)
        _feed(digest, getattr(value, "config", None), depth + 1)
    elif isinstance(value, (list, tuple)):
        put(b"l", f"{type(value).__name__}{len(value)}".encode())
        for item in value:
            _feed(digest, item, depth + 1)
    elif isinstance(value, dict):
        put(b"k", str(len(value)).encode())
        for key in sorted(value, key=repr):
            _feed(digest, key, depth + 1)
            _feed(digest, value[key], depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        put(b"c", type(value).__qualname__.encode())
        for field in dataclasses.fields(value):
            _feed(digest, (field.name, getattr(value, field.name)), depth + 1)
    elif hasattr(value, "__dict__") and not callable(value) and type(value).__module__.startswith("tx."):
        put(b"o", type(value).__qualname__.encode())  # tx's own objects: a Vocab, a SubwordVocab
        _feed(digest, vars(value), depth + 1)
    else:
        raise _Unreadable(type(value).__name__)


def _key(name: str, model: nn.Module, arguments: dict[str, Any]) -> str | None:
    digest = hashlib.sha256(_source_digest() + name.encode())
    try:
        _feed(digest, (model, arguments, torch.get_num_threads(), str(next(model.parameters()).device)))
    except _Unreadable:
        return None
    return digest.hexdigest()[:32]


def _replayable(model: Any, arguments: dict[str, Any]) -> bool:
    """Only a plain run in one process: no saved or resumed state, no time budget."""
    if any(arguments.get(k) is not None for k in ("resume", "save", "seconds")):
        return False
    if getattr(arguments.get("config"), "minutes", None) is not None:
        return False
    if not isinstance(model, nn.Module) or not any(True for _ in model.parameters()):
        return False
    return not (torch.distributed.is_available() and torch.distributed.is_initialized())


def _replay(path: Path, model: nn.Module, callback: Any, progress: Any) -> dict[str, Any]:
    saved = torch.load(path, weights_only=False)
    model.load_state_dict(saved["weights"])
    model.train(saved["training"])
    torch.set_rng_state(saved["rng"])
    history = saved["history"]
    steps = len(history.get("train_loss", ()))
    if progress:  # the bar a learner would have seen, at its end
        bar = progress_bar(steps, True)
        bar.update(steps)
        bar.close()
    if callback is not None:
        callback(history)
    return history


def recorded(fit: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """Wrap a training function ``fit(model, ...) -> history`` that trains ``model`` in place,
    so that the book's tests can record and replay it (see the module's docstring)."""

    signature = inspect.signature(fit)

    @functools.wraps(fit)
    def run(model: nn.Module, *args: Any, **kwargs: Any) -> dict[str, Any]:
        record, replay = os.environ.get(RECORD), os.environ.get(REPLAY)
        if not (record or replay):
            return fit(model, *args, **kwargs)
        try:
            bound = signature.bind(model, *args, **kwargs)
        except TypeError:
            return fit(model, *args, **kwargs)  # the function itself says what is wrong
        bound.apply_defaults()
        arguments = bound.arguments
        if not _replayable(model, arguments):
            return fit(model, *args, **kwargs)
        callback, progress = arguments.pop("callback", None), arguments.pop("progress", None)
        arguments.pop(next(iter(signature.parameters)))  # the model: keyed by its weights below
        key = _key(f"{fit.__module__}.{fit.__qualname__}", model, arguments)
        path = Path(replay or record) / f"{fit.__name__}-{key}.pt"
        if key is not None and replay and path.is_file():
            return _replay(path, model, callback, progress)
        history = fit(model, *args, **kwargs)
        if key is not None and record:
            with atomic_write(path) as partial:  # a reader of DIR never sees half a file
                torch.save({"weights": model.state_dict(), "training": model.training,
                            "rng": torch.get_rng_state(), "history": history}, partial)
        return history

    return run
