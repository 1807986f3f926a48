import math

import pytest
import torch
from torch.testing import assert_close

import tx


def test_matches_the_paper_formula_entry_by_entry():
    pe = tx.positional_encoding(20, 8)
    assert pe.shape == (20, 8)
    for pos in (0, 1, 7, 19):
        for i in range(4):
            angle = pos / 10000 ** (2 * i / 8)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_shift_by_k_is_a_fixed_rotation():
    # PE[pos + k] = R_k PE[pos] with R_k a block-diagonal rotation independent of pos (paper 3.5).
    d, k = 16, 3
    pe = tx.positional_encoding(50, d)
    freqs = 1 / 10000 ** (torch.arange(0, d, 2) / d)
    R = torch.zeros(d, d)
    for i, w in enumerate(freqs):
        c, s = math.cos(k * w), math.sin(k * w)
        R[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor([[c, -s], [s, c]])
    assert_close(pe[:-k] @ R, pe[k:], atol=1e-5, rtol=0)


def test_odd_width_is_rejected():
    with pytest.raises(ValueError, match="even"):
        tx.positional_encoding(10, 7)


def test_embedding_scales_by_sqrt_d_and_adds_the_encoding():
    emb = tx.Embedding(vocab_size=10, d_model=8, max_len=12, dropout=0.0)
    tokens = torch.tensor([[3, 4, 5]])
    out = emb(tokens, start=2)
    expected = emb.token.weight[tokens] * math.sqrt(8) + tx.positional_encoding(12, 8)[2:5]
    assert_close(out, expected)
    assert "pe" not in dict(emb.named_parameters())  # fixed, not learned


def test_learned_positions_are_trained_parameters_and_sliced_by_start():
    pos = tx.LearnedPositions(max_len=6, d_model=4)
    assert [n for n, _ in pos.named_parameters()] == ["table"]
    torch.testing.assert_close(pos(3, start=2), pos.table[2:5])
    with pytest.raises(ValueError, match=r"positions 4..6 are past the positional table's 6 rows"):
        pos(3, start=4)


def test_learned_embedding_adds_its_table_and_skips_the_scale_when_asked():
    emb = tx.Embedding(10, 8, 5, dropout=0.0, positions="learned", scale=False)
    tokens = torch.tensor([[1, 2, 3]])
    expected = emb.token(tokens) + emb.learned.table[1:4]
    torch.testing.assert_close(emb(tokens, start=1), expected)
    assert "learned.table" in dict(emb.named_parameters())
    # the paper's embedding keeps no trained table and no extra parameter
    assert set(dict(tx.Embedding(10, 8, 5).named_parameters())) == {"token.weight"}
    with pytest.raises(ValueError, match=r"positions must be one of 'sinusoidal', 'learned', got 'rope'"):
        tx.Embedding(10, 8, 5, positions="rope")
