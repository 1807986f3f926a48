"""The Vision Transformer: patches, shapes, the published ViT-B/16 size, positions, and learning digits."""

from __future__ import annotations

import pytest
import torch

import tx
from tx.train import TrainConfig
from tx.vision import (
    VisionConfig, VisionTransformer, accuracy, classification_loss, fit_classifier, load_digits_split, patchify,
    unpatchify,
)

TINY = VisionConfig(image_size=8, patch_size=2, channels=1, n_classes=10, d_model=16, n_heads=2, n_layers=2,
                    d_ff=32, dropout=0.0)


def tiny(**changes) -> VisionTransformer:
    torch.manual_seed(0)
    return VisionTransformer(TINY.replace(**changes)).eval()


@pytest.fixture(scope="module")
def digits():
    return load_digits_split(seed=0)


def test_patchify_cuts_row_by_row_and_flattens_each_patch_channel_first():
    image = torch.arange(2 * 4 * 4, dtype=torch.float32).view(1, 2, 4, 4)  # [B=1, C=2, 4, 4]
    red, green = image[0, 0], image[0, 1]
    patches = patchify(image, 2)
    # Patch 1 is the top-left 2x2 block, patch 2 the top-right, then the bottom row of blocks.
    expected = torch.stack([
        torch.cat([red[:2, :2].flatten(), green[:2, :2].flatten()]),
        torch.cat([red[:2, 2:].flatten(), green[:2, 2:].flatten()]),
        torch.cat([red[2:, :2].flatten(), green[2:, :2].flatten()]),
        torch.cat([red[2:, 2:].flatten(), green[2:, 2:].flatten()]),
    ])[None]
    assert patches.shape == (1, 4, 8)
    torch.testing.assert_close(patches, expected)
    torch.testing.assert_close(patches[0, 1, :4], torch.tensor([2.0, 3.0, 6.0, 7.0]))  # by hand


@pytest.mark.parametrize("shape, p", [((3, 1, 8, 8), 2), ((2, 3, 12, 8), 4), ((1, 2, 6, 6), 1), ((1, 1, 5, 5), 5)])
def test_unpatchify_inverts_patchify(shape, p):
    images = torch.randn(shape)
    patches = patchify(images, p)
    B, C, H, W = shape
    assert patches.shape == (B, (H // p) * (W // p), C * p * p)
    torch.testing.assert_close(unpatchify(patches, p, H, W), images, rtol=0, atol=0)


def test_patchify_agrees_with_torch_unfold():
    images = torch.randn(2, 3, 8, 12)
    unfolded = torch.nn.functional.unfold(images, kernel_size=4, stride=4).transpose(1, 2)  # [B, N, C*P*P]
    torch.testing.assert_close(patchify(images, 4), unfolded)


def test_shapes_from_images_to_logits():
    model = tiny()
    images = torch.rand(5, 1, 8, 8)
    assert model(images).shape == (5, 10)
    assert model.encode(patchify(images, 2)).shape == (5, 17, 16)  # [CLS] + 16 patches
    weights = model.cls_attention(images)
    assert weights.shape == (5, 2, 2, 16)  # [B, layers, heads, patches]
    assert bool((weights.sum(-1) <= 1 + 1e-6).all()) and bool((weights >= 0).all())
    assert not model.encoder.layers[0].self_attn.record  # recording is switched off again


def test_vit_b16_has_the_published_parameter_count():
    with torch.device("meta"):
        model = VisionTransformer(VisionConfig.vit_b16())
    assert sum(p.numel() for p in model.parameters()) == 86_567_656
    c = model.config
    assert (c.image_size, c.patch_size, c.channels, c.n_patches) == (224, 16, 3, 196)
    assert isinstance(model.encoder, tx.Encoder) and isinstance(model.encoder.norm, torch.nn.LayerNorm)
    assert model.positions.table.shape == (197, 768)  # one row per patch and one for [CLS]


def test_the_model_takes_a_config_or_its_fields():
    by_fields = VisionTransformer(image_size=8, patch_size=4, channels=3, n_classes=5, d_model=16, n_heads=2)
    assert by_fields.config == VisionConfig(image_size=8, patch_size=4, channels=3, n_classes=5, d_model=16, n_heads=2)
    assert by_fields(torch.rand(2, 3, 8, 8)).shape == (2, 5)
    with pytest.raises(TypeError, match="not both"):
        VisionTransformer(TINY, d_model=32)


def test_the_config_is_frozen_and_its_presets_differ():
    with pytest.raises(Exception):
        VisionConfig().d_model = 3  # type: ignore[misc]
    assert VisionConfig.digits().d_model < VisionConfig.vit_b16().d_model
    assert VisionConfig.vit_b16(n_classes=10).n_classes == 10


def test_without_positions_cls_ignores_the_order_of_the_patches():
    patches = patchify(torch.rand(3, 1, 8, 8), 2)  # [B, 16, 4]
    order = torch.randperm(16, generator=torch.Generator().manual_seed(1))
    model = tiny(positions="none")
    with torch.no_grad():
        out, shuffled = model.encode(patches), model.encode(patches[:, order])
    torch.testing.assert_close(shuffled[:, 0], out[:, 0])  # [CLS]: the same vector
    torch.testing.assert_close(shuffled[:, 1:], out[:, 1:][:, order])  # the patches: moved with their inputs


@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
def test_with_positions_the_order_of_the_patches_matters(positions):
    patches = patchify(torch.rand(3, 1, 8, 8), 2)
    order = torch.randperm(16, generator=torch.Generator().manual_seed(1))
    model = tiny(positions=positions)
    with torch.no_grad():
        out, shuffled = model.encode(patches)[:, 0], model.encode(patches[:, order])[:, 0]
    assert (out - shuffled).abs().max() > 1e-3


def test_sinusoidal_positions_are_tx_positional_encoding_and_not_trained():
    model = tiny(positions="sinusoidal")
    torch.testing.assert_close(model.pe, tx.positional_encoding(17, 16))
    assert model.positions is None and "pe" not in dict(model.named_parameters())


@pytest.mark.parametrize("bad, message", [
    (lambda: patchify(torch.rand(1, 1, 8, 8), 3), r"8x8 pixels does not split into 3x3 patches"),
    (lambda: patchify(torch.rand(8, 8), 2), r"images must have 4 dimensions"),
    (lambda: tiny()(torch.rand(2, 3, 8, 8)), r"1 channel\(s\).*got shape \(2, 3, 8, 8\)"),
    (lambda: tiny()(torch.rand(2, 1, 16, 16)), r"reads 8x8 images.*got 16x16"),
    (lambda: VisionConfig(image_size=10, patch_size=4), r"image_size=10 is not a multiple of patch_size=4"),
    (lambda: VisionConfig(positions="rotary"), r"positions must be one of 'sinusoidal', 'learned', 'none'"),
    (lambda: unpatchify(torch.rand(1, 5, 4), 2, 4, 4), r"5 patches of 4 numbers do not tile a 4x4 image"),
    (lambda: classification_loss(torch.rand(3, 10), torch.tensor([1, 2])), r"logits has 3 rows but labels has 2"),
])
def test_bad_input_is_refused_with_a_clear_message(bad, message):
    with pytest.raises((ValueError, TypeError), match=message):
        bad()


def test_the_digits_split_is_stratified_seeded_and_disjoint(digits):
    sizes = {name: len(split.labels) for name, split in digits.items()}
    assert sizes == {"train": 1257, "valid": 180, "test": 360} and sum(sizes.values()) == 1797
    every = torch.bincount(torch.cat([split.labels for split in digits.values()]), minlength=10)  # [10]
    for split in digits.values():
        assert split.images.shape[1:] == (1, 8, 8) and 0 <= split.images.min() and split.images.max() <= 1
        share = every * len(split.labels) / 1797  # stratified: each class in the proportion of the whole
        assert bool(((torch.bincount(split.labels, minlength=10) - share).abs() <= 1.5).all())
    again = load_digits_split(seed=0)
    torch.testing.assert_close(again["test"].images, digits["test"].images)
    other = load_digits_split(seed=1)
    assert not torch.equal(other["test"].labels, digits["test"].labels)


def test_a_small_seeded_model_learns_the_digits_well_above_chance(digits):
    torch.manual_seed(0)
    model = VisionTransformer(TINY.replace(d_model=32, n_heads=4, d_ff=64))
    before = accuracy(model, digits["valid"])
    config = TrainConfig(steps=150, batch_size=64, warmup=30, lr_factor=0.5, eval_every=50, label_smoothing=0.0)
    with tx.train.cpu_threads(1):
        history = fit_classifier(model, digits["train"], digits["valid"], config, progress=False)
    after = accuracy(model, digits["test"])
    assert before < 0.3 and after > 0.6, (before, after)  # chance is 0.1
    assert history["train_loss"][-1] < history["train_loss"][0] / 2
    assert len(history["valid_accuracy"]) == 3 and not model.training


def test_the_learning_rate_warms_up_like_the_paper_and_ends_at_zero(digits):
    model = tiny()
    small = tx.vision.Split(digits["train"].images[:64], digits["train"].labels[:64])
    config = TrainConfig(steps=40, batch_size=16, warmup=10, lr_factor=1.0, eval_every=100)
    lr = fit_classifier(model, small, None, config, progress=False)["lr"]
    assert len(lr) == 40 and max(lr) == lr[9]  # the peak is at the end of the warm-up
    assert lr[0] == pytest.approx(tx.train.rate(1, 16, 10) * 1.0)  # the paper's rate at step 1
    assert lr[-1] < 0.05 * max(lr)  # and the last steps settle


def test_fit_classifier_refuses_a_translation_model_and_a_diverging_run(digits):
    with pytest.raises(TypeError, match="must be a tx.vision.VisionTransformer"):
        fit_classifier(tx.Transformer(src_vocab_size=5, tgt_vocab_size=5), digits["valid"], config=TrainConfig())
    config = TrainConfig(steps=30, batch_size=16, warmup=1, lr_factor=1e9, eval_every=100)
    with pytest.raises(FloatingPointError, match="the training loss became"):
        fit_classifier(tiny(), digits["valid"], None, config, progress=False)
