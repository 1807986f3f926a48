"""Chapter 14's checkers accept the right answers and reject wrong ones with a hint."""

import math

import pytest
import torch

from tx.exercises import ch14
from tx.vision import patchify


def test_patchify_accepts_a_right_answer(capsys):
    def right(images, P):
        x, shape = _blocks(images, P)
        return x.permute(0, 2, 4, 1, 3, 5).reshape(shape)

    ch14.check_patchify(right)
    assert capsys.readouterr().out.startswith("Correct:")


def test_patchify_refuses_tx_s_own_function_under_any_name():
    with pytest.raises(AssertionError, match="calls tx.vision.patchify"):
        ch14.check_patchify(patchify)  # taken before the check


def test_patchify_refuses_tx_s_own_function_the_page_folds():
    import tx.vision

    with pytest.raises(AssertionError, match="calls tx.vision.patchify"):
        ch14.check_patchify(lambda images, P: tx.vision.patchify(images, P))


def _blocks(images, P):
    B, C, H, W = images.shape
    return images.reshape(B, C, H // P, P, W // P, P), (B, (H // P) * (W // P), C * P * P)


def test_patchify_rejects_patches_taken_column_by_column():
    def by_columns(images, P):
        x, shape = _blocks(images, P)
        return x.permute(0, 4, 2, 1, 3, 5).reshape(shape)

    with pytest.raises(AssertionError, match="column by column: the grid's row index"):
        ch14.check_patchify(by_columns)


def test_patchify_rejects_channels_last():
    def channels_last(images, P):
        x, shape = _blocks(images, P)
        return x.permute(0, 2, 4, 3, 5, 1).reshape(shape)

    with pytest.raises(AssertionError, match="channels last"):
        ch14.check_patchify(channels_last)


def test_patchify_rejects_a_plain_reshape():
    def plain(images, P):
        B, C, H, W = images.shape
        return images.reshape(B, (H // P) * (W // P), C * P * P)

    with pytest.raises(AssertionError, match="runs of whole rows|differs"):
        ch14.check_patchify(plain)


def test_patchify_rejects_unfold_and_the_stub():
    with pytest.raises(AssertionError, match="calls .*unfold"):
        ch14.check_patchify(lambda x, P: torch.nn.functional.unfold(x, P, stride=P).transpose(1, 2))

    def stub(images, P):
        raise NotImplementedError

    with pytest.raises(AssertionError, match="still raises NotImplementedError"):
        ch14.check_patchify(stub)


def count(image_size, P, C, Y, D, n_layers, d_ff):
    N = (image_size // P) ** 2
    layer = 4 * (D * D + D) + (D * d_ff + d_ff) + (d_ff * D + D) + 2 * 2 * D
    return (C * P * P * D + D) + D + (N + 1) * D + n_layers * layer + 2 * D + (D * Y + Y)


def test_count_accepts_the_sum_of_the_pieces(capsys):
    ch14.check_count_vit_parameters(count)
    assert capsys.readouterr().out.startswith("Correct:")
    assert count(224, 16, 3, 1000, 768, 12, 3072) == 86_567_656


@pytest.mark.parametrize("wrong, hint", [
    (lambda s, P, C, Y, D, n, f: count(s, P, C, Y, D, n, f) - D, r"a row for \[CLS\] too"),
    (lambda s, P, C, Y, D, n, f: count(s, P, C, Y, D, n, f) - 2 * D, r"one more LayerNorm"),
    (lambda s, P, C, Y, D, n, f: count(s, P, C, Y, D, n, f) - n * 4 * D, r"two LayerNorms"),
    (lambda s, P, C, Y, D, n, f: count(s, P, C, Y, D, n, f) - ((s // P) ** 2 + 1) * D, r"learned positions are parameters"),
    (lambda s, P, C, Y, D, n, f: count(s, P, C, Y, D, n, f) + 1, r"Add up the patch embedding"),
    (lambda s, P, C, Y, D, n, f: float("nan"), r"should return an int"),
])
def test_count_rejects_typical_mistakes_with_a_hint(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch14.check_count_vit_parameters(wrong)


def test_count_rejects_building_the_model():
    from tx.vision import VisionConfig, VisionTransformer

    def builds(s, P, C, Y, D, n, f):
        model = VisionTransformer(VisionConfig(image_size=s, patch_size=P, channels=C, n_classes=Y, d_model=D,
                                               n_heads=1, n_layers=n, d_ff=f))
        return sum(p.numel() for p in model.parameters())

    with pytest.raises(AssertionError, match="without building the model"):
        ch14.check_count_vit_parameters(builds)


def cls_attention(q, k):
    return (q[:, :1] @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).softmax(-1)[:, 0]


def test_cls_attention_accepts_the_first_row(capsys):
    ch14.check_cls_attention(cls_attention)
    assert capsys.readouterr().out.startswith("Correct:")


@pytest.mark.parametrize("wrong, hint", [
    (lambda q, k: (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).softmax(-1)[:, :, 0], r"first column"),
    (lambda q, k: (q @ k.transpose(-2, -1)).softmax(-1)[:, 0], r"sqrt\(Dh\)"),
    (lambda q, k: (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).softmax(-2)[:, 0], r"over the keys"),
    (lambda q, k: (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)))[:, 0], r"differs"),
    (lambda q, k: cls_attention(q, k)[0], r"shape"),
])
def test_cls_attention_rejects_typical_mistakes_with_a_hint(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch14.check_cls_attention(wrong)
