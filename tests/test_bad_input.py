"""Bad input and faults, tried as a user would: every one must give a clear error, never a wrong result.

One table, ``CASES``: each case sets up what it needs in a temporary folder (the user's files),
then makes one bad call. The test asserts the error's type, that its message names the problem
(a regular expression), and that no file in the folder changed. Command-line cases run
``python -m tx.train`` / ``python -m tx.exercises`` in-process with ``fit`` replaced by a tripwire,
so a case that got as far as training fails. After the table come the edge cases whose
behaviour is defined rather than an error (fully masked attention rows, line breaks inside a
corpus line, checkpoints without a checksum, file modes).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import struct
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from unittest import mock

import pytest
import torch

import tx
from tx import checkpoint, data, evaluate, train
from tx.cli import train as train_command  # python -m tx.train
from tx.data import Vocab
from tx.exercises import learner
from tx.train import TrainConfig

ROOT = Path(__file__).resolve().parents[1]
BOS, EOS = data.BOS_ID, data.EOS_ID
TINY = dict(src_vocab_size=13, tgt_vocab_size=11, d_model=32, n_heads=4, n_layers=2, d_ff=64, dropout=0.0, max_len=24)
SRC_VOCAB = Vocab([*data.SPECIALS, *[f"s{i}" for i in range(9)]])  # 13 words, as TINY's source side
TGT_VOCAB = Vocab([*data.SPECIALS, *[f"t{i}" for i in range(7)]])  # 11 words, as TINY's target side
PAIRS = [("s1 s2 s3", "t1 t2"), ("s4 s5", "t3 t4 t5"), ("s6", "t6")]


def tiny(**overrides: Any) -> tx.Transformer:
    torch.manual_seed(0)
    return tx.Transformer(**{**TINY, **overrides}).eval()


MODEL = tiny()
R = torch.randn  # shorthand for the tensor cases below
SRC = torch.tensor([[4, 5, 6, EOS]])


# ----------------------------------------------------------------------------- helpers


class CommandFailed(Exception):
    """A command line that stopped with a non-zero exit status; the message is what it printed."""


class TrainingStarted(Exception):
    """Raised by the tripwire put in place of tx.train.fit: the command got as far as training."""


def run_train(*argv: str) -> None:
    """``python -m tx.train ARGV`` in-process, training replaced by a tripwire; CommandFailed on exit != 0."""
    _run(train_command.main, argv, mock.patch.object(train, "fit", side_effect=TrainingStarted("training started")))


def run_learner(*argv: str) -> None:
    """``python -m tx.exercises ARGV`` in-process; CommandFailed on exit != 0."""
    _run(learner.main, argv, mock.patch.object(learner, "write_learner_edition", wraps=learner.write_learner_edition))


def _run(main: Callable, argv: tuple[str, ...], patch: Any) -> None:
    err = io.StringIO()
    with patch, redirect_stderr(err), redirect_stdout(io.StringIO()):
        try:
            main(list(argv))
        except SystemExit as e:
            if e.code not in (0, None):
                raise CommandFailed(f"exit status {e.code}: {err.getvalue()} {e.code if isinstance(e.code, str) else ''}") from None


def save_tiny(path: Path, **info: Any) -> Path:
    return checkpoint.save(path, MODEL, SRC_VOCAB, TGT_VOCAB, info=info)


def read_header(path: Path) -> tuple[dict, bytes]:
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + n]), raw[8 + n :]


def write_header(path: Path, header: dict, tensors: bytes) -> None:
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + tensors)


def edit_metadata(path: Path, key: str, change: Callable[[Any], Any]) -> Path:
    """Rewrite one JSON entry of a checkpoint's metadata (the tensors, and so their checksum, stay as they are)."""
    header, tensors = read_header(path)
    header["__metadata__"][key] = json.dumps(change(json.loads(header["__metadata__"][key])))
    write_header(path, header, tensors)
    return path


def damaged(tmp: Path, how: Callable[[bytes], bytes]) -> Path:
    path = save_tiny(tmp / "model.safetensors")
    path.write_bytes(how(path.read_bytes()))
    return path


def flip_tensor_bytes(raw: bytes) -> bytes:
    out = bytearray(raw)
    for i in range(len(raw) - 64, len(raw)):
        out[i] ^= 0xFF
    return bytes(out)


def tsv(tmp: Path, text: str | bytes, name: str = "corpus.tsv") -> Path:
    path = tmp / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def many_pairs(n: int, extra: str = "") -> str:
    """A TSV of n pairs with distinct sources, English first as in Tatoeba's fra.txt."""
    return "".join(f"word{i} here\tmot{i} ici\n" for i in range(n)) + extra


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folder``: its bytes and its mode."""
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mode)
        for p in sorted(folder.rglob("*")) if p.is_file()
    }


@dataclass
class Case:
    """``setup(tmp)`` prepares the user's files and returns the bad call; it must raise ``error`` matching ``match``."""

    id: str
    setup: Callable[[Path], Callable[[], Any]]
    error: type[BaseException]
    match: str


def call(fn: Callable, *args: Any, **kwargs: Any) -> Callable[[Path], Callable[[], Any]]:
    """A case that needs no files: ``fn(*args, **kwargs)``."""
    return lambda tmp: lambda: fn(*args, **kwargs)


def train_in(*argv: str) -> Callable[[Path], Callable[[], Any]]:
    """A command-line case whose --out lies in the case's folder, so files of the user's own never interfere."""
    return lambda tmp: lambda: run_train(*argv, "--out", str(tmp / "runs" / "m.safetensors"))


def decode_with_reused_cache() -> None:
    cache = MODEL.new_cache()
    first, second = torch.tensor([[4, 5, EOS]]), torch.tensor([[7, 8, EOS]])
    MODEL.decode(MODEL.encode(first), first, torch.tensor([[BOS]]), cache)
    MODEL.decode(MODEL.encode(second), second, torch.tensor([[BOS]]), cache)


def fit(pairs=PAIRS, valid=PAIRS, src_vocab=SRC_VOCAB, tgt_vocab=TGT_VOCAB, config=None, model=None) -> None:
    config = TrainConfig(steps=3, batch_size=2, warmup=1, eval_every=10) if config is None else config
    train.fit(model or tiny(), pairs, valid, src_vocab, tgt_vocab, config, progress=False)


def diverging_fit() -> None:
    pairs = data.copy_pairs(64, vocab_words=9, seed=0)
    sv = Vocab.build(s for s, _ in pairs)
    model = tiny(src_vocab_size=len(sv), tgt_vocab_size=len(sv), max_len=16)
    config = TrainConfig(steps=200, batch_size=16, warmup=10, lr_factor=1e6, eval_every=1000)
    train.fit(model, pairs, [], sv, sv, config, progress=False)


def overflow_cache() -> None:
    cache = tx.KVCache(3)
    for _ in range(2):
        cache.update(R(1, 2, 2, 4), R(1, 2, 2, 4))  # [B, H, t, Dh]: two positions a step


def mha(d_model: int = 32, n_heads: int = 4) -> tx.MultiHeadAttention:
    return tx.MultiHeadAttention(d_model, n_heads).eval()


def lm() -> tx.LanguageModel:
    torch.manual_seed(0)
    return tx.LanguageModel(tx.LanguageModelConfig(vocab_size=11, d_model=32, n_heads=4, n_layers=2, d_ff=64, max_len=24)).eval()


def with_nan(model: torch.nn.Module, name: str, value: float = math.nan) -> torch.nn.Module:
    """``model`` with one NaN (or ``value``) in the tensor called ``name``, as a diverged training leaves it."""
    with torch.no_grad():
        model.get_parameter(name).view(-1)[0] = value
    return model


NAN_TENSOR = "encoder.layers.0.feed_forward.linear1.weight"


def save_nan(tmp: Path) -> Path:
    return checkpoint.save(tmp / "nan.safetensors", with_nan(tiny(), NAN_TENSOR), SRC_VOCAB, TGT_VOCAB)


def save_nan_lm(tmp: Path) -> Path:
    return checkpoint.save_language_model(tmp / "lm.safetensors", with_nan(lm(), "layers.layers.1.self_attn.w_v.weight"))


def run_translate(*argv: str) -> None:
    """``python -m tx.translate ARGV`` in-process; CommandFailed on exit != 0."""
    _run(tx.translate.main, argv, contextlib.nullcontext())


def decode_a_second_memory_of_another_dtype() -> None:
    cache, memory = MODEL.new_cache(), MODEL.encode(SRC)
    MODEL.decode(memory, SRC, torch.tensor([[BOS]]), cache)
    MODEL.decode(memory.double(), SRC, torch.tensor([[4]]), cache)  # the same sentence, but float64


Cfg = tx.TransformerConfig

CASES = [
    # --- TransformerConfig and Transformer: every field, type and range
    Case("config-src-vocab-zero", call(Cfg, src_vocab_size=0, tgt_vocab_size=10), ValueError, r"src_vocab_size must be at least 1, got 0"),
    Case("config-tgt-vocab-negative", call(Cfg, src_vocab_size=10, tgt_vocab_size=-1), ValueError, r"tgt_vocab_size must be at least 1, got -1"),
    Case("config-d-model-zero", call(Cfg, src_vocab_size=10, tgt_vocab_size=10, d_model=0), ValueError, r"d_model must be at least 1, got 0"),
    Case("config-n-heads-zero", call(Cfg, src_vocab_size=10, tgt_vocab_size=10, n_heads=0), ValueError, r"n_heads must be at least 1, got 0"),
    Case("config-n-heads-negative", call(Cfg, src_vocab_size=10, tgt_vocab_size=10, n_heads=-2), ValueError, r"n_heads must be at least 1"),
    Case("config-heads-not-dividing", call(Cfg, src_vocab_size=10, tgt_vocab_size=10, d_model=10, n_heads=4), ValueError, r"d_model=10 is not divisible by n_heads=4"),
    Case("config-d-model-odd", call(Cfg, src_vocab_size=10, tgt_vocab_size=10, d_model=9, n_heads=3), ValueError, r"d_model must be even, got 9"),
    Case("config-n-layers-zero", call(Cfg, src_vocab_size=10, tgt_vocab_size=10, n_layers=0), ValueError, r"n_layers must be at least 1, got 0"),
    Case("config-d-ff-zero", call(Cfg, src_vocab_size=10, tgt_vocab_size=10, d_ff=0), ValueError, r"d_ff must be at least 1, got 0"),
    Case("config-max-len-zero", call(Cfg, src_vocab_size=10, tgt_vocab_size=10, max_len=0), ValueError, r"max_len must be at least 1, got 0"),
    Case("config-pad-id-negative", call(Cfg, src_vocab_size=10, tgt_vocab_size=10, pad_id=-1), ValueError, r"pad_id must be in \[0, 9\], got -1"),
    Case("config-pad-id-outside-vocab", call(Cfg, src_vocab_size=10, tgt_vocab_size=12, pad_id=10), ValueError, r"pad_id must be in \[0, 9\], got 10"),
    Case("config-dropout-one", call(Cfg, src_vocab_size=10, tgt_vocab_size=10, dropout=1.0), ValueError, r"dropout must be in \[0, 1\), got 1.0"),
    Case("config-dropout-negative", call(Cfg, src_vocab_size=10, tgt_vocab_size=10, dropout=-0.1), ValueError, r"dropout must be in \[0, 1\)"),
    Case("config-dropout-nan", call(Cfg, src_vocab_size=10, tgt_vocab_size=10, dropout=math.nan), ValueError, r"dropout must be a finite number"),
    Case("config-attention-dropout", call(Cfg, src_vocab_size=10, tgt_vocab_size=10, attention_dropout=1.5), ValueError, r"attention_dropout must be in \[0, 1\)"),
    Case("config-d-model-string", call(Cfg, src_vocab_size=10, tgt_vocab_size=10, d_model="512"), TypeError, r"d_model must be an int, got str"),
    Case("config-d-model-float", call(Cfg, src_vocab_size=10, tgt_vocab_size=10, d_model=128.0), TypeError, r"d_model must be an int, got float"),
    Case("config-n-layers-bool", call(Cfg, src_vocab_size=10, tgt_vocab_size=10, n_layers=True), TypeError, r"n_layers must be an int, got bool"),
    Case("config-share-string", call(Cfg, src_vocab_size=10, tgt_vocab_size=10, share_embeddings="yes"), TypeError, r"share_embeddings must be True or False"),
    Case("config-norm-first-int", call(Cfg, src_vocab_size=10, tgt_vocab_size=10, norm_first=1), TypeError, r"norm_first must be True or False"),
    Case("config-norm-unknown", call(Cfg, src_vocab_size=10, tgt_vocab_size=10, norm="batch"), ValueError, r"norm must be one of 'layer', 'rms', got 'batch'"),
    Case("config-activation-unknown", call(Cfg, src_vocab_size=10, tgt_vocab_size=10, activation="tanh"), ValueError, r"activation must be one of 'relu', 'gelu', got 'tanh'"),
    Case("config-share-different-vocabs", call(Cfg, src_vocab_size=10, tgt_vocab_size=12, share_embeddings=True), ValueError, r"share_embeddings=True .* vocabularies differ"),
    Case("config-small-bad-heads", call(Cfg.small, 10, 10, n_heads=3), ValueError, r"d_model=128 is not divisible by n_heads=3"),
    Case("transformer-n-heads-zero", call(tx.Transformer, src_vocab_size=10, tgt_vocab_size=10, d_model=32, n_heads=0), ValueError, r"n_heads must be at least 1"),
    Case("transformer-vocab-float", call(tx.Transformer, src_vocab_size=10.5, tgt_vocab_size=10), TypeError, r"src_vocab_size must be an int"),
    Case("transformer-positional-sizes", call(tx.Transformer, 10, 10), TypeError, r"Transformer takes a tx.TransformerConfig, or its fields as keywords"),
    # --- TrainConfig
    Case("train-steps-zero", call(TrainConfig, steps=0), ValueError, r"steps must be at least 1, got 0"),
    Case("train-steps-negative", call(TrainConfig, steps=-5), ValueError, r"steps must be at least 1, got -5"),
    Case("train-steps-float", call(TrainConfig, steps=1.5), TypeError, r"steps must be an int"),
    Case("train-batch-size-zero", call(TrainConfig, batch_size=0), ValueError, r"batch_size must be at least 1"),
    Case("train-warmup-zero", call(TrainConfig, warmup=0), ValueError, r"warmup must be at least 1, got 0"),
    Case("train-eval-every-zero", call(TrainConfig, eval_every=0), ValueError, r"eval_every must be at least 1, got 0"),
    Case("train-lr-factor-zero", call(TrainConfig, lr_factor=0), ValueError, r"lr_factor must be more than 0, got 0"),
    Case("train-lr-factor-negative", call(TrainConfig, lr_factor=-1.0), ValueError, r"lr_factor must be more than 0"),
    Case("train-lr-factor-inf", call(TrainConfig, lr_factor=math.inf), ValueError, r"lr_factor must be a finite number"),
    Case("train-smoothing-one", call(TrainConfig, label_smoothing=1.0), ValueError, r"label_smoothing must be in \[0, 1\)"),
    Case("train-smoothing-negative", call(TrainConfig, label_smoothing=-0.1), ValueError, r"label_smoothing must be in \[0, 1\)"),
    Case("train-clip-zero", call(TrainConfig, clip_norm=0), ValueError, r"clip_norm must be more than 0, got 0"),
    Case("train-clip-negative", call(TrainConfig, clip_norm=-1.0), ValueError, r"clip_norm must be more than 0"),
    Case("train-seed-huge", call(TrainConfig, seed=2**70), ValueError, r"seed must be in \[-9223372036854775808, 9223372036854775807\]"),
    Case("cli-seed-huge", train_in("--seed", str(2**70)), CommandFailed, r"seed must be in \["),
    Case("fit-callback-not-callable", call(train.fit, MODEL, PAIRS, PAIRS, SRC_VOCAB, TGT_VOCAB, TrainConfig(steps=2), False, "plot"), TypeError, r"callback must be a function"),
    Case("train-seed-string", call(TrainConfig, seed="0"), TypeError, r"seed must be an int, got str"),
    # --- training functions
    Case("rate-warmup-zero", call(train.rate, 1, 128, 0), ValueError, r"warmup must be at least 1, got 0"),
    Case("smoothed-targets-smoothing", call(train.smoothed_targets, torch.tensor([1]), 5, 1.2), ValueError, r"smoothing must be in \[0, 1\)"),
    Case("loss-logits-2d", call(train.loss_fn, R(4, 5), torch.zeros(4, dtype=torch.long)), ValueError, r"logits must have 3 dimensions"),
    Case("loss-shape-mismatch", call(train.loss_fn, R(2, 3, 5), torch.zeros(2, 4, dtype=torch.long)), ValueError, r"logits.shape\[:2\] is \(2, 3\) but target.shape is \(2, 4\)"),
    Case("fit-no-pairs", call(fit, pairs=[]), ValueError, r"fit needs training pairs"),
    Case("fit-pairs-string", call(fit, pairs="s1\tt1"), TypeError, r"train_pairs must be a list of \(source, target\) string pairs, got str"),
    Case("fit-pairs-not-strings", call(fit, pairs=[(1, 2)]), TypeError, r"train_pairs\[0\] must be a \(source, target\) pair of strings"),
    Case("fit-valid-not-pairs", call(fit, valid=[("only one",)]), TypeError, r"valid_pairs\[0\] must be a \(source, target\) pair"),
    Case("fit-config-dict", call(fit, config={"steps": 3}), TypeError, r"config must be a tx.train.TrainConfig, got dict"),
    Case("fit-vocabs-swapped", call(fit, src_vocab=TGT_VOCAB, tgt_vocab=SRC_VOCAB), ValueError, r"look swapped"),
    Case("fit-sentence-too-long", call(fit, pairs=PAIRS + [(" ".join(["s1"] * 30), "t1")]), ValueError, r"train_pairs\[3\]: the source sentence needs 31 positions .* max_len=24"),
    Case("fit-loss-diverges", call(diverging_fit), FloatingPointError, r"training loss became nan at step \d+.*Lower lr_factor \(now 1000000.0\)"),
    # --- attention and self_attention_by_vectors
    Case("attention-qk-width", call(tx.attention, R(2, 3, 4), R(2, 5, 6), R(2, 5, 6)), ValueError, r"query and key must have the same last size Dk"),
    Case("attention-kv-length", call(tx.attention, R(2, 3, 4), R(2, 5, 4), R(2, 6, 4)), ValueError, r"key has 5 positions .* value 6"),
    Case("attention-int-query", call(tx.attention, torch.ones(3, 4, dtype=torch.long), R(5, 4), R(5, 4)), TypeError, r"query must hold floating-point numbers, got torch.int64"),
    Case("attention-1d-query", call(tx.attention, R(4), R(5, 4), R(5, 4)), ValueError, r"query must have shape \[\.\.\., positions, features\]"),
    Case("attention-list-key", call(tx.attention, R(3, 4), [[1.0] * 4] * 5, R(5, 4)), TypeError, r"key must be a torch.Tensor, got list"),
    Case("attention-float-mask", call(tx.attention, R(3, 4), R(5, 4), R(5, 4), torch.ones(3, 5)), TypeError, r"mask must be a bool tensor"),
    Case("attention-mask-shape", call(tx.attention, R(3, 4), R(5, 4), R(5, 4), torch.ones(3, 4, dtype=torch.bool)), ValueError, r"mask of shape \(3, 4\) does not broadcast"),
    Case("attention-dropout-one", call(tx.attention, R(3, 4), R(5, 4), R(5, 4), None, 1.0), ValueError, r"dropout_p must be in \[0, 1\)"),
    Case("attention-dropout-negative", call(tx.attention, R(3, 4), R(5, 4), R(5, 4), None, -0.5), ValueError, r"dropout_p must be in \[0, 1\)"),
    Case("vectors-x-1d", call(tx.self_attention_by_vectors, R(4), R(4, 3), R(4, 3), R(4, 3)), ValueError, r"X must have 2 dimensions"),
    Case("vectors-w-mismatch", call(tx.self_attention_by_vectors, R(2, 4), R(5, 3), R(4, 3), R(4, 3)), ValueError, r"X.shape\[1\] is 4 but W_q.shape\[0\] is 5"),
    Case("vectors-qk-sizes", call(tx.self_attention_by_vectors, R(2, 4), R(4, 3), R(4, 2), R(4, 3)), ValueError, r"W_q.shape\[1\] is 3 but W_k.shape\[1\] is 2"),
    # --- multi-head attention, heads, caches
    Case("mha-n-heads-zero", call(tx.MultiHeadAttention, 32, 0), ValueError, r"n_heads must be at least 1, got 0"),
    Case("mha-not-divisible", call(tx.MultiHeadAttention, 30, 4), ValueError, r"d_model=30 is not divisible by n_heads=4"),
    Case("mha-dropout-one", call(tx.MultiHeadAttention, 32, 4, 1.0), ValueError, r"dropout must be in \[0, 1\)"),
    Case("mha-6-keys-7-values", call(mha(), R(1, 2, 32), R(1, 6, 32), R(1, 7, 32)), ValueError, r"key \(1, 6, 32\), value \(1, 7, 32\)"),
    Case("mha-query-width", call(mha(), R(1, 2, 16), R(1, 6, 32), R(1, 6, 32)), ValueError, r"query must have d_model=32 features, got shape \(1, 2, 16\)"),
    Case("mha-query-2d", call(mha(), R(2, 32), R(2, 32), R(2, 32)), ValueError, r"query must have 3 dimensions"),
    Case("mha-int-input", call(mha(), *(torch.ones(1, 2, 32, dtype=torch.long),) * 3), TypeError, r"query must hold floating-point numbers"),
    Case("mha-float64-inputs", call(mha(), *(R(1, 2, 32).double(),) * 3), TypeError, r"query holds torch.float64 numbers but the attention layer's weights are torch.float32"),
    Case("mha-float64-memory", call(mha(), R(1, 2, 32), R(1, 6, 32).double(), R(1, 6, 32).double()), TypeError, r"key holds torch.float64 numbers but the attention layer's weights"),
    Case("mha-batch-mismatch", call(mha(), R(2, 3, 32), R(1, 6, 32), R(1, 6, 32)), ValueError, r"must share B"),
    Case("mha-mask-shape", call(mha(), R(1, 3, 32), R(1, 6, 32), R(1, 6, 32), torch.ones(3, 5, dtype=torch.bool)), ValueError, r"does not broadcast to the attention scores"),
    Case("mha-mask-int", call(mha(), R(1, 3, 32), R(1, 6, 32), R(1, 6, 32), torch.ones(3, 6, dtype=torch.long)), TypeError, r"mask must be a bool tensor .*got torch.int64"),
    Case("split-heads-2d", call(tx.split_heads, R(3, 8), 2), ValueError, r"x must have 3 dimensions, got shape \(3, 8\)"),
    Case("split-heads-not-divisible", call(tx.split_heads, R(1, 3, 10), 4), ValueError, r"d_model=10 is not divisible by n_heads=4"),
    Case("merge-heads-3d", call(tx.merge_heads, R(1, 3, 8)), ValueError, r"x must have 4 dimensions"),
    Case("kv-cache-max-len-zero", call(tx.KVCache, 0), ValueError, r"max_len must be at least 1, got 0"),
    Case("kv-cache-overflow", call(overflow_cache), ValueError, r"cache holds 3 positions and step would reach 4"),
    Case("decoder-cache-layers-zero", call(tx.DecoderCache, 0, 10), ValueError, r"n_layers must be at least 1"),
    # --- layers, masks, positional encoding, stacks
    Case("dropout-p-one", call(tx.Dropout, 1.0), ValueError, r"dropout probability p must be in \[0, 1\)"),
    Case("feed-forward-d-ff-zero", call(lambda: tx.FeedForward(tx.LayerConfig(d_model=32, d_ff=0))), ValueError, r"d_ff must be at least 1, got 0"),
    Case("residual-norm-first-string", call(lambda: tx.Residual(tx.LayerConfig(d_model=32, dropout=0.1, norm_first="no"))), TypeError, r"norm_first must be True or False"),
    Case("positional-odd", call(tx.positional_encoding, 10, 7), ValueError, r"d_model must be even"),
    Case("positional-max-len-zero", call(tx.positional_encoding, 0, 8), ValueError, r"max_len must be at least 1"),
    Case("embedding-vocab-zero", call(tx.Embedding, 0, 8, 10), ValueError, r"vocab_size must be at least 1"),
    Case("embedding-past-table", call(tx.Embedding(10, 8, 4), torch.ones(1, 5, dtype=torch.long)), ValueError, r"past the positional table's 4 rows"),
    Case("causal-mask-zero", call(tx.causal_mask, 0), ValueError, r"T must be at least 1, got 0"),
    Case("causal-mask-float", call(tx.causal_mask, 2.5), TypeError, r"T must be an int"),
    Case("padding-mask-1d", call(tx.padding_mask, torch.tensor([1, 2, 0])), ValueError, r"tokens must have 2 dimensions"),
    Case("encoder-no-layers", call(lambda: tx.Encoder(tx.LayerConfig(n_layers=0, d_model=32, n_heads=4, d_ff=64))), ValueError, r"n_layers must be at least 1"),
    Case("decoder-no-layers", call(lambda: tx.Decoder(tx.LayerConfig(n_layers=0, d_model=32, n_heads=4, d_ff=64))), ValueError, r"n_layers must be at least 1"),
    # --- the model
    Case("model-src-float", call(MODEL, torch.ones(1, 3), torch.ones(1, 2, dtype=torch.long)), TypeError, r"src must hold integer token ids"),
    Case("model-src-1d", call(MODEL, torch.tensor([4, 5]), torch.tensor([[1, 4]])), ValueError, r"src must have shape \[batch, length\]"),
    Case("model-src-id-too-big", call(MODEL, torch.tensor([[4, 13]]), torch.tensor([[1, 4]])), ValueError, r"src holds token id 13, outside the vocabulary of 13 tokens \(ids 0..12\)"),
    Case("model-tgt-id-negative", call(MODEL, SRC, torch.tensor([[1, -1]])), ValueError, r"tgt holds token id -1"),
    Case("model-src-empty", call(MODEL, torch.zeros(0, 3, dtype=torch.long), torch.ones(0, 2, dtype=torch.long)), ValueError, r"src is empty"),
    Case("model-tgt-too-long", call(MODEL, SRC, torch.ones(1, 25, dtype=torch.long)), ValueError, r"tgt reaches position 25 but the model's max_len is 24"),
    Case("model-src-list", call(MODEL, [[4, 5]], torch.tensor([[1]])), TypeError, r"src must be a torch.Tensor of token ids, got list"),
    # --- id dtypes and ranges, float dtypes, at every entry point
    Case("model-src-uint8", call(MODEL, SRC.to(torch.uint8), torch.tensor([[1]])), TypeError, r"src must hold integer token ids as torch.long \(or torch.int32\).*got torch.uint8\. Convert ids stored as torch.uint8 with `.long\(\)`"),
    Case("model-tgt-int16", call(MODEL, SRC, torch.tensor([[1]], dtype=torch.int16)), TypeError, r"tgt must hold integer token ids as torch.long .*got torch.int16"),
    Case("model-src-bool", call(MODEL, SRC.bool(), torch.tensor([[1]])), TypeError, r"src must hold integer token ids .*got torch.bool\. Encode text with the model's vocabulary"),
    Case("decode-memory-float64", call(MODEL.decode, MODEL.encode(SRC).double(), SRC, torch.tensor([[1]])), TypeError, r"memory holds torch.float64 numbers but the model's weights are torch.float32.*Convert it with `.to\(torch.float32\)`"),
    Case("decode-memory-float64-cached", call(MODEL.decode, MODEL.encode(SRC).double(), SRC, torch.tensor([[1]]), MODEL.new_cache()), TypeError, r"memory holds torch.float64 numbers"),
    Case("decode-memory-other-dtype-later", call(decode_a_second_memory_of_another_dtype), TypeError, r"memory holds torch.float64 numbers but the model's weights are torch.float32"),
    Case("decode-memory-bfloat16", call(MODEL.decode, MODEL.encode(SRC).bfloat16(), SRC, torch.tensor([[1]])), TypeError, r"memory holds torch.bfloat16 numbers"),
    Case("embedding-id-at-vocab-size", call(tx.Embedding(10, 8, 4), torch.tensor([[3, 10]])), ValueError, r"tokens holds token id 10, outside the vocabulary of 10 tokens \(ids 0..9\)"),
    Case("embedding-id-negative", call(tx.Embedding(10, 8, 4), torch.tensor([[-2, 3]])), ValueError, r"tokens holds token id -2, outside the vocabulary of 10 tokens"),
    Case("embedding-uint8", call(tx.Embedding(10, 8, 4), torch.tensor([[3, 4]], dtype=torch.uint8)), TypeError, r"tokens must hold integer token ids as torch.long .*got torch.uint8"),
    Case("embedding-float-ids", call(tx.Embedding(10, 8, 4), torch.tensor([[3.0, 4.0]])), TypeError, r"tokens must hold integer token ids .*got torch.float32\. Encode text"),
    Case("encoder-x-float64", call(MODEL.encoder, R(1, 3, 32).double()), TypeError, r"x holds torch.float64 numbers but the encoder's weights are torch.float32"),
    Case("decoder-memory-float64", call(MODEL.decoder, R(1, 2, 32), R(1, 3, 32).double()), TypeError, r"memory holds torch.float64 numbers but the decoder's weights are torch.float32"),
    Case("decoder-x-half", call(MODEL.decoder, R(1, 2, 32).half(), R(1, 3, 32)), TypeError, r"x holds torch.float16 numbers but the decoder's weights are torch.float32"),
    Case("lm-tokens-uint8", call(lambda: lm()(torch.tensor([[1, 4, 5]], dtype=torch.uint8))), TypeError, r"tokens must hold integer token ids as torch.long .*got torch.uint8"),
    Case("lm-token-id-at-vocab-size", call(lambda: lm()(torch.tensor([[1, 11]]))), ValueError, r"tokens holds token id 11, outside the vocabulary of 11 tokens"),
    Case("generate-prompt-uint8", call(lambda: tx.generate(lm(), torch.tensor([[1, 4]], dtype=torch.uint8), 3)), TypeError, r"prompt must hold integer token ids as torch.long .*got torch.uint8"),
    Case("generate-prompt-id-too-big", call(lambda: tx.generate(lm(), torch.tensor([[1, 40]]), 3)), ValueError, r"prompt holds token id 40, outside the vocabulary of 11 tokens"),
    Case("greedy-src-uint8", call(tx.greedy_decode, MODEL, SRC.to(torch.uint8), 5, BOS, EOS), TypeError, r"src must hold integer token ids as torch.long .*got torch.uint8"),
    Case("greedy-src-id-too-big", call(tx.greedy_decode, MODEL, torch.tensor([[4, 99]]), 5, BOS, EOS), ValueError, r"src holds token id 99, outside the vocabulary of 13 tokens"),
    Case("beam-src-uint8", call(tx.beam_search, MODEL, SRC.to(torch.uint8), 2, 5, BOS, EOS), TypeError, r"src must hold integer token ids as torch.long .*got torch.uint8"),
    Case("beam-src-id-negative", call(tx.beam_search, MODEL, torch.tensor([[4, -3]]), 2, 5, BOS, EOS), ValueError, r"src holds token id -3"),
    Case("vision-images-float64", call(lambda: tx.vision.VisionTransformer()(R(2, 1, 8, 8).double())), TypeError, r"images holds torch.float64 numbers but the model's weights are torch.float32"),
    Case("vision-patches-float64", call(lambda: tx.vision.VisionTransformer().encode(R(2, 16, 4).double())), TypeError, r"patches holds torch.float64 numbers"),
    Case("vision-label-past-classes", call(lambda: tx.vision.classification_loss(R(2, 10), torch.tensor([3, 10]))), ValueError, r"labels holds class 10, but the logits score 10 classes \(0..9\)"),
    Case("vision-labels-uint8", call(lambda: tx.vision.classification_loss(R(2, 10), torch.tensor([3, 4], dtype=torch.uint8))), TypeError, r"labels must hold class ids as torch.long, got torch.uint8"),
    Case("decode-memory-shape", call(MODEL.decode, R(1, 4, 16), SRC, torch.tensor([[1]])), ValueError, r"memory must be model.encode\(src\)"),
    Case("decode-batch-mismatch", call(MODEL.decode, R(1, 4, 32), SRC, torch.tensor([[1], [1]])), ValueError, r"for the same B sentences as tgt"),
    Case("decode-memory-int", call(MODEL.decode, torch.ones(1, 4, 32, dtype=torch.long), SRC, torch.tensor([[1]])), TypeError, r"memory must hold floating-point numbers"),
    Case("decode-cache-reused", call(decode_with_reused_cache), ValueError, r"already holds the keys and values of another memory"),
    Case("decode-cache-not-a-cache", call(MODEL.decode, MODEL.encode(SRC), SRC, torch.tensor([[1]]), tx.KVCache(5)), TypeError, r"cache must be a DecoderCache from model.new_cache\(\), got KVCache"),
    Case("decode-cache-other-model", call(MODEL.decode, MODEL.encode(SRC), SRC, torch.tensor([[1]]), tiny(n_layers=1).new_cache()), ValueError, r"the cache has 1 decoder layers but this model has 2"),
    Case("greedy-not-a-model", call(tx.greedy_decode, torch.nn.Linear(2, 2), SRC, 5, BOS, EOS), TypeError, r"model must offer encode, decode, new_cache and config"),
    Case("attention-batch-axes", call(tx.attention, R(2, 3, 4), R(3, 5, 4), R(3, 5, 4)), ValueError, r"leading \(batch, head\) axes .* do not broadcast"),
    Case("new-cache-zero", call(MODEL.new_cache, 0), ValueError, r"max_len must be at least 1, got 0"),
    # --- decoding
    Case("greedy-max-len-zero", call(tx.greedy_decode, MODEL, SRC, 0, BOS, EOS), ValueError, r"max_len must be at least 1"),
    Case("greedy-max-len-too-big", call(tx.greedy_decode, MODEL, SRC, 100, BOS, EOS), ValueError, r"exceeds the model's max_len=24"),
    Case("greedy-max-len-float", call(tx.greedy_decode, MODEL, SRC, 5.0, BOS, EOS), TypeError, r"max_len must be an int"),
    Case("greedy-eos-outside-vocab", call(tx.greedy_decode, MODEL, SRC, 5, BOS, 11), ValueError, r"eos_id \(an id of the target vocabulary, or -1 to never stop\) must be in \[-1, 10\], got 11"),
    Case("greedy-bos-negative", call(tx.greedy_decode, MODEL, SRC, 5, -1, EOS), ValueError, r"bos_id .* must be in \[0, 10\], got -1"),
    Case("greedy-src-list", call(tx.greedy_decode, MODEL, [[4, 5]], 5, BOS, EOS), TypeError, r"src must be a torch.Tensor"),
    Case("greedy-src-3d", call(tx.greedy_decode, MODEL, SRC[None], 5, BOS, EOS), ValueError, r"src must have 2 dimensions"),
    Case("beam-size-zero", call(tx.beam_search, MODEL, SRC, 0, 5, BOS, EOS), ValueError, r"beam_size must be at least 1, got 0"),
    Case("beam-n-best-too-many", call(tx.beam_search, MODEL, SRC, 2, 5, BOS, EOS, n_best=3), ValueError, r"n_best .* must be in \[1, 2\], got 3"),
    Case("beam-length-penalty-nan", call(tx.beam_search, MODEL, SRC, 2, 5, BOS, EOS, length_penalty=math.nan), ValueError, r"length_penalty must be a finite number"),
    Case("beam-trace-not-list", call(tx.beam_search, MODEL, SRC, 2, 5, BOS, EOS, trace="x"), TypeError, r"trace must be a list"),
    Case("beam-eos-outside-vocab", call(tx.beam_search, MODEL, SRC, 2, 5, BOS, 50), ValueError, r"eos_id .* got 50"),
    Case("greedy-eos-below-minus-one", call(tx.greedy_decode, MODEL, SRC, 5, BOS, -2), ValueError, r"eos_id .* must be in \[-1, 10\], got -2"),
    Case("beam-max-len-zero", call(tx.beam_search, MODEL, SRC, 2, 0, BOS, EOS), ValueError, r"max_len must be at least 1"),
    # --- translate and evaluate
    Case("translate-string", call(evaluate.translate, MODEL, "s1 s2", SRC_VOCAB, TGT_VOCAB), TypeError, r"sentences must be a list of strings, got the string 's1 s2'.*pass \['s1 s2'\]"),
    Case("translate-ints", call(evaluate.translate, MODEL, [1, 2], SRC_VOCAB, TGT_VOCAB), TypeError, r"sentences must be a list of strings"),
    Case("translate-vocabs-swapped", call(evaluate.translate, MODEL, ["s1"], TGT_VOCAB, SRC_VOCAB), ValueError, r"src_vocab has 11 words but the model's src_vocab_size is 13: .*look swapped"),
    Case("translate-vocab-other-corpus", call(evaluate.translate, MODEL, ["s1"], Vocab([*data.SPECIALS, "x"]), TGT_VOCAB), ValueError, r"src_vocab has 5 words but the model's src_vocab_size is 13\. Pass the vocabularies"),
    Case("translate-vocab-not-vocab", call(evaluate.translate, MODEL, ["s1"], {"s1": 4}, TGT_VOCAB), TypeError, r"src_vocab must be a tx.data.Vocab \(words\) or a tx.subwords.SubwordVocab \(subwords\), got dict"),
    Case("translate-max-len-zero", call(evaluate.translate, MODEL, ["s1"], SRC_VOCAB, TGT_VOCAB, max_len=0), ValueError, r"max_len must be at least 1"),
    Case("translate-batch-size-negative", call(evaluate.translate, MODEL, ["s1"], SRC_VOCAB, TGT_VOCAB, batch_size=-1), ValueError, r"batch_size must be at least 1, got -1"),
    Case("translate-beam-zero", call(evaluate.translate, MODEL, ["s1"], SRC_VOCAB, TGT_VOCAB, beam_size=0), ValueError, r"beam_size must be at least 1, got 0"),
    Case("translate-too-long", call(evaluate.translate, MODEL, ["s1", "s2 " * 30], SRC_VOCAB, TGT_VOCAB), ValueError, r"sentence 1 has 30 words.*max_len of 24"),
    Case("evaluate-no-pairs", call(evaluate.evaluate, MODEL, [], SRC_VOCAB, TGT_VOCAB), ValueError, r"pairs is empty"),
    Case("evaluate-sentences-not-pairs", call(evaluate.evaluate, MODEL, ["s1", "s2"], SRC_VOCAB, TGT_VOCAB), TypeError, r"pairs\[0\] must be a \(source, target\) pair of strings"),
    Case("exact-match-lengths", call(evaluate.exact_match, ["a"], ["a", "b"]), ValueError, r"one hypothesis per reference"),
    Case("bleu-empty", call(evaluate.bleu, [], []), ValueError, r"at least one pair"),
    # --- vocabularies, corpora, batches
    Case("vocab-no-specials", call(Vocab, ["a", "b"]), ValueError, r"first four tokens must be the specials"),
    Case("vocab-repeated", call(Vocab, [*data.SPECIALS, "a", "a"]), ValueError, r"repeated: \['a'\]"),
    Case("vocab-build-string", call(Vocab.build, "le chat noir"), TypeError, r"sentences must be a list of strings, got the string 'le chat noir'"),
    Case("vocab-min-freq-zero", call(Vocab.build, ["a"], 0), ValueError, r"min_freq must be >= 1"),
    Case("vocab-encode-int", call(SRC_VOCAB.encode, 42), TypeError, r"text must be a str, got int"),
    Case("vocab-id-out-of-range", call(SRC_VOCAB.decode, [4, 99]), ValueError, r"id 99 is out of range for a vocabulary of 13 tokens"),
    Case("vocab-decode-2d", call(SRC_VOCAB.decode, torch.ones(2, 2, dtype=torch.long)), ValueError, r"expected a 1-D tensor of ids"),
    Case("split-fractions", call(data.split_corpus, PAIRS, 0, 0.6, 0.5), ValueError, r"sum to less than 1"),
    Case("split-empty", call(data.split_corpus, []), ValueError, r"got no sentence pairs"),
    Case("split-too-few-sources", call(data.split_corpus, [("a", "b")] * 40), ValueError, r"too few to hold out"),
    Case("split-pairs-not-pairs", call(data.split_corpus, ["a\tb"] * 5), TypeError, r"pairs\[0\] must be a \(source, target\) pair"),
    Case("batches-size-zero", call(data.batches, PAIRS, SRC_VOCAB, TGT_VOCAB, 0), ValueError, r"batch_size must be at least 1, got 0"),
    Case("batches-empty", call(data.batches, [], SRC_VOCAB, TGT_VOCAB, 2), ValueError, r"got no sentence pairs"),
    Case("batches-string", call(data.batches, "s1\tt1", SRC_VOCAB, TGT_VOCAB, 2), TypeError, r"pairs\[0\] must be a \(source, target\) pair"),
    Case("pad-nothing", call(data.pad, []), ValueError, r"needs at least one sequence"),
    Case("copy-pairs-bad", call(data.copy_pairs, 5, min_len=4, max_len=2), ValueError, r"1 <= min_len <= max_len"),
    Case("corpus-phrase-repeats", call(data.load_corpus, phrase_repeats=0), ValueError, r"phrase_repeats must be at least 1"),
    Case("corpus-too-many-pairs", call(data.load_corpus, n_pairs=10**9), ValueError, r"n_pairs must be between"),
    Case("grammar-n-pairs-string", call(tx.grammar.generate_pairs, 0, "100"), TypeError, r"n_pairs must be an int, got str"),
    # --- reading a corpus file
    Case("tsv-missing", lambda tmp: lambda: data.load_parallel_tsv(tmp / "nope.tsv"), FileNotFoundError, r"no parallel corpus at .*nope.tsv"),
    Case("tsv-directory", lambda tmp: lambda: data.load_parallel_tsv(tmp), IsADirectoryError, r"is a folder; give the corpus file"),
    Case("tsv-latin1", lambda tmp: (p := tsv(tmp, "hello\tbonjour\nwhy\tpourquoi\nyes\tcaf\xe9\n".encode("latin-1"))) and (lambda: data.load_parallel_tsv(p)), ValueError, r"corpus.tsv, line 3: byte 0xe9 is not UTF-8.*iconv"),
    Case("tsv-utf16", lambda tmp: (p := tsv(tmp, "hello\tbonjour\n".encode("utf-16"))) and (lambda: data.load_parallel_tsv(p)), ValueError, r"corpus.tsv is UTF-16"),
    Case("tsv-empty-source", lambda tmp: (p := tsv(tmp, "hello\tbonjour\nthanks\t \n")) and (lambda: data.load_parallel_tsv(p)), ValueError, r"line 2: the source sentence is empty"),
    Case("tsv-empty-target", lambda tmp: (p := tsv(tmp, "\tbonjour\n")) and (lambda: data.load_parallel_tsv(p)), ValueError, r"line 1: the target sentence is empty"),
    Case("tsv-one-column", lambda tmp: (p := tsv(tmp, "hello\tbonjour\nhello bonjour\n")) and (lambda: data.load_parallel_tsv(p)), ValueError, r"line 2: expected at least two tab-separated columns"),
    Case("tsv-too-long", lambda tmp: (p := tsv(tmp, "hi\tsalut\n" + "word " * 80 + "\tmot\n")) and (lambda: data.load_parallel_tsv(p, max_tokens=63)), ValueError, r"line 2: the target sentence has 80 tokens, more than the 63"),
    Case("tsv-empty-file", lambda tmp: (p := tsv(tmp, "\n\n")) and (lambda: data.load_parallel_tsv(p)), ValueError, r"holds no sentence pairs"),
    Case("tsv-negative-column", lambda tmp: (p := tsv(tmp, "a\tb\n")) and (lambda: data.load_parallel_tsv(p, src_column=-1)), ValueError, r"src_column must be at least 0"),
    # --- checkpoints: saving
    Case("save-vocabs-swapped", lambda tmp: lambda: checkpoint.save(tmp / "m.safetensors", MODEL, TGT_VOCAB, SRC_VOCAB), ValueError, r"look swapped"),
    Case("save-vocab-wrong-size", lambda tmp: lambda: checkpoint.save(tmp / "m.safetensors", MODEL, SRC_VOCAB, SRC_VOCAB), ValueError, r"tgt_vocab has 13 words but the model's tgt_vocab_size is 11"),
    Case("save-to-directory", lambda tmp: lambda: save_tiny(tmp), IsADirectoryError, r"is a directory; give a file path"),
    Case("save-parent-is-file", lambda tmp: (tmp / "f").write_text("mine") and (lambda: save_tiny(tmp / "f" / "m.safetensors")), NotADirectoryError, r"f is a file, not a folder"),
    Case("save-info-not-json", lambda tmp: lambda: save_tiny(tmp / "m.safetensors", when=object()), TypeError, r"info must hold JSON-safe values"),
    Case("save-not-a-model", lambda tmp: lambda: checkpoint.save(tmp / "m.safetensors", torch.nn.Linear(2, 2)), TypeError, r"model must be a tx.Transformer, got Linear"),
    Case("save-over-good-file-fails-early", lambda tmp: save_tiny(tmp / "m.safetensors") and (lambda: checkpoint.save(tmp / "m.safetensors", MODEL, TGT_VOCAB, SRC_VOCAB)), ValueError, r"look swapped"),
    # --- checkpoints: loading damaged or inconsistent files
    Case("load-missing", lambda tmp: lambda: checkpoint.load(tmp / "nope.safetensors"), FileNotFoundError, r"no checkpoint at .*nope.safetensors.*python -m tx.train"),
    Case("load-directory", lambda tmp: save_tiny(tmp / "m.safetensors") and (lambda: checkpoint.load(tmp)), IsADirectoryError, r"is a folder, not a checkpoint file \(it holds m.safetensors\); give the path of the .safetensors file itself"),
    Case("load-empty-directory", lambda tmp: lambda: checkpoint.load(tmp), IsADirectoryError, r"is a folder, not a checkpoint file \(it holds no .safetensors file\)"),
    Case("load-into-directory", lambda tmp: lambda: checkpoint.load_into(tiny(), tmp), IsADirectoryError, r"is a folder, not a checkpoint file"),
    Case("load-language-model-directory", lambda tmp: lambda: checkpoint.load_language_model(tmp), IsADirectoryError, r"is a folder, not a checkpoint file"),
    Case("cli-translate-directory", lambda tmp: lambda: run_translate(str(tmp), "s1"), CommandFailed, r"exit status 2.*is a folder, not a checkpoint file"),
    # --- weights that hold NaN (a training that diverged, a damaged copy): refused where they are loaded or handed over
    Case("load-nan-weights", lambda tmp: save_nan(tmp) and (lambda: checkpoint.load(tmp / "nan.safetensors")), ValueError, rf"nan.safetensors holds NaN or inf in 1 weight tensor\(s\): {NAN_TENSOR} \(1 NaN and 0 inf of 2048 numbers\).*earlier checkpoint.*lower lr_factor.*safetensors.torch.load_file"),
    Case("load-into-nan-weights", lambda tmp: save_nan(tmp) and (lambda: checkpoint.load_into(tiny(), tmp / "nan.safetensors")), ValueError, rf"holds NaN or inf in 1 weight tensor\(s\): {NAN_TENSOR}"),
    Case("load-language-model-nan", lambda tmp: save_nan_lm(tmp) and (lambda: checkpoint.load_language_model(tmp / "lm.safetensors")), ValueError, r"lm.safetensors holds NaN or inf in 1 weight tensor\(s\): layers.layers.1.self_attn.w_v.weight"),
    Case("cli-translate-nan", lambda tmp: save_nan(tmp) and (lambda: run_translate(str(tmp / "nan.safetensors"), "s1 s2")), CommandFailed, rf"exit status 2.*holds NaN or inf in 1 weight tensor\(s\): {NAN_TENSOR}"),
    Case("export-nan", lambda tmp: save_nan(tmp) and (lambda: tx.export.export(tmp / "nan.safetensors", tmp / "site")), ValueError, rf"holds NaN or inf .*{NAN_TENSOR}"),
    Case("translate-nan-model", call(lambda: evaluate.translate(with_nan(tiny(), "generator.bias"), ["s1"], SRC_VOCAB, TGT_VOCAB)), ValueError, r"the model holds NaN or inf in 1 weight tensor\(s\): generator.bias"),
    Case("evaluate-inf-model", call(lambda: evaluate.evaluate(with_nan(tiny(), "decoder.layers.1.cross_attn.w_k.bias", -math.inf), PAIRS, SRC_VOCAB, TGT_VOCAB)), ValueError, r"decoder.layers.1.cross_attn.w_k.bias \(0 NaN and 1 inf of 32 numbers\)"),
    Case("export-language-model-nan", lambda tmp: lambda: tx.export.export_language_model(with_nan(lm(), "embed.token.weight"), Vocab([*data.SPECIALS, *[f"w{i}" for i in range(7)]]), tmp / "site"), ValueError, r"embed.token.weight \(1 NaN"),
    Case("export-vision-nan", lambda tmp: lambda: tx.export.export_vision(with_nan(tx.vision.VisionTransformer(), "head.bias"), tmp / "site"), ValueError, r"the model holds NaN or inf in 1 weight tensor\(s\): head.bias"),
    Case("load-empty", lambda tmp: damaged(tmp, lambda raw: b"") and (lambda: checkpoint.load(tmp / "model.safetensors")), ValueError, r"model.safetensors is empty \(0 bytes\)"),
    Case("load-truncated", lambda tmp: damaged(tmp, lambda raw: raw[: len(raw) // 2]) and (lambda: checkpoint.load(tmp / "model.safetensors")), ValueError, r"model.safetensors is truncated"),
    Case("load-truncated-header", lambda tmp: damaged(tmp, lambda raw: raw[:100]) and (lambda: checkpoint.load(tmp / "model.safetensors")), ValueError, r"model.safetensors has a damaged or truncated header"),
    Case("load-header-garbage", lambda tmp: damaged(tmp, lambda raw: raw[:8] + b"#" * 40 + raw[48:]) and (lambda: checkpoint.load(tmp / "model.safetensors")), ValueError, r"model.safetensors has a damaged or truncated header"),
    Case("load-pickled", lambda tmp: torch.save(MODEL.state_dict(), tmp / "model.safetensors") or (lambda: checkpoint.load(tmp / "model.safetensors")), ValueError, r"model.safetensors is a pickled torch.save file"),
    Case("load-flipped-tensor-bytes", lambda tmp: damaged(tmp, flip_tensor_bytes) and (lambda: checkpoint.load(tmp / "model.safetensors")), ValueError, r"model.safetensors is damaged: its tensor bytes do not match the checksum"),
    Case("load-foreign-safetensors", lambda tmp: __import__("safetensors.torch").torch.save_file({"w": torch.zeros(2)}, str(tmp / "w.safetensors")) or (lambda: checkpoint.load(tmp / "w.safetensors")), ValueError, r"not a tx checkpoint"),
    Case("load-header-config-size", lambda tmp: edit_metadata(save_tiny(tmp / "m.safetensors"), "config", lambda c: {**c, "d_ff": 128}) and (lambda: checkpoint.load(tmp / "m.safetensors")), ValueError, r"m.safetensors: tensor '.*' has shape .* but the config saved with it needs"),
    Case("load-header-config-layers", lambda tmp: edit_metadata(save_tiny(tmp / "m.safetensors"), "config", lambda c: {**c, "n_layers": 3}) and (lambda: checkpoint.load(tmp / "m.safetensors")), ValueError, r"m.safetensors lacks the tensor 'encoder.layers.2"),
    Case("load-vocab-size-disagrees", lambda tmp: edit_metadata(save_tiny(tmp / "m.safetensors"), "src_vocab", lambda v: {"itos": v["itos"] + ["extra"]}) and (lambda: checkpoint.load(tmp / "m.safetensors")), ValueError, r"m.safetensors has damaged metadata \(src_vocab has 14 words but the model's src_vocab_size is 13"),
    Case("load-pad-id-disagrees", lambda tmp: edit_metadata(save_tiny(tmp / "m.safetensors"), "config", lambda c: {**c, "pad_id": 3}) and (lambda: checkpoint.load(tmp / "m.safetensors")), ValueError, r"src_vocab pads with id 0 but the model's pad_id is 3"),
    Case("load-config-unknown-field", lambda tmp: edit_metadata(save_tiny(tmp / "m.safetensors"), "config", lambda c: {**c, "flavour": "x"}) and (lambda: checkpoint.load(tmp / "m.safetensors")), ValueError, r"m.safetensors was written by a newer tx \(its config sets flavour, which this tx's TransformerConfig does not have\)\. Update tx"),
    Case("load-config-bad-value", lambda tmp: edit_metadata(save_tiny(tmp / "m.safetensors"), "config", lambda c: {**c, "n_heads": 0}) and (lambda: checkpoint.load(tmp / "m.safetensors")), ValueError, r"damaged metadata \(n_heads must be at least 1"),
    Case("load-device-nonsense", lambda tmp: lambda: checkpoint.load(device="gpu please"), ValueError, r"device must be 'cpu', 'cuda' or a torch.device"),
    Case("load-device-missing-gpu", lambda tmp: lambda: checkpoint.load(device="cuda" if not torch.cuda.is_available() else "cuda:99"), ValueError, r"no CUDA GPU; load with device='cpu'|there is no cuda:99"),
    Case("load-into-other-config", lambda tmp: save_tiny(tmp / "m.safetensors") and (lambda: checkpoint.load_into(tiny(d_model=16), tmp / "m.safetensors")), ValueError, r"saved from a different configuration \(d_model: checkpoint 32 vs model 16\)"),
    Case("load-into-not-a-model", lambda tmp: save_tiny(tmp / "m.safetensors") and (lambda: checkpoint.load_into(torch.nn.Linear(2, 2), tmp / "m.safetensors")), TypeError, r"model must be a tx.Transformer"),
    Case("read-metadata-truncated", lambda tmp: damaged(tmp, lambda raw: raw[:5]) and (lambda: checkpoint.read_metadata(tmp / "model.safetensors")), ValueError, r"model.safetensors is truncated \(5 bytes\)"),
    # --- python -m tx.train: every failure before training starts
    Case("cli-steps-zero", train_in("--steps", "0"), CommandFailed, r"exit status 2.*--steps must be at least 1, got 0"),
    Case("cli-steps-negative", train_in("--steps", "-3"), CommandFailed, r"--steps must be at least 1, got -3"),
    Case("cli-steps-word", train_in("--steps", "many"), CommandFailed, r"argument --steps: invalid int value: 'many'"),
    Case("cli-batch-size-zero", train_in("--batch-size", "0"), CommandFailed, r"--batch-size must be at least 1, got 0"),
    Case("cli-pairs-too-few", train_in("--pairs", "2"), CommandFailed, r"--pairs must be at least 3"),
    Case("cli-pairs-too-many", train_in("--pairs", "99999999"), CommandFailed, r"--pairs 99999999: n_pairs must be between"),
    Case("cli-unknown-flag", train_in("--lr", "3"), CommandFailed, r"unrecognized arguments: --lr 3"),
    Case("cli-tsv-missing", lambda tmp: lambda: run_train("--tsv", str(tmp / "nope.tsv"), "--out", str(tmp / "m.safetensors")), CommandFailed, r"--tsv .*nope.tsv: no such file"),
    Case("cli-tsv-directory", lambda tmp: lambda: run_train("--tsv", str(tmp), "--out", str(tmp / "m.safetensors")), CommandFailed, r"--tsv .*: is a folder, not a corpus file"),
    Case("cli-tsv-eight-pairs", lambda tmp: (p := tsv(tmp, many_pairs(8))) and (lambda: run_train("--tsv", str(p), "--out", str(tmp / "m.safetensors"))), CommandFailed, r"corpus of 8 pairs leaves the valid split empty"),
    Case("cli-tsv-latin1", lambda tmp: (p := tsv(tmp, many_pairs(50).encode() + "no\tnon merci caf\xe9\n".encode("latin-1"))) and (lambda: run_train("--tsv", str(p), "--out", str(tmp / "m.safetensors"))), CommandFailed, r"line 51: byte 0xe9 is not UTF-8"),
    Case("cli-tsv-80-words", lambda tmp: (p := tsv(tmp, many_pairs(30, "hi\t" + "mot " * 80 + "\n") + many_pairs(30))) and (lambda: run_train("--tsv", str(p), "--out", str(tmp / "m.safetensors"))), CommandFailed, r"line 31: the source sentence has 80 tokens, more than the 63"),
    Case("cli-tsv-empty-side", lambda tmp: (p := tsv(tmp, many_pairs(30, "\tbonjour\n"))) and (lambda: run_train("--tsv", str(p), "--out", str(tmp / "m.safetensors"))), CommandFailed, r"line 31: the target sentence is empty"),
    Case("cli-tsv-line-separators", lambda tmp: (p := tsv(tmp, "a\u2028b\tc\u0085d\x0ce\n")) and (lambda: run_train("--tsv", str(p), "--out", str(tmp / "m.safetensors"))), CommandFailed, r"corpus of 1 pairs leaves the train split empty|leaves the valid split empty"),
    Case("cli-out-exists", lambda tmp: save_tiny(tmp / "m.safetensors") and (lambda: run_train("--out", str(tmp / "m.safetensors"))), CommandFailed, r"m.safetensors exists; pass --force"),
    Case("cli-out-directory-force", lambda tmp: lambda: run_train("--out", str(tmp), "--force"), CommandFailed, r"is a directory; give a file path"),
    Case("cli-out-parent-is-file", lambda tmp: (tmp / "f").write_text("mine") and (lambda: run_train("--out", str(tmp / "f" / "m.safetensors"))), CommandFailed, r"f is a file, not a folder"),
    Case("cli-out-deeper-under-file", lambda tmp: (tmp / "f").write_text("mine") and (lambda: run_train("--out", str(tmp / "f" / "a" / "b.safetensors"), "--force")), CommandFailed, r"f is a file, not a folder"),
    # --- tx.vision: images that do not fit the model or its patches
    Case("vision-patch-does-not-divide", call(lambda: tx.vision.patchify(R(1, 1, 8, 8), 3)), ValueError, r"8x8 pixels does not split into 3x3 patches: .*multiples of patch_size"),
    Case("vision-wrong-channels", call(lambda: tx.vision.VisionTransformer()(R(2, 3, 8, 8))), ValueError, r"images with 1 channel\(s\).*got shape \(2, 3, 8, 8\).*channels=3"),
    Case("vision-wrong-size", call(lambda: tx.vision.VisionTransformer()(R(2, 1, 28, 28))), ValueError, r"reads 8x8 images.*got 28x28"),
    Case("vision-config-patch", call(lambda: tx.vision.VisionConfig(image_size=10, patch_size=4)), ValueError, r"image_size=10 is not a multiple of patch_size=4"),
    Case("vision-int-images", call(lambda: tx.vision.VisionTransformer()(torch.zeros(1, 1, 8, 8, dtype=torch.long))), TypeError, r"images must hold floating-point numbers"),
    # --- python -m tx.exercises: argument errors
    Case("learner-no-command", call(run_learner), CommandFailed, r"exit status 2.*required: command"),
    Case("learner-unknown-command", call(run_learner, "teacher", "out"), CommandFailed, r"invalid choice: 'teacher'"),
    Case("learner-no-outdir", call(run_learner, "learner"), CommandFailed, r"required: out_dir"),
    Case("learner-unknown-option", lambda tmp: lambda: run_learner("learner", str(tmp / "out"), "--bogus"), CommandFailed, r"unrecognized arguments: --bogus"),
    Case("learner-zip-without-value", lambda tmp: lambda: run_learner("learner", str(tmp / "out"), "--zip"), CommandFailed, r"argument --zip: expected one argument"),
]


def test_the_table_is_large_and_its_ids_unique():
    ids = [c.id for c in CASES]
    assert len(ids) >= 120
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input_gives_a_clear_error_and_changes_no_file(case: Case, tmp_path: Path):
    action = case.setup(tmp_path)
    before = snapshot(tmp_path)
    with pytest.raises(case.error, match=f"(?s){case.match}"):
        action()
    assert snapshot(tmp_path) == before
    assert not list(tmp_path.rglob("*.tmp"))


# ----------------------------------------------------------------------------- the command line, for real


@pytest.mark.parametrize("argv, message", [
    (["--steps", "0"], "--steps must be at least 1, got 0"),
    (["--force", "--out", "{tmp}"], "is a directory; give a file path"),
])
def test_command_line_fails_with_status_2_before_loading_any_corpus(tmp_path, argv, message):
    result = subprocess.run(
        [sys.executable, "-m", "tx.train", *(a.format(tmp=tmp_path) for a in argv)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 2
    assert message in result.stderr and "training" not in result.stderr
    assert not list(tmp_path.iterdir())


def test_a_diverging_run_writes_no_checkpoint_and_keeps_the_old_one(tmp_path):
    out = save_tiny(tmp_path / "m.safetensors")
    before = snapshot(tmp_path)
    diverged = FloatingPointError("the training loss became nan at step 7: ... Lower lr_factor (now 1.0) ...")
    err = io.StringIO()
    with mock.patch.object(train, "fit", side_effect=diverged), redirect_stderr(err), \
            mock.patch.object(data, "load_corpus", return_value=data.split_corpus(data.copy_pairs(100))):
        with pytest.raises(SystemExit, match=r"loss became nan at step 7.*No checkpoint was written; .*m.safetensors is unchanged"):
            train_command.main(["--out", str(out), "--force"])
    assert snapshot(tmp_path) == before


# ----------------------------------------------------------------------------- defined behaviour at the edges


def test_a_fully_masked_row_gives_zero_weights_and_output_in_every_code_path():
    torch.manual_seed(0)
    q, k, v = R(2, 3, 4), R(2, 5, 4), R(2, 5, 4)
    mask = torch.ones(2, 3, 5, dtype=torch.bool)
    mask[1, 2] = False  # query 2 of batch 1 may attend to nothing
    out, weights = tx.attention(q, k, v, mask)
    assert torch.equal(weights[1, 2], torch.zeros(5)) and torch.equal(out[1, 2], torch.zeros(4))
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    layer = mha()
    x, memory = R(2, 3, 32), R(2, 5, 32)
    fused = layer(x, memory, memory, mask[:, None])
    explicit = layer(x, memory, memory, mask[:, None], need_weights=True)
    assert torch.isfinite(explicit).all()
    torch.testing.assert_close(explicit, fused)


def test_recording_attention_does_not_change_the_output_of_an_all_padding_source():
    src = torch.tensor([[4, 5, EOS], [0, 0, 0]])  # the second sentence is all padding
    tgt = torch.tensor([[BOS, 4], [BOS, 4]])
    with torch.no_grad():
        plain = MODEL(src, tgt)
        with MODEL.recording_attention():
            recorded = MODEL(src, tgt)
    assert torch.isfinite(recorded).all()
    torch.testing.assert_close(recorded, plain)


def test_unicode_line_breaks_stay_inside_a_corpus_line(tmp_path):
    path = tsv(tmp_path, "a\u2028b\tc\u0085d\x0ce\r\nthanks\tmerci\n")
    assert data.load_parallel_tsv(path) == [("c\u0085d\x0ce", "a\u2028b"), ("merci", "thanks")]


def test_a_cache_serves_the_same_memory_at_every_step():
    memory = MODEL.encode(SRC)
    cache = MODEL.new_cache()
    with torch.no_grad():
        MODEL.decode(memory, SRC, torch.tensor([[BOS]]), cache)
        MODEL.decode(memory.clone(), SRC, torch.tensor([[4]]), cache)  # equal values: the same sentence
    assert cache.length == 2


def test_checkpoints_carry_a_checksum_and_old_ones_without_it_still_load(tmp_path):
    path = save_tiny(tmp_path / "m.safetensors")
    header, tensors = read_header(path)
    assert len(header["__metadata__"]["tensor_sha256"]) == 64
    del header["__metadata__"]["tensor_sha256"]
    write_header(path, header, tensors)
    loaded = checkpoint.load(path)
    torch.testing.assert_close(loaded.model(SRC, torch.tensor([[BOS]])), MODEL(SRC, torch.tensor([[BOS]])))
    book_header, _ = read_header(checkpoint.BOOK_MODEL)
    assert "tensor_sha256" in book_header["__metadata__"]  # the committed checkpoint is verified on every load


def test_an_overwritten_checkpoint_keeps_its_mode(tmp_path):
    path = save_tiny(tmp_path / "m.safetensors")
    os.chmod(path, 0o640)
    save_tiny(path, again=True)
    assert path.stat().st_mode & 0o777 == 0o640
    assert checkpoint.read_metadata(path)["info"] == {"again": True}
    new = save_tiny(tmp_path / "new.safetensors")
    umask = os.umask(0)
    os.umask(umask)
    assert new.stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_checkpoint_with_nan_weights_leaves_the_model_it_was_loaded_into_as_it_was(tmp_path):
    path = save_nan(tmp_path)
    model = tiny(dropout=0.0)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(ValueError, match="holds NaN or inf"):
        checkpoint.load_into(model, path)
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_token_ids_of_int32_are_read_as_long_ones_are():
    src, tgt = torch.tensor([[4, 5, EOS]]), torch.tensor([[BOS, 4]])
    with torch.no_grad():
        torch.testing.assert_close(MODEL(src.int(), tgt.int()), MODEL(src, tgt))
    assert torch.equal(tx.greedy_decode(MODEL, src.int(), 4, BOS, EOS), tx.greedy_decode(MODEL, src, 4, BOS, EOS))


def test_a_decoder_under_autocast_takes_memory_of_another_dtype():
    # autocast converts the inputs of every matrix product itself: the dtype check stands aside
    memory = MODEL.encode(SRC)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        logits = MODEL.decode(memory.bfloat16(), SRC, torch.tensor([[BOS]]))
    assert logits.shape == (1, 1, TINY["tgt_vocab_size"]) and bool(torch.isfinite(logits).all())


def test_valid_calls_still_work_with_numpy_integers_and_a_single_sentence_in_a_list():
    import numpy as np

    assert tx.TransformerConfig(src_vocab_size=np.int64(10), tgt_vocab_size=10, d_model=np.int64(32), n_heads=4).d_model == 32
    assert len(evaluate.translate(MODEL, ["s1 s2"], SRC_VOCAB, TGT_VOCAB, max_len=3)) == 1
