"""Saving and loading models: weights in safetensors, configuration and vocabularies as JSON.

Never pickle: ``torch.load`` on a pickled file can run arbitrary code, while a
safetensors file holds only tensors and a JSON header.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load as load_tensors, load_model, save_model

from ._files import FORMAT_VERSION, NewerFormatError, atomic_write, check_format_version, newer_tx
from .checks import check_finite_weights
from .config import TransformerConfig
from .data import Vocab, check_vocabs, vocab_from_dict
from .model import Transformer

__all__ = ["save", "load", "load_into", "read_metadata", "check_writable", "Checkpoint", "BOOK_MODEL", "REAL_MODEL"]

_JSON_KEYS = ("config", "info", "src_vocab", "tgt_vocab")
_CHECKSUM = "tensor_sha256"  # metadata key: SHA-256 of every byte after the header

BOOK_MODEL = Path(__file__).parent / "checkpoints" / "fr_en_small.safetensors"
"""The book's small French->English model, written by ``python -m tx.train`` (see the README)."""

REAL_MODEL = Path(__file__).parent / "checkpoints" / "fr_en_real.safetensors"
"""The French->English model trained on real Tatoeba sentences, cased, in subwords (see the README)."""


@dataclass
class Checkpoint:
    """What :func:`load` returns: the model, its vocabularies and what training recorded."""

    model: Transformer  #: the model, its weights loaded, in eval mode
    src_vocab: Vocab | None  #: the source words or subwords (None when the file holds none)
    tgt_vocab: Vocab | None  #: the target words or subwords (None when the file holds none)
    info: dict[str, Any] = field(default_factory=dict)  #: what training recorded: data, steps, scores


def save(
    path: str | os.PathLike, model: Transformer, src_vocab: Vocab | None = None,
    tgt_vocab: Vocab | None = None, info: dict[str, Any] | None = None,
) -> Path:
    """Write weights, config, vocabularies and ``info`` to one .safetensors file; returns its path.

    The file is written beside its destination and renamed into place, so a crash never
    leaves a half-written checkpoint over a good one; an overwritten file keeps its mode.
    A SHA-256 of the tensor bytes goes into the metadata, and :func:`load` verifies it; so does the
    format version (``format_version``), and a tx older than the file refuses it, saying to update.
    """
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a tx.Transformer, got {type(model).__name__}.")
    check_vocabs(model.config, src_vocab, tgt_vocab)
    path = Path(path)
    check_writable(path)
    meta = {"format": "tx", "format_version": str(FORMAT_VERSION), "config": json.dumps(model.config.to_dict()),
            "info": _info_json(info)}
    for name, vocab in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab)):
        if vocab is not None:
            meta[name] = json.dumps(vocab.to_dict(), ensure_ascii=False)
    _write(path, model, meta)
    return path


def check_writable(path: Path) -> None:
    """Raise a clear error unless a checkpoint can be written at ``path`` (checked before any long work)."""
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory; give a file path for the checkpoint, such as {path / 'model.safetensors'}.")
    parent = path.parent
    while not parent.exists():  # missing folders are created; the nearest existing one must be a writable folder
        parent = parent.parent
    if not parent.is_dir():
        raise NotADirectoryError(f"cannot write {path}: {parent} is a file, not a folder. Choose another path.")
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise PermissionError(f"cannot write {path}: no write permission. Choose another path.")


def _info_json(info: dict[str, Any] | None) -> str:
    if info is not None and not isinstance(info, dict):
        raise TypeError(f"info must be a dict of JSON-safe values, got {type(info).__name__}.")
    try:
        return json.dumps(info or {})
    except (TypeError, ValueError) as e:
        raise TypeError(f"info must hold JSON-safe values only (numbers, strings, lists, dicts): {e}.") from None


def _write(path: Path, model: torch.nn.Module, meta: dict[str, str]) -> None:
    """Write the model's weights and ``meta`` to ``path`` whole (:func:`~tx._files.atomic_write`), with their checksum."""
    with atomic_write(path) as tmp:
        save_model(model, str(tmp), metadata=meta)  # handles the tied embedding and output weights
        tmp.write_bytes(_with_checksum(tmp.read_bytes()))


def _with_checksum(raw: bytes) -> bytes:
    """The same safetensors file with the SHA-256 of its tensor bytes added to the metadata."""
    header, data_start = _parse_header(raw, "<being written>")
    header["__metadata__"][_CHECKSUM] = hashlib.sha256(raw[data_start:]).hexdigest()
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # safetensors keeps the tensor data 8-byte aligned
    return struct.pack("<Q", len(text)) + text + raw[data_start:]


def _parse_header(raw: bytes, path: object) -> tuple[dict[str, Any], int]:
    """The JSON header of a safetensors file and where its tensor bytes start; clear errors if damaged."""
    hint = f"Write it again (python -m tx.train --out {path}), or restore a copy."
    if len(raw) < 8:
        raise ValueError(f"{path} is {'empty' if not raw else 'truncated'} ({len(raw)} bytes), not a checkpoint. {hint}")
    (n,) = struct.unpack("<Q", raw[:8])
    try:
        if 8 + n > len(raw):
            raise ValueError("header longer than the file")
        header = json.loads(raw[8 : 8 + n])
        ends = [t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"]
    except (ValueError, TypeError, KeyError, UnicodeDecodeError):
        if raw.startswith((b"PK\x03\x04", b"\x80")):  # torch.save's zip archive, or a bare pickle
            raise ValueError(f"{path} is a pickled torch.save file, not a safetensors checkpoint; tx never unpickles. {hint}") from None
        raise ValueError(f"{path} has a damaged or truncated header: it is not a readable safetensors checkpoint. {hint}") from None
    if 8 + n + max(ends, default=0) > len(raw):
        raise ValueError(f"{path} is truncated: its tensors need {8 + n + max(ends)} bytes, the file has {len(raw)}. {hint}")
    header.setdefault("__metadata__", {})
    return header, 8 + n


def _read(path: str | os.PathLike) -> tuple[Path, dict[str, Any], bytes]:
    """Read a checkpoint whole: its path, header and raw bytes, with its checksum verified if it has one."""
    path = Path(path)
    if path.is_dir():
        inside = sorted(p.name for p in path.glob("*.safetensors"))
        holds = f"it holds {', '.join(inside[:5])}{' ...' if len(inside) > 5 else ''}" if inside else "it holds no .safetensors file"
        raise IsADirectoryError(
            f"{path} is a folder, not a checkpoint file ({holds}); give the path of the .safetensors file itself"
            + (f", such as {path / inside[0]}." if inside else ".")
        )
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}; write one with `python -m tx.train --out {path}`.")
    raw = path.read_bytes()
    header, data_start = _parse_header(raw, path)
    meta = header["__metadata__"]
    if meta.get("format") != "tx":
        raise ValueError(f"{path} is a safetensors file but not a tx checkpoint (no tx config inside).")
    check_format_version(path, meta)
    expected = meta.get(_CHECKSUM)  # checkpoints written before checksums have none: nothing to verify
    if expected is not None and hashlib.sha256(raw[data_start:]).hexdigest() != expected:
        raise ValueError(
            f"{path} is damaged: its tensor bytes do not match the checksum saved with them. "
            "Restore the file from a copy or write it again with python -m tx.train."
        )
    return path, header, raw


def _check_finite(path: Path, raw: bytes) -> None:
    """Every tensor in the file holds finite numbers: NaN weights would translate into nonsense without an error."""
    try:
        check_finite_weights(load_tensors(raw).items(), str(path))
    except ValueError as e:
        raise ValueError(f"{e} To look at the tensors anyway, read them with safetensors.torch.load_file.") from None


def read_metadata(path: str | os.PathLike) -> dict[str, Any]:
    """The JSON parts of a checkpoint (``config``, ``info``, vocabularies) without loading weights."""
    path, header, _ = _read(path)
    return _metadata(path, header)


def _metadata(path: Path, header: dict[str, Any]) -> dict[str, Any]:
    meta = header["__metadata__"]
    if meta.get("kind") == "language_model":
        raise ValueError(f"{path} holds a decoder-only tx.LanguageModel; load it with tx.checkpoint.load_language_model.")
    # save_model also records tied tensors it dropped (e.g. "generator.weight"): not ours to parse.
    try:
        out = {k: json.loads(meta[k]) for k in _JSON_KEYS if k in meta}
        out["config"] = _config(path, TransformerConfig, out["config"])
        vocabs = [vocab_from_dict(out[k]) if k in out else None for k in ("src_vocab", "tgt_vocab")]
        check_vocabs(out["config"], *vocabs)
    except NewerFormatError:
        raise
    except (ValueError, TypeError, KeyError) as e:
        raise ValueError(f"{path} has damaged metadata ({e}); write the checkpoint again with python -m tx.train.") from None
    out["config"] = out["config"].to_dict()
    return out


def _config(path: Path, cls: type, saved: Any) -> Any:
    """The config saved in a checkpoint as a ``cls``; a field ``cls`` does not have means a newer tx wrote it."""
    if isinstance(saved, dict):  # anything else is damaged: cls(**saved) says how
        unknown = sorted(saved.keys() - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise newer_tx(path, f"its config sets {', '.join(unknown)}, which this tx's {cls.__name__} does not have")
    return cls(**saved)


def _check_tensors(path: Path, header: dict[str, Any], model: Transformer) -> None:
    """Every tensor the model expects is in the file with the model's shape (tied ones recorded as such)."""
    meta = header["__metadata__"]
    for name, param in model.state_dict().items():
        entry = header.get(name) or header.get(meta.get(name, ""))
        if entry is None:
            raise ValueError(f"{path} lacks the tensor {name!r} its config needs; the file is damaged. Write it again.")
        if tuple(entry["shape"]) != tuple(param.shape):
            raise ValueError(
                f"{path}: tensor {name!r} has shape {tuple(entry['shape'])} but the config saved with it "
                f"needs {tuple(param.shape)}; the header and the tensors disagree. Write the checkpoint again."
            )


def load(path: str | os.PathLike = BOOK_MODEL, device: torch.device | str = "cpu") -> Checkpoint:
    """Build the model a checkpoint describes and load its weights; returns a :class:`Checkpoint`."""
    device = _device(device)
    path, header, raw = _read(path)
    meta = _metadata(path, header)
    model = Transformer.from_config(TransformerConfig(**meta["config"]))
    _check_tensors(path, header, model)
    _check_finite(path, raw)
    load_model(model, str(path), device=str(device))
    model.to(device).eval()
    vocabs = [vocab_from_dict(meta[k]) if k in meta else None for k in ("src_vocab", "tgt_vocab")]
    return Checkpoint(model, *vocabs, meta.get("info", {}))


def load_into(model: Transformer, path: str | os.PathLike) -> Transformer:
    """Load a checkpoint's weights into an existing model, which must have the same config."""
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a tx.Transformer, got {type(model).__name__}.")
    path, header, raw = _read(path)
    saved = TransformerConfig(**_metadata(path, header)["config"])
    if saved != model.config:
        diff = ", ".join(
            f"{k}: checkpoint {v!r} vs model {getattr(model.config, k)!r}"
            for k, v in saved.to_dict().items() if getattr(model.config, k) != v
        )
        raise ValueError(
            f"{path} was saved from a different configuration ({diff}). Build the model with "
            "tx.checkpoint.load(path), or with Transformer.from_config of the saved config."
        )
    _check_tensors(path, header, model)
    _check_finite(path, raw)  # before the model's own weights are replaced
    load_model(model, str(path), device=str(next(model.parameters()).device))
    return model


def _device(device: torch.device | str) -> torch.device:
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"device must be 'cpu', 'cuda' or a torch.device, got {device!r} ({e}).") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' but this machine has no CUDA GPU; load with device='cpu' (or tx.device()).")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        n = torch.cuda.device_count()
        raise ValueError(f"there is no {device}: this machine has {n} CUDA GPUs, cuda:0 to cuda:{n - 1}.")
    return device


# ----------------------------------------------------------------------------- language models

DECODER_ONLY_MODEL = Path(__file__).parent / "checkpoints" / "fr_en_decoder_only.safetensors"
"""Chapter 13's decoder-only French->English translator, written by ``python -m tx.lm_train --translate``."""


@dataclass
class LanguageModelCheckpoint:
    """What :func:`load_language_model` returns: the model, its one vocabulary and what training recorded."""

    model: Any  #: the :class:`~tx.language_model.LanguageModel`, its weights loaded, in eval mode
    vocab: Vocab | None  #: its one vocabulary (None when the file holds none)
    info: dict[str, Any] = field(default_factory=dict)  #: what training recorded: data, steps, scores


def save_language_model(
    path: str | os.PathLike, model: Any, vocab: Vocab | None = None, info: dict[str, Any] | None = None
) -> Path:
    """Write a :class:`~tx.language_model.LanguageModel`, its config, vocabulary and ``info``; as :func:`save`, no pickle."""
    from .language_model import LanguageModel

    if not isinstance(model, LanguageModel):
        raise TypeError(f"model must be a tx.LanguageModel, got {type(model).__name__}.")
    if vocab is not None and len(vocab) != model.config.vocab_size:
        raise ValueError(f"vocab has {len(vocab)} words but the model's vocab_size is {model.config.vocab_size}.")
    path = Path(path)
    check_writable(path)
    meta = {"format": "tx", "format_version": str(FORMAT_VERSION), "kind": "language_model",
            "config": json.dumps(model.config.to_dict()), "info": _info_json(info)}
    if vocab is not None:
        meta["vocab"] = json.dumps(vocab.to_dict(), ensure_ascii=False)
    _write(path, model, meta)
    return path


def load_language_model(path: str | os.PathLike = DECODER_ONLY_MODEL, device: torch.device | str = "cpu") -> LanguageModelCheckpoint:
    """Build the :class:`~tx.language_model.LanguageModel` a checkpoint describes and load its weights."""
    from .config import LanguageModelConfig
    from .language_model import LanguageModel

    device = _device(device)
    path, header, raw = _read(path)
    meta = header["__metadata__"]
    if meta.get("kind") != "language_model":
        raise ValueError(f"{path} holds an encoder-decoder tx.Transformer; load it with tx.checkpoint.load.")
    try:
        model = LanguageModel(_config(path, LanguageModelConfig, json.loads(meta["config"])))
        vocab = vocab_from_dict(json.loads(meta["vocab"])) if "vocab" in meta else None
        info = json.loads(meta.get("info", "{}"))
    except NewerFormatError:
        raise
    except (ValueError, TypeError, KeyError) as e:
        raise ValueError(f"{path} has damaged metadata ({e}); write it again with python -m tx.lm_train.") from None
    _check_tensors(path, header, model)
    _check_finite(path, raw)
    load_model(model, str(path), device=str(device))
    return LanguageModelCheckpoint(model.to(device).eval(), vocab, info)


__all__ += ["DECODER_ONLY_MODEL", "LanguageModelCheckpoint", "save_language_model", "load_language_model"]
