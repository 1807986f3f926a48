"""Saving and loading models: weights in safetensors, configuration and vocabularies as JSON.

Never pickle: ``torch.load`` on a pickled file can run arbitrary code, while a
safetensors file holds only tensors and a JSON header.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_model, save_model

from .config import TransformerConfig
from .data import Vocab
from .model import Transformer

__all__ = ["save", "load", "load_into", "read_metadata", "Checkpoint", "BOOK_MODEL"]

_JSON_KEYS = ("config", "info", "src_vocab", "tgt_vocab")

BOOK_MODEL = Path(__file__).parent / "checkpoints" / "fr_en_small.safetensors"
"""The book's small French->English model, written by ``python -m tx.train`` (see the README)."""


@dataclass
class Checkpoint:
    """What :func:`load` returns: the model, its vocabularies and what training recorded."""

    model: Transformer
    src_vocab: Vocab | None
    tgt_vocab: Vocab | None
    info: dict[str, Any] = field(default_factory=dict)


def save(
    path: str | os.PathLike, model: Transformer, src_vocab: Vocab | None = None,
    tgt_vocab: Vocab | None = None, info: dict[str, Any] | None = None,
) -> Path:
    """Write weights, config, vocabularies and ``info`` to one .safetensors file; returns its path.

    The file is written beside its destination and renamed into place, so a crash never
    leaves a half-written checkpoint over a good one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"format": "tx", "config": json.dumps(model.config.to_dict()), "info": json.dumps(info or {})}
    for name, vocab in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab)):
        if vocab is not None:
            meta[name] = json.dumps(vocab.to_dict(), ensure_ascii=False)
    tmp = path.with_name(path.name + ".tmp")
    save_model(model, str(tmp), metadata=meta)  # handles the tied embedding weights
    os.replace(tmp, path)
    return path


def read_metadata(path: str | os.PathLike) -> dict[str, Any]:
    """The JSON parts of a checkpoint (``config``, ``info``, vocabularies) without loading weights."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}; write one with `python -m tx.train --out {path}`.")
    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata() or {}
    if meta.get("format") != "tx":
        raise ValueError(f"{path} is a safetensors file but not a tx checkpoint (no tx config inside).")
    # save_model also records tied tensors it dropped (e.g. "generator.weight"): not ours to parse.
    return {k: json.loads(meta[k]) for k in _JSON_KEYS if k in meta}


def load(path: str | os.PathLike = BOOK_MODEL, device: torch.device | str = "cpu") -> Checkpoint:
    """Build the model a checkpoint describes and load its weights; returns a :class:`Checkpoint`."""
    meta = read_metadata(path)
    model = Transformer.from_config(TransformerConfig(**meta["config"]))
    load_model(model, str(path), device=str(device))
    model.to(device).eval()
    vocabs = [Vocab.from_dict(meta[k]) if k in meta else None for k in ("src_vocab", "tgt_vocab")]
    return Checkpoint(model, *vocabs, meta.get("info", {}))


def load_into(model: Transformer, path: str | os.PathLike) -> Transformer:
    """Load a checkpoint's weights into an existing model, which must have the same config."""
    saved = TransformerConfig(**read_metadata(path)["config"])
    if saved != model.config:
        diff = ", ".join(
            f"{k}: checkpoint {v!r} vs model {getattr(model.config, k)!r}"
            for k, v in saved.to_dict().items() if getattr(model.config, k) != v
        )
        raise ValueError(
            f"{path} was saved from a different configuration ({diff}). Build the model with "
            "tx.checkpoint.load(path), or with Transformer.from_config of the saved config."
        )
    load_model(model, str(path), device=str(next(model.parameters()).device))
    return model
