"""Checkers for chapter 14, the Vision Transformer.

Axes: B batch, C channels, Hi x Wi image size, P patch size, N patches, K = C*P*P,
H heads, L = N + 1 positions, Dh head size.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch
from torch import Tensor

from .. import vision
from ..vision import VisionConfig, VisionTransformer, patchify
from . import CheckFailed, as_count, assert_tensor, call, forbids, keeps_random_state, part, parts, passed, seeded

__all__ = ["check_patchify", "check_count_vit_parameters", "check_cls_attention"]


@forbids([(torch.nn.functional, "unfold"), (Tensor, "unfold"), (vision, "patchify")],
         "cut the patches with reshape and permute, as the chapter does by hand.")
@parts("one channel, square images", "several channels, other shapes", drawn=True)
def check_patchify(fn: Callable[..., Any]) -> None:
    """``fn(images [B, C, Hi, Wi], patch_size) -> [B, N, C*P*P]`` must equal :func:`tx.vision.patchify`."""
    g = torch.Generator().manual_seed(seeded(14))
    sizes = {"one channel, square images": [((1, 1, 4, 4), 2), ((2, 1, 8, 8), 4)],
             "several channels, other shapes": [((2, 3, 6, 9), 3), ((3, 2, 8, 4), 2)]}
    for name, part_sizes in sizes.items():
        with part(name):
            for shape, P in part_sizes:
                images = torch.randn(shape, generator=g)
                got = call(fn, images.clone(), P)
                expected = patchify(images, P)
                _explain_patchify(got, expected, images, P)
                assert_tensor(got, expected, f"your patchify_mine(images of shape {shape}, patch_size={P})")
    passed("patches row by row, each flattened channel by channel: the sequence tx.vision.patchify makes.")


def _explain_patchify(got: Any, expected: Tensor, images: Tensor, P: int) -> None:
    """CheckFailed with the mistake's name when ``got`` is one of the usual wrong orders."""
    if not isinstance(got, Tensor) or got.shape != expected.shape or torch.allclose(got, expected):
        return
    B, C, Hi, Wi = images.shape
    blocks = images.reshape(B, C, Hi // P, P, Wi // P, P)  # [B, C, rows, P, cols, P]
    wrong = {
        "the patches come column by column: the grid's row index must vary slowest (rows, then cols)":
            blocks.permute(0, 4, 2, 1, 3, 5),
        "each patch is flattened pixel by pixel with the channels last; flatten it channel by channel "
        "(all of channel 0's P*P pixels, then channel 1's), as a convolution's weights are laid out":
            blocks.permute(0, 2, 4, 3, 5, 1),
        "each patch's pixels are read column by column: read a patch row by row, like the image":
            blocks.permute(0, 2, 4, 1, 5, 3),
        "a plain reshape cuts the image into runs of whole rows, not into square patches: reshape to "
        "[B, C, Hi/P, P, Wi/P, P] and permute the two grid axes to the front":
            images.reshape(B, C, -1, P * P).permute(0, 2, 1, 3),
    }
    for hint, order in wrong.items():
        if torch.allclose(got, order.reshape(expected.shape)):
            raise CheckFailed(f"the shape is right but {hint}.")


@forbids([(VisionTransformer, "__init__")], "count from the shapes of the pieces, without building the model.")
@keeps_random_state
@parts("a small ViT", "ViT-B/16", "other sizes", drawn=True)
def check_count_vit_parameters(fn: Callable[..., Any]) -> None:
    """``fn(image_size, patch_size, channels, n_classes, d_model, n_layers, d_ff) -> int`` counts a
    VisionTransformer."""
    g = torch.Generator().manual_seed(seeded(14))
    hidden = 8 * int(torch.randint(2, 9, (1,), generator=g))  # a size the learner never sees
    cases = {"a small ViT": [(8, 2, 1, 10, 64, 2, 128)], "ViT-B/16": [(224, 16, 3, 1000, 768, 12, 3072)],
             "other sizes": [(32, 4, 3, 100, hidden, 3, 2 * hidden), (28, 7, 1, 10, 48, 1, 96)]}
    for name, part_cases in cases.items():
        with part(name):
            for sizes in part_cases:
                _check_count(fn, *sizes)
    passed("ViT-B/16 has 86,567,656 parameters, and your count agrees for every size.")


def _check_count(fn: Callable[..., Any], image_size: int, P: int, C: int, Y: int, D: int, n_layers: int,
                 d_ff: int) -> None:
    config = VisionConfig(image_size=image_size, patch_size=P, channels=C, n_classes=Y, d_model=D,
                          n_heads=4 if D % 4 == 0 else 1, n_layers=n_layers, d_ff=d_ff)
    with torch.device("meta"):
        expected = sum(p.numel() for p in VisionTransformer(config).parameters())
    got = call(fn, image_size, P, C, Y, D, n_layers, d_ff)
    got = as_count(got, "count_vit_parameters should return an int, got {kind}.")
    if got != expected:
        N = (image_size // P) ** 2
        where = f"count_vit_parameters{(image_size, P, C, Y, D, n_layers, d_ff)} = {got}; expected {expected}."
        hints = {
            expected - D: "the positional table has a row for [CLS] too: N + 1 rows, not N.",
            expected - D - D: "count the [CLS] vector (D numbers) and its row of the positional table.",
            expected - 2 * D: "the pre-LN encoder ends with one more LayerNorm (gain and bias, 2 * D).",
            expected - n_layers * 4 * D: "each layer has two LayerNorms, each with a gain and a bias of D numbers.",
            expected - (N + 1) * D: "the learned positions are parameters too: one row of D numbers per position.",
        }
        otherwise = ("Add up the patch embedding, [CLS], the positions, every layer (attention, feed-forward, two "
                     "LayerNorms), the final LayerNorm and the head, each with its biases.")
        raise CheckFailed(f"{where} {hints.get(got, otherwise)}")


@parts("2 heads, 5 positions", "16 patches and [CLS]", "one patch and [CLS]", drawn=True)
def check_cls_attention(fn: Callable[..., Any]) -> None:
    """``fn(q [H, L, Dh], k [H, L, Dh]) -> [H, L]``: each head's attention weights of [CLS] (position 0)."""
    g = torch.Generator().manual_seed(seeded(14))
    sizes = {"2 heads, 5 positions": (2, 5, 4), "16 patches and [CLS]": (4, 17, 16), "one patch and [CLS]": (3, 2, 8)}
    for name, (H, L, Dh) in sizes.items():
        with part(name):
            q, k = torch.randn(H, L, Dh, generator=g) * 2, torch.randn(H, L, Dh, generator=g) * 2
            _check_cls_attention(fn, q, k)
    passed("[CLS]'s attention is the first row of softmax(QK^T / sqrt(Dh)), one row per head.")


def _check_cls_attention(fn: Callable[..., Any], q: Tensor, k: Tensor) -> None:
    got = call(fn, q.clone(), k.clone())
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # [H, L, L]
    expected = scores.softmax(-1)[:, 0]  # [H, L]: the first row
    if isinstance(got, Tensor) and got.shape == expected.shape and not torch.allclose(got, expected, atol=1e-5):
        if torch.allclose(got, scores.softmax(-1)[:, :, 0], atol=1e-5):
            raise CheckFailed("you returned the first column: how much every position attends TO [CLS]. "
                              "[CLS]'s own weights are the first row, its query against every key.")
        if torch.allclose(got, (q @ k.transpose(-2, -1)).softmax(-1)[:, 0], atol=1e-5):
            raise CheckFailed("divide the scores by sqrt(Dh) before the softmax.")
        if (torch.allclose(got, scores.softmax(-2)[:, 0], atol=1e-5)
                or torch.allclose(got, scores[:, 0].softmax(0), atol=1e-5)):
            raise CheckFailed("the softmax runs over the keys (the last axis), so that each row sums to 1.")
    assert_tensor(got, expected, f"cls_attention(q, k of shape {tuple(q.shape)})")
