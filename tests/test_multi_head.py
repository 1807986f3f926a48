import pytest
import torch
from torch.testing import assert_close

import tx
from torch_reference import copy_attention


def test_split_and_merge_heads_are_inverse_and_slice_features():
    x = torch.randn(2, 5, 12)
    h = tx.split_heads(x, 3)
    assert h.shape == (2, 3, 5, 4)
    assert_close(h[:, 1], x[..., 4:8])  # head 1 owns features 4..7
    assert_close(tx.merge_heads(h), x)


@pytest.mark.parametrize("cross", [False, True])
def test_equals_torch_multihead_attention_with_copied_weights(cross):
    ours = tx.MultiHeadAttention(16, 4).eval()
    theirs = torch.nn.MultiheadAttention(16, 4, batch_first=True).eval()
    copy_attention(ours, theirs)
    x = torch.randn(2, 5, 16)
    memory = torch.randn(2, 7, 16) if cross else x
    keep = torch.ones(2, memory.size(1), dtype=torch.bool)
    keep[1, -2:] = False  # padding in the second sentence
    out = ours(x, memory, memory, mask=keep[:, None, None, :], need_weights=True)
    ref, ref_w = theirs(x, memory, memory, key_padding_mask=~keep, average_attn_weights=False)
    assert_close(out, ref, atol=1e-5, rtol=1e-5)
    assert_close(ours.attention_weights, ref_w, atol=1e-5, rtol=1e-5)


def test_fused_path_equals_explicit_path():
    mha = tx.MultiHeadAttention(16, 4).eval()
    x, mem = torch.randn(3, 6, 16), torch.randn(3, 4, 16)
    mask = tx.causal_mask(6)
    assert_close(mha(x, x, x, mask), mha(x, x, x, mask, need_weights=True))
    assert_close(mha(x, mem, mem), mha(x, mem, mem, need_weights=True))


def test_need_weights_records_heads_that_sum_to_one():
    mha = tx.MultiHeadAttention(16, 4)
    mha(torch.randn(2, 3, 16), torch.randn(2, 5, 16), torch.randn(2, 5, 16), need_weights=True)
    w = mha.attention_weights
    assert w.shape == (2, 4, 3, 5)
    assert_close(w.sum(-1), torch.ones(2, 4, 3))


def test_d_model_not_divisible_by_heads_is_a_clear_error():
    with pytest.raises(ValueError, match="not divisible by n_heads=3.*divisors of 16"):
        tx.MultiHeadAttention(16, 3)


def test_mask_of_wrong_shape_is_rejected():
    mha = tx.MultiHeadAttention(8, 2)
    x = torch.randn(2, 4, 8)
    with pytest.raises(ValueError, match="does not broadcast"):
        mha(x, x, x, mask=torch.ones(2, 5, dtype=torch.bool))


def test_growing_cache_gives_the_same_output_as_the_full_sequence():
    mha = tx.MultiHeadAttention(16, 4).eval()
    x = torch.randn(2, 5, 16)
    full = mha(x, x, x, tx.causal_mask(5))
    cache = tx.KVCache(max_len=8)
    steps = [mha(x[:, t : t + 1], x[:, t : t + 1], x[:, t : t + 1], cache=cache) for t in range(5)]
    assert cache.length == 5
    assert_close(torch.cat(steps, 1), full, atol=1e-6, rtol=1e-5)


def test_cache_overflow_is_a_clear_error():
    cache = tx.KVCache(max_len=2)
    k = torch.randn(1, 1, 2, 4)
    cache.update(k, k)
    with pytest.raises(ValueError, match="larger max_len"):
        cache.update(k[:, :, :1], k[:, :, :1])


def test_cache_keeps_the_stacked_projection_only_without_gradients():
    mha = tx.MultiHeadAttention(16, 4).eval()
    x = torch.randn(2, 1, 16)
    with torch.no_grad():
        cache = tx.KVCache(max_len=4)
        mha(x, x, x, cache=cache)
    w, b = cache.projection
    assert torch.equal(w, torch.cat([mha.w_q.weight, mha.w_k.weight, mha.w_v.weight]))
    assert torch.equal(b, torch.cat([mha.w_q.bias, mha.w_k.bias, mha.w_v.bias]))
    # With gradients on, each step builds its own graph: a backward pass after one step
    # must leave the next step free to run its own.
    cache = tx.KVCache(max_len=4)
    for t in range(2):
        mha(x, x, x, cache=cache).sum().backward()
        cache.k, cache.v = cache.k.detach(), cache.v.detach()
    assert cache.projection is None and mha.w_q.weight.grad is not None
