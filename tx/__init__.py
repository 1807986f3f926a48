"""tx: a complete, tested encoder-decoder Transformer, built chapter by chapter in the book.

Axes used throughout: B batch, S source length, T target length, D d_model, H heads,
Dh = D / H head size, V vocabulary size.

The model pieces import eagerly; the heavier helpers (``tx.data``, ``tx.grammar``,
``tx.train``, ``tx.evaluate``, ``tx.checkpoint``, ``tx.viz``, ``tx.explorer``, ``tx.exercises``,
``tx.subwords``, ``tx.translate``, ``tx.export``, ``tx.live``, ``tx.lm_train``, ``tx.vision``,
``tx.scale``, and the modules under them: ``tx.tokens``, ``tx.parallel``, ``tx.progress``,
``tx.train_state``, ``tx.cli``) load on first use. tx/README.md maps them to the chapters.
"""

from __future__ import annotations

import importlib
from typing import Any

import torch

from .attention import attention, self_attention_by_vectors
from .config import LayerConfig, TransformerConfig
from .decoding import beam_search, greedy_decode
from .decoder import Decoder, DecoderCache, DecoderLayer
from .encoder import Encoder, EncoderLayer
from .layers import Dropout, FeedForward, Residual, RMSNorm
from .masks import causal_mask, padding_mask
from .model import Transformer
from .multi_head import KVCache, MultiHeadAttention, merge_heads, split_heads
from .positional_encoding import Embedding, LearnedPositions, positional_encoding
from .config import LanguageModelConfig
from .language_model import LanguageModel, LanguageModelCache
from .generation import generate

__all__ = [
    "attention", "self_attention_by_vectors", "MultiHeadAttention", "split_heads", "merge_heads",
    "KVCache", "positional_encoding", "LearnedPositions", "Embedding", "causal_mask", "padding_mask", "FeedForward",
    "Residual", "Dropout", "RMSNorm", "EncoderLayer", "Encoder", "DecoderLayer", "Decoder", "DecoderCache",
    "LayerConfig", "TransformerConfig", "Transformer", "greedy_decode", "beam_search", "device",
    "LanguageModelConfig", "LanguageModel", "LanguageModelCache", "generate",
    "data", "grammar", "train", "evaluate", "checkpoint", "viz", "explorer", "exercises",
    "subwords", "translate", "export", "live", "vision", "generation", "lm_train", "scale",
    "tokens", "parallel", "progress", "train_state", "cli", "near_duplicates", "copying",
]

_LAZY = {
    "data", "grammar", "train", "evaluate", "checkpoint", "viz", "explorer", "exercises", "subwords", "translate",
    "export", "live", "lm_train", "scale", "tokens", "parallel", "progress", "train_state", "cli",
    "near_duplicates", "copying", "vision",  # imports scikit-learn, only to load the digits
}


def device() -> torch.device:
    """CUDA when a GPU is present, else the CPU; everything in tx runs on either."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'tx' has no attribute {name!r}")

