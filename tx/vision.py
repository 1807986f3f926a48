"""Images as sequences: the Vision Transformer, built from tx's encoder.

Axes: B batch, C channels, Hi x Wi image height and width, P patch size, N = (Hi/P)(Wi/P)
patches, K = C*P*P numbers per patch, L = N + 1 positions ([CLS] and the patches),
D d_model, Y classes.

An image cut into P x P patches is a sequence: each patch, flattened, is one row of a matrix
X [N, K], exactly as each word of a sentence is one row. A linear layer maps every row to
D numbers, a learned [CLS] vector is put in front, positions are added, and the encoder of
chapter 7 reads the sequence; a linear head turns [CLS]'s output into class logits
(Dosovitskiy et al., 2021).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any, Iterator, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .checks import check_choice, check_dtype, check_float, check_int, check_tensor, guarded
from .config import POSITIONS as TABLES
from .config import LayerConfig
from .encoder import Encoder
from .layers import Dropout
from .positional_encoding import LearnedPositions, positional_encoding
from .progress import progress_bar
from .training_record import recorded

__all__ = [
    "patchify", "unpatchify", "VisionConfig", "VisionTransformer", "Split", "load_digits_split",
    "classification_loss", "accuracy", "predict", "fit_classifier",
]

POSITIONS = (*TABLES, "none")  # tx's sinusoids, ViT's trained table, or none at all


def _check_images(images: Tensor, name: str = "images") -> None:
    check_tensor(name, images, dims=4, floating=True)


def _check_patchify(images: Tensor, patch_size: int) -> None:
    _check_images(images)
    check_int("patch_size", patch_size, low=1)
    Hi, Wi, P = images.size(2), images.size(3), patch_size
    if Hi % P or Wi % P:
        raise ValueError(
            f"an image of {Hi}x{Wi} pixels does not split into {P}x{P} "
            "patches: the height and width must be multiples of patch_size. "
            "Choose a patch_size that divides both, or crop or pad the "
            "images."
        )


@guarded(_check_patchify)
def patchify(images: Tensor, patch_size: int) -> Tensor:
    """Cut images [B, C, Hi, Wi] into P x P patches, row by row: [B, N, C*P*P],
    each patch flattened channel-first."""
    B, C, Hi, Wi = images.shape
    P = patch_size
    # [B, C, rows, P, cols, P]
    x = images.reshape(B, C, Hi // P, P, Wi // P, P)
    x = x.permute(0, 2, 4, 1, 3, 5)  # [B, rows, cols, C, P, P]
    return x.reshape(B, (Hi // P) * (Wi // P), C * P * P)  # [B, N, K]


def unpatchify(patches: Tensor, patch_size: int, height: int, width: int) -> Tensor:
    """The inverse of :func:`patchify`: patches [B, N, C*P*P] -> images [B, C, height, width]."""
    check_tensor("patches", patches, dims=3)
    for name, value in (("patch_size", patch_size), ("height", height), ("width", width)):
        check_int(name, value, low=1)
    B, N, K = patches.shape
    P = patch_size
    rows, cols = height // P, width // P
    if height % P or width % P or N != rows * cols or K % (P * P):
        raise ValueError(
            f"{N} patches of {K} numbers do not tile a {height}x{width} image with {P}x{P} patches "
            f"(that takes {rows * cols} patches of C*{P * P} numbers); pass the size the patches came from."
        )
    C = K // (P * P)
    x = patches.reshape(B, rows, cols, C, P, P)  # [B, rows, cols, C, P, P]
    return x.permute(0, 3, 1, 4, 2, 5).reshape(B, C, height, width)  # [B, C, Hi, Wi]


@dataclass(frozen=True, kw_only=True)
class VisionConfig(LayerConfig):
    """Every size and switch of a :class:`VisionTransformer`. Presets: :meth:`digits`, :meth:`vit_b16`.

    Its defaults are the book's digits model with ViT's choices (pre-LN, GELU, learned positions).
    """

    image_size: int = 8  #: height and width of the (square) images, in pixels
    patch_size: int = 2  #: side of a square patch; image_size must be a multiple of it
    channels: int = 1  #: 1 for grey, 3 for colour
    n_classes: int = 10  #: width of the classifier head's logits
    d_model: int = 64  #: width of every vector between sub-layers
    n_heads: int = 4  #: attention heads; each works in d_model / n_heads dimensions
    n_layers: int = 2  #: encoder layers
    d_ff: int = 128  #: hidden width of the feed-forward network
    positions: str = "learned"  #: "learned" as in ViT, "sinusoidal" as in the paper, or "none"
    norm_first: bool = True  #: pre-LN with a final LayerNorm, as ViT; False = the paper's post-LN
    activation: str = "gelu"  #: ViT's GELU, or the paper's "relu"

    def __post_init__(self) -> None:
        for name in ("image_size", "patch_size", "channels", "n_classes"):
            check_int(name, getattr(self, name), low=1)
        super().__post_init__()
        check_choice("positions", self.positions, POSITIONS)
        if self.image_size % self.patch_size:
            raise ValueError(
                f"image_size={self.image_size} is not a multiple of patch_size={self.patch_size}: the patches "
                "must tile the image. Choose a patch_size that divides image_size."
            )
        if self.positions == "sinusoidal" and self.d_model % 2:
            raise ValueError(f"d_model must be even for sinusoidal positions, got {self.d_model}.")

    @property
    def n_patches(self) -> int:
        """N, the number of patches of one image."""
        return (self.image_size // self.patch_size) ** 2

    @classmethod
    def digits(cls, **overrides: Any) -> "VisionConfig":
        """The book's model for scikit-learn's 8x8 digits: 16 patches of 2x2 pixels, 2 layers, d_model 64."""
        return cls(**overrides)

    @classmethod
    def vit_b16(cls, **overrides: Any) -> "VisionConfig":
        """ViT-B/16 (Dosovitskiy et al., Table 1): 224x224 colour images, 16x16 patches, 12 layers, d_model 768, 1,000 classes."""
        sizes = dict(image_size=224, patch_size=16, channels=3, n_classes=1000, d_model=768, n_heads=12,
                     n_layers=12, d_ff=3072, dropout=0.1)
        return cls(**{**sizes, **overrides})


def _check_config(model: "VisionTransformer", config: object = None, **sizes: Any) -> None:
    if config is not None and sizes:
        raise TypeError("give a VisionConfig or its fields as keywords, not both: config.replace(...) changes a few.")
    if config is not None and not isinstance(config, VisionConfig):
        raise TypeError(f"config must be a tx.vision.VisionConfig, got {type(config).__name__}.")


def _check_images_fit(model: "VisionTransformer", images: Tensor) -> None:
    _check_images(images)
    check_dtype("images", images, model.patch_embedding.weight)
    c = model.config
    if images.size(1) != c.channels:
        raise ValueError(
            f"the model reads images with {c.channels} channel(s) ([B, {c.channels}, H, W]), got shape "
            f"{tuple(images.shape)}. Convert the images (e.g. grey to colour), or build the model with "
            f"channels={images.size(1)}."
        )
    if images.shape[2:] != (c.image_size, c.image_size):
        raise ValueError(
            f"the model reads {c.image_size}x{c.image_size} images (its positional table has one row per patch), "
            f"got {images.size(2)}x{images.size(3)}. Resize the images or build the model for their size."
        )



def _check_patches(model: "VisionTransformer", patches: Tensor) -> None:
    check_tensor("patches", patches, dims=3, floating=True)
    check_dtype("patches", patches, model.patch_embedding.weight)
    c = model.config
    N, K = c.n_patches, c.channels * c.patch_size**2
    if patches.size(1) > N or patches.size(2) != K:
        raise ValueError(
            f"the model reads at most {N} patches of {K} numbers ([B, N, {K}]), got shape "
            f"{tuple(patches.shape)}. Cut the images with patchify(images, {c.patch_size})."
        )


class VisionTransformer(nn.Module):
    """Images [B, C, Hi, Wi] -> class logits [B, Y]: patches, a linear embedding, [CLS], positions, tx.Encoder, a head.

    ``VisionTransformer(config)`` with a :class:`VisionConfig`, or ``VisionTransformer(image_size=...,
    patch_size=..., ...)`` with its fields (the rest keep :meth:`VisionConfig.digits`'s values).
    """

    @guarded(_check_config)
    def __init__(self, config: VisionConfig | None = None, **sizes: Any):
        super().__init__()
        c = self.config = VisionConfig(**sizes) if config is None else config
        K, L = c.channels * c.patch_size**2, c.n_patches + 1
        self.patch_embedding = nn.Linear(K, c.d_model)  # the same matrix for every patch, as for every word
        self.cls_token = nn.Parameter(torch.zeros(1, 1, c.d_model))  # [1, 1, D], learned; ViT starts it at 0
        self.positions = LearnedPositions(L, c.d_model) if c.positions == "learned" else None
        table = positional_encoding(L, c.d_model) if c.positions == "sinusoidal" else None
        self.register_buffer("pe", table, persistent=False)  # [L, D] fixed sinusoids, or None
        self.dropout = Dropout(c.dropout)
        self.encoder = Encoder(c)
        self.head = nn.Linear(c.d_model, c.n_classes)

    @guarded(_check_images_fit)
    def forward(self, images: Tensor) -> Tensor:
        """Class logits [B, Y] for images [B, C, Hi, Wi]."""
        return self.classify(patchify(images, self.config.patch_size))

    @guarded(_check_patches)
    def classify(self, patches: Tensor) -> Tensor:
        """Class logits [B, Y] from patches [B, N, K] (in any order you choose to feed them)."""
        return self.head(self.encode(patches)[:, 0])  # [CLS]'s output vector -> [B, Y]

    @guarded(_check_patches)
    def encode(self, patches: Tensor) -> Tensor:
        """The encoder's output [B, L, D] for patches [B, N, K]; position 0 is
        [CLS]."""
        B, N, _ = patches.shape
        x = self.patch_embedding(patches)  # [B, N, D]
        x = torch.cat([self.cls_token.expand(B, 1, -1), x], dim=1)  # [B, L, D]
        if self.positions is not None:
            x = x + self.positions(N + 1)  # [L, D] broadcast over B
        elif self.pe is not None:
            x = x + self.pe[: N + 1]
        return self.encoder(self.dropout(x))  # [B, L, D]

    @contextlib.contextmanager
    def recording_attention(self) -> Iterator[list[Tensor]]:
        """Record every layer's attention weights [B, H, L, L] during the block, first layer first."""
        layers = [layer.self_attn for layer in self.encoder.layers]
        maps: list[Tensor] = []
        for m in layers:
            m.record, m.attention_weights = True, None
        try:
            yield maps
        finally:
            for m in layers:
                m.record = False
                if m.attention_weights is not None:
                    maps.append(m.attention_weights)

    @torch.no_grad()
    def cls_attention(self, images: Tensor) -> Tensor:
        """How much [CLS] attends to each patch: [B, n_layers, H, N], every row summing to 1 minus its self-weight."""
        was_training = self.training
        self.eval()
        with self.recording_attention() as maps:
            self(images)
        self.train(was_training)
        return torch.stack([m[:, :, 0, 1:] for m in maps], dim=1)  # [B, layers, H, N]


class Split(NamedTuple):
    """Images [n, C, Hi, Wi] with pixel values in [0, 1] and their labels [n]."""

    images: Tensor
    labels: Tensor


def load_digits_split(seed: int = 0, valid: float = 0.1, test: float = 0.2) -> dict[str, Split]:
    """scikit-learn's 1,797 handwritten 8x8 digits, split into train/valid/test, stratified by class and seeded.

    Pixels (0 to 16 in the data) are scaled to [0, 1]. The same seed gives the same split.
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    check_float("valid", valid, 0, 1, low_open=True, high_open=True)
    check_float("test", test, 0, 1, low_open=True, high_open=True)
    if valid + test >= 1:
        raise ValueError(f"valid + test must leave images to train on, got {valid} + {test} = {valid + test}.")
    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32)[:, None] / 16.0  # [1797, 1, 8, 8]
    labels = torch.tensor(digits.target, dtype=torch.long)  # [1797]
    index = torch.arange(len(labels)).numpy()
    rest, test_i = train_test_split(index, test_size=test, stratify=labels, random_state=seed)
    train_i, valid_i = train_test_split(rest, test_size=valid / (1 - test), stratify=labels[rest], random_state=seed)
    pick = lambda i: Split(images[i], labels[i])  # noqa: E731
    return {"train": pick(train_i), "valid": pick(valid_i), "test": pick(test_i)}


def classification_loss(logits: Tensor, labels: Tensor, smoothing: float = 0.0) -> Tensor:
    """Mean cross-entropy of logits [B, Y] against class ids [B], labels optionally smoothed."""
    check_tensor("logits", logits, dims=2, floating=True)
    check_tensor("labels", labels, dims=1)
    if labels.size(0) != logits.size(0):
        raise ValueError(f"one label per image: logits has {logits.size(0)} rows but labels has {labels.size(0)}.")
    if labels.dtype != torch.long:
        raise TypeError(f"labels must hold class ids as torch.long, got {labels.dtype}; convert them with `.long()`.")
    if labels.numel() and not bool(((labels >= 0) & (labels < logits.size(1))).all()):
        bad = labels[(labels < 0) | (labels >= logits.size(1))][0].item()
        raise ValueError(f"labels holds class {bad}, but the logits score {logits.size(1)} classes (0..{logits.size(1) - 1}); "
                         "build the model with n_classes covering every label.")
    return F.cross_entropy(logits, labels, label_smoothing=smoothing)


@torch.no_grad()
def predict(model: VisionTransformer, images: Tensor, batch_size: int = 512) -> Tensor:
    """The predicted class [n] of each image [n, C, Hi, Wi], in eval mode."""
    was_training, dev = model.training, next(model.parameters()).device
    model.eval()
    out = torch.cat([model(images[i : i + batch_size].to(dev)).argmax(-1).cpu() for i in range(0, len(images), batch_size)])
    model.train(was_training)
    return out  # [n], on the CPU like the labels


def accuracy(model: VisionTransformer, split: Split) -> float:
    """The fraction of ``split``'s images whose predicted class is their label."""
    return float((predict(model, split.images) == split.labels).float().mean())


def _rate(step: int, d_model: int, config: Any) -> float:
    """The paper's warm-up and decay (tx.train.rate), brought linearly to 0 at the last step.

    With 1,257 training images the paper's schedule leaves the last steps hopping between
    nearly equal solutions (the validation accuracy moves by a point from one check to the
    next); ending at 0 lets them settle.
    """
    from .train import rate

    return rate(step + 1, d_model, config.warmup, config.lr_factor) * max(0.0, 1 - step / config.steps)


def _train_step(model: VisionTransformer, optimizer: torch.optim.Optimizer, images: Tensor, labels: Tensor,
                config: Any, step: int) -> float:
    """One optimiser step on a batch; returns its loss, after stopping the run if it is NaN or infinite."""
    from .train import _stop_if_diverged

    loss = classification_loss(model(images), labels, config.label_smoothing)
    _stop_if_diverged(loss.item(), step, config)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
    optimizer.step()
    return loss.item()


def fit_classifier(model: VisionTransformer, train: Split, valid: Split | None = None, config: Any = None,
                   progress: bool = True) -> dict[str, Any]:
    """Train ``model`` in place with tx.train's optimiser, learning rate and progress bar; return its history.

    ``config`` is a :class:`tx.train.TrainConfig` (steps, batch_size, warmup, lr_factor,
    label_smoothing, clip_norm, eval_every, seed, minutes). The history holds ``step``,
    ``train_loss`` and ``lr`` per step, ``valid_step`` and ``valid_accuracy`` every
    ``eval_every`` steps and at the end, and ``seconds``. The model may sit on any device
    (``tx.device()``); the data stay on the CPU and each batch is moved to it.
    """
    from . import train as tr

    config = tr.TrainConfig() if config is None else config
    if not isinstance(config, tr.TrainConfig):
        raise TypeError(f"config must be a tx.train.TrainConfig, got {type(config).__name__}.")
    if not isinstance(model, VisionTransformer):
        raise TypeError(f"model must be a tx.vision.VisionTransformer, got {type(model).__name__}.")
    torch.manual_seed(config.seed)
    optimizer = tr.make_optimizer(model)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: _rate(s, model.config.d_model, config))
    history: dict[str, Any] = {"step": [], "train_loss": [], "lr": [], "valid_step": [], "valid_accuracy": []}
    bar = progress_bar(config.steps, progress, 0, config.minutes)
    n, began, step = len(train.labels), time.perf_counter(), 0
    dev = next(model.parameters()).device  # the model stays where it is; each batch goes to it
    model.train()
    while step < config.steps:
        for index in torch.randperm(n).split(config.batch_size):  # one epoch, reshuffled every time
            history["lr"].append(optimizer.param_groups[0]["lr"])
            images, labels = train.images[index].to(dev), train.labels[index].to(dev)  # [b, C, Hi, Wi], [b]
            value = _train_step(model, optimizer, images, labels, config, step + 1)
            schedule.step()
            step += 1
            history["step"].append(step)
            history["train_loss"].append(value)
            bar.update(1)
            bar.set_postfix(loss=f"{value:.3f}")
            out_of_time = config.minutes is not None and time.perf_counter() - began >= 60 * config.minutes
            last = step == config.steps or out_of_time
            if valid is not None and (step % config.eval_every == 0 or last):
                history["valid_step"].append(step)
                history["valid_accuracy"].append(accuracy(model, valid))
                model.train()
            if last:
                break
        if last:
            break
    bar.close()
    history["seconds"] = time.perf_counter() - began
    model.eval()
    return history


# the book's tests replay a run they trained once (tx.training_record)
fit_classifier = recorded(fit_classifier)
