import torch

import tx


def test_causal_mask_is_lower_triangular_true():
    m = tx.causal_mask(4)
    assert m.dtype == torch.bool
    expected = torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]], dtype=torch.bool)
    assert torch.equal(m, expected)


def test_padding_mask_marks_real_tokens_and_broadcasts():
    tokens = torch.tensor([[5, 6, 0], [7, 0, 0]])
    m = tx.padding_mask(tokens, pad_id=0)
    assert m.shape == (2, 1, 1, 3)
    assert m[:, 0, 0].tolist() == [[True, True, False], [True, False, False]]


def test_causal_mask_rejects_empty_length():
    import pytest

    with pytest.raises(ValueError, match="at least 1"):
        tx.causal_mask(0)
