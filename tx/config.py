"""The model's configuration: frozen dataclasses, with the paper's and the book's presets.

:class:`LayerConfig` holds what every encoder and decoder layer reads; the configs of the
three models (:class:`TransformerConfig`, :class:`LanguageModelConfig` and
:class:`~tx.vision.VisionConfig`) extend it with what only they need. Every field is a
keyword: ``TransformerConfig(src_vocab_size=100, tgt_vocab_size=120, d_model=64)``. A config
checks its values once, when it is made, and the layers built from it trust them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .checks import check_bool, check_choice, check_float, check_heads, check_int

__all__ = ["LayerConfig", "TransformerConfig", "LanguageModelConfig", "ACTIVATIONS", "NORMS", "POSITIONS"]

ACTIVATIONS = ("relu", "gelu")  #: the paper's ReLU; GELU, as GPT-2, BERT and ViT use
POSITIONS = ("sinusoidal", "learned")  #: the paper's fixed table, or one trained with the model
NORMS = ("layer", "rms")  #: LayerNorm, as the paper; RMSNorm, as Llama and most models since


@dataclass(frozen=True, kw_only=True)
class LayerConfig:
    """What every encoder and decoder layer reads: sizes, dropout and the choice of arrangement.

    Layers and stacks take one (``tx.EncoderLayer(config)``); any model's config is one.
    The defaults are the paper's base model.
    """

    d_model: int = 512  #: width of every vector between sub-layers (paper: 512)
    n_heads: int = 8  #: attention heads; each works in d_model / n_heads dimensions
    n_layers: int = 6  #: layers in each stack (paper: 6 encoder and 6 decoder layers)
    d_ff: int = 2048  #: hidden width of the position-wise feed-forward network (paper: 4 * d_model)
    dropout: float = 0.1  #: on sub-layer outputs and embedding sums (paper 5.4: 0.1 base, 0.3 big)
    attention_dropout: float = 0.0  #: dropout on attention weights; the paper's 5.4 names none
    norm_first: bool = False  #: False = post-LN as in the paper; True = pre-LN as most models today
    activation: str = "relu"  #: of the feed-forward network: the paper's "relu", or "gelu"
    norm: str = "layer"  #: "layer" for LayerNorm (the paper), or "rms" for RMSNorm (tx.RMSNorm)

    def __post_init__(self) -> None:
        for name in ("d_model", "n_heads", "n_layers", "d_ff"):
            check_int(name, getattr(self, name), low=1)
        check_float("dropout", self.dropout, 0, 1, high_open=True)
        check_float("attention_dropout", self.attention_dropout, 0, 1, high_open=True)
        check_bool("norm_first", self.norm_first)
        check_choice("activation", self.activation, ACTIVATIONS)
        check_choice("norm", self.norm, NORMS)
        check_heads(self.d_model, self.n_heads)

    def replace(self, **changes: Any) -> Any:
        """A copy with some fields changed (and checked again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict, JSON-safe."""
        return dataclasses.asdict(self)


@dataclass(frozen=True, kw_only=True)
class TransformerConfig(LayerConfig):
    """Every size and switch of a :class:`~tx.model.Transformer`. Presets: :meth:`base`, :meth:`big`, :meth:`small`, :meth:`real`."""

    src_vocab_size: int  #: source words the embedding knows
    tgt_vocab_size: int  #: target words: the width of the final linear layer's logits
    max_len: int = 256  #: longest sequence the positional table covers
    pad_id: int = 0  #: token id of <pad>: masked out of attention and of the loss
    share_embeddings: bool = False  #: tie source, target and pre-softmax weights (paper 3.4; needs one vocabulary)

    def __post_init__(self) -> None:
        for name in ("src_vocab_size", "tgt_vocab_size", "max_len"):
            check_int(name, getattr(self, name), low=1)
        super().__post_init__()
        check_int("pad_id", self.pad_id, low=0, high=min(self.src_vocab_size, self.tgt_vocab_size) - 1)
        check_bool("share_embeddings", self.share_embeddings)
        if self.d_model % 2 != 0:
            raise ValueError(f"d_model must be even, got {self.d_model}: the positional encoding pairs a sine with a cosine.")
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError(
                f"share_embeddings=True ties one weight matrix across source and target, but the "
                f"vocabularies differ ({self.src_vocab_size} vs {self.tgt_vocab_size} words). Build one "
                "joint vocabulary for both languages, or set share_embeddings=False."
            )

    @classmethod
    def base(cls, src_vocab_size: int = 37000, tgt_vocab_size: int | None = None, **overrides: Any) -> "TransformerConfig":
        """The paper's base model (Table 3): 6 layers, d_model 512, 8 heads, d_ff 2048, shared 37k vocabulary."""
        tgt = src_vocab_size if tgt_vocab_size is None else tgt_vocab_size
        sizes = dict(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt, share_embeddings=tgt == src_vocab_size)
        return cls(**{**sizes, **overrides})

    @classmethod
    def big(cls, src_vocab_size: int = 37000, tgt_vocab_size: int | None = None, **overrides: Any) -> "TransformerConfig":
        """The paper's big model (Table 3): d_model 1024, 16 heads, d_ff 4096, dropout 0.3."""
        sizes = dict(d_model=1024, n_heads=16, d_ff=4096, dropout=0.3)
        return cls.base(src_vocab_size, tgt_vocab_size, **{**sizes, **overrides})

    @classmethod
    def small(cls, src_vocab_size: int, tgt_vocab_size: int, **overrides: Any) -> "TransformerConfig":
        """The book's model: small enough to train on two CPU cores in a few minutes."""
        sizes = dict(d_model=128, n_heads=4, n_layers=2, d_ff=256, dropout=0.1, max_len=64)
        return cls(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size, **{**sizes, **overrides})

    @classmethod
    def real(cls, src_vocab_size: int, tgt_vocab_size: int, **overrides: Any) -> "TransformerConfig":
        """The preset for a real corpus of short sentences in subwords (``python -m tx.train --tsv``).

        The book's width with a wider feed-forward layer: on two CPU cores a larger model
        takes so much longer a step that ten minutes teach it less.
        """
        return cls.small(src_vocab_size, tgt_vocab_size, **{"d_ff": 512, **overrides})


@dataclass(frozen=True, kw_only=True)
class LanguageModelConfig(LayerConfig):
    """Every size and switch of a decoder-only :class:`~tx.language_model.LanguageModel`. Presets: :meth:`small`, :meth:`gpt2_small`.

    Its defaults are the book's small size with GPT-2's choices (pre-LN, GELU, learned
    positions, tied embeddings).
    """

    vocab_size: int  #: tokens the model reads and predicts: one vocabulary for both
    d_model: int = 128  #: width of every vector between sub-layers
    n_heads: int = 4  #: attention heads; each works in d_model / n_heads dimensions
    n_layers: int = 2  #: blocks of masked self-attention + feed-forward (no encoder, no cross-attention)
    d_ff: int = 256  #: hidden width of the feed-forward network (GPT-2: 4 * d_model)
    norm_first: bool = True  #: pre-LN with a final LayerNorm, as GPT-2 and most models since
    activation: str = "gelu"  #: of the feed-forward network: GPT-2's "gelu" or the paper's "relu"
    max_len: int = 64  #: the context: the longest sequence the positions cover
    pad_id: int = 0  #: token id of <pad>: never attended to, never a target
    tie_embeddings: bool = True  #: the output layer reuses the token embedding (GPT-2 does; saves V * D weights)
    positions: str = "learned"  #: "learned" as GPT-2, or the paper's "sinusoidal" table
    scale_embeddings: bool = False  #: multiply token vectors by sqrt(d_model) (the paper does, GPT-2 does not)

    def __post_init__(self) -> None:
        for name in ("vocab_size", "max_len"):
            check_int(name, getattr(self, name), low=1)
        super().__post_init__()
        check_int("pad_id", self.pad_id, low=0, high=self.vocab_size - 1)
        for name in ("tie_embeddings", "scale_embeddings"):
            check_bool(name, getattr(self, name))
        check_choice("positions", self.positions, POSITIONS)
        if self.positions == "sinusoidal" and self.d_model % 2 != 0:
            raise ValueError(f"d_model must be even for sinusoidal positions, got {self.d_model}; or use positions='learned'.")

    @classmethod
    def small(cls, vocab_size: int, **overrides: Any) -> "LanguageModelConfig":
        """The book's language model: the width of the book's translator, trained on two CPU cores in a minute."""
        return cls(vocab_size=vocab_size, **overrides)

    @classmethod
    def gpt2_small(cls, vocab_size: int = 50257, **overrides: Any) -> "LanguageModelConfig":
        """GPT-2 small (Radford et al. 2019): 12 layers, d_model 768, 12 heads, 1024 positions, 124M parameters."""
        sizes = dict(d_model=768, n_heads=12, n_layers=12, d_ff=3072, dropout=0.1, max_len=1024)
        return cls(vocab_size=vocab_size, **{**sizes, **overrides})
