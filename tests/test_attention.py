import math

import pytest
import torch
from torch.testing import assert_close

import tx


def test_attention_matches_a_hand_computation():
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    k = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
    v = torch.tensor([[1.0], [2.0], [3.0]])
    out, w = tx.attention(q, k, v)
    # Row 0: scores (1, 1, 0) / sqrt(2); row 1: (0, 1, 2) / sqrt(2).
    for row, scores in enumerate([[1, 1, 0], [0, 1, 2]]):
        e = [math.exp(s / math.sqrt(2)) for s in scores]
        expected_w = [x / sum(e) for x in e]
        assert_close(w[row], torch.tensor(expected_w))
        assert_close(out[row, 0], torch.tensor(sum(p * x for p, x in zip(expected_w, [1, 2, 3]))))


def test_weights_are_distributions_and_mask_zeroes_positions():
    q, k, v = torch.randn(2, 3, 4, 8), torch.randn(2, 3, 5, 8), torch.randn(2, 3, 5, 6)
    mask = torch.tensor([True, True, False, True, False])
    out, w = tx.attention(q, k, v, mask)
    assert out.shape == (2, 3, 4, 6) and w.shape == (2, 3, 4, 5)
    assert_close(w.sum(-1), torch.ones(2, 3, 4))
    assert torch.all(w[..., ~mask] == 0)


def test_attention_equals_torch_sdpa_with_mask():
    q, k, v = torch.randn(2, 4, 6, 8), torch.randn(2, 4, 7, 8), torch.randn(2, 4, 7, 8)
    mask = torch.rand(2, 1, 6, 7) > 0.3
    mask[..., 0] = True
    ours, _ = tx.attention(q, k, v, mask)
    assert_close(ours, torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask))


def test_self_attention_by_vectors_equals_matrix_form():
    X = torch.randn(3, 4)
    W_q, W_k, W_v = torch.randn(4, 3), torch.randn(4, 3), torch.randn(4, 2)
    Z = tx.self_attention_by_vectors(X, W_q, W_k, W_v)
    assert Z.shape == (3, 2)
    assert_close(Z, tx.attention(X @ W_q, X @ W_k, X @ W_v)[0])


def test_mask_of_wrong_shape_is_a_clear_value_error():
    q = k = v = torch.randn(2, 5, 8)
    with pytest.raises(ValueError, match=r"does not broadcast .*\[\.\.\., Tq, Tk\]"):
        tx.attention(q, k, v, torch.ones(4, 4, dtype=torch.bool))


def test_float_mask_is_a_type_error_that_names_the_convention():
    q = k = v = torch.randn(5, 8)
    with pytest.raises(TypeError, match="True = may attend"):
        tx.attention(q, k, v, torch.ones(5, 5))
