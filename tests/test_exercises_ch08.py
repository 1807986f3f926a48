"""Chapter 8's checkers accept the reference answers and reject the usual mistakes with a hint."""

from __future__ import annotations

import pytest
import torch

import tx
from conftest import rng_untouched
from tx.exercises import ch08


def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).tril()


def cache_bytes(config, batch, max_len, src_len):
    # per layer: keys and values, [B, H, positions, Dh] each, H * Dh = d_model, 4 bytes a float32
    return config.n_layers * 2 * batch * config.d_model * (max_len + src_len) * 4


def cross_attention_keys(model, src, tgt, layer):
    memory = model.encode(src)
    attn = model.decoder.layers[layer].cross_attn
    return tx.split_heads(attn.w_k(memory), attn.n_heads)


def test_reference_answers_pass(capsys):
    ch08.check_causal_mask(causal_mask)
    ch08.check_cache_bytes(cache_bytes)
    ch08.check_cross_attention_keys(cross_attention_keys)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and all(line.startswith("Correct:") for line in lines)


@pytest.mark.parametrize("wrong, hint", [
    (lambda T: torch.ones(T, T, dtype=torch.bool).triu(), "transpose"),
    (lambda T: ~torch.ones(T, T, dtype=torch.bool).tril(), "inverted"),  # True = blocked, nn.Transformer's convention
    (lambda T: tx.causal_mask(T), "calls tx.causal_mask"),
    (lambda T: torch.ones(T, T, dtype=torch.bool).tril() & (torch.rand(T, T) < 2) if T < 4 else torch.ones(4, 4).bool().tril(), "shape"),
    (lambda T: torch.ones(T, T, dtype=torch.bool).tril(-1), "itself"),
    (lambda T: torch.ones(T, T).tril(), "dtype"),
    (lambda T: torch.ones(T, T, dtype=torch.bool), "can see position"),
    (lambda T: torch.ones(T, T + 1, dtype=torch.bool).tril(), "shape"),
    (lambda T: torch.ones(T, T, dtype=torch.bool).tril(-1) if T > 3 else causal_mask(T), "itself"),
    (lambda T: [[j <= i for j in range(T)] for i in range(T)], "torch.Tensor"),
])
def test_causal_mask_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch08.check_causal_mask(wrong)


def test_cache_bytes_is_what_a_real_cache_holds():
    # The reference formula, against a tx cache filled by a whole greedy decoding.
    config = tx.TransformerConfig(src_vocab_size=13, tgt_vocab_size=11, d_model=24, n_heads=6, n_layers=2, d_ff=48, dropout=0.0, max_len=32)
    model, src = tx.Transformer.from_config(config).eval(), torch.randint(4, 13, (3, 7))
    cache = model.new_cache(20)
    with torch.no_grad():
        memory, ys = model.encode(src), torch.ones(3, 1, dtype=torch.long)
        for _ in range(20):
            logits = model.decode(memory, src, ys[:, -1:], cache)
            ys = torch.cat([ys, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    held = sum(t.nbytes for c in cache.self_attn + cache.cross_attn for t in (c.k, c.v))
    assert cache.length == 20 and held == cache_bytes(config, 3, 20, 7)


def positions(c, B, M, S, factor=2):
    return c.n_layers * factor * B * c.d_model * 4


@pytest.mark.parametrize("wrong, hint", [
    (lambda c, B, M, S: cache_bytes(c, B, M, S) // 2, "half the bytes"),  # keys only, or 2 bytes a number
    (lambda c, B, M, S: c.n_layers * B * c.d_model * (M + S) * 2 * 2, "half the bytes"),  # float16
    (lambda c, B, M, S: c.n_layers * 2 * B * c.d_model * (M + S), "counted numbers"),  # 1 byte a number
    (lambda c, B, M, S: cache_bytes(c, B, M, S) * 2, "not 8"),
    (lambda c, B, M, S: positions(c, B, M, S) * M, "left out the cross-attention"),
    (lambda c, B, M, S: positions(c, B, M, S) * S, "only the cross-attention"),
    (lambda c, B, M, S: positions(c, B, M, S) * (1 + S), "all max_len positions"),  # the filled part only
    (lambda c, B, M, S: positions(c, B, M, S) * 2 * M, "src_len positions, not max_len"),
    (lambda c, B, M, S: cache_bytes(c, B, M, S) * c.n_heads, "d_model numbers per position"),  # d_model per head
    (lambda c, B, M, S: cache_bytes(c, B, M, S) // c.n_heads, "counted one head"),
    (lambda c, B, M, S: cache_bytes(c, 1, M, S), "multiply by batch"),
    (lambda c, B, M, S: cache_bytes(c, B, M, S) // c.n_layers, "multiply by n_layers"),
    (lambda c, B, M, S: cache_bytes(c, B, M, S) + 1, "Count, for each of the n_layers"),
    (lambda c, B, M, S: cache_bytes(c, B, M, S) / 1e6, "an int"),  # megabytes, not bytes
    (lambda c, B, M, S: str(cache_bytes(c, B, M, S)), "an int"),
    (lambda c, B, M, S: 21120, "expected"),  # the first case's answer, hard-coded
    (lambda c, B, M, S: cache_bytes(c, B, M, S) if c.n_layers == 3 else 0, "expected"),
    (lambda c, B, M, S: torch.tensor(cache_bytes(c, B, M, S) // 2), "half the bytes"),
    (lambda c, B, M, S: sum(p.numel() for p in tx.Transformer.from_config(c).parameters()), "without building"),
])
def test_cache_bytes_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch08.check_cache_bytes(wrong)


def test_cache_bytes_accepts_a_float_or_a_tensor_holding_the_count(capsys):
    ch08.check_cache_bytes(lambda c, B, M, S: float(cache_bytes(c, B, M, S)))
    ch08.check_cache_bytes(lambda c, B, M, S: torch.tensor(cache_bytes(c, B, M, S)))
    assert capsys.readouterr().out.count("Correct:") == 2


def keys_from_target(model, src, tgt, layer):
    attn = model.decoder.layers[layer].cross_attn
    x = model.tgt_embed(tgt)
    return tx.split_heads(attn.w_k(x), attn.n_heads)


def keys_from_embeddings(model, src, tgt, layer):
    attn = model.decoder.layers[layer].cross_attn
    return tx.split_heads(attn.w_k(model.src_embed(src)), attn.n_heads)


def keys_not_split(model, src, tgt, layer):
    return model.decoder.layers[layer].cross_attn.w_k(model.encode(src))


def keys_of_layer_zero(model, src, tgt, layer):
    return cross_attention_keys(model, src, tgt, 0)


def values_not_keys(model, src, tgt, layer):
    attn = model.decoder.layers[layer].cross_attn
    return tx.split_heads(attn.w_v(model.encode(src)), attn.n_heads)


@pytest.mark.parametrize("wrong, hint", [
    (keys_from_target, "target's length"), (keys_from_embeddings, "source embeddings"),
    (keys_not_split, "split it into heads"), (keys_of_layer_zero, "layer 0's keys"),
    (values_not_keys, "these are the values"),
])
def test_cross_attention_keys_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch08.check_cross_attention_keys(wrong)


def test_checkers_leave_the_random_stream_alone():
    assert rng_untouched(ch08.check_cache_bytes, cache_bytes)
    assert rng_untouched(ch08.check_cross_attention_keys, cross_attention_keys)
