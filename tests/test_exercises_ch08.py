"""Chapter 8's checkers accept the reference answers and reject the usual mistakes with a hint."""

from __future__ import annotations

import pytest
import torch

import tx
from conftest import rng_untouched
from tx.exercises import ch08


def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).tril()


def next_tokens(logits, done, pad_id):
    return logits[:, -1].argmax(dim=-1).masked_fill(done, pad_id)


def cross_attention_keys(model, src, tgt, layer):
    memory = model.encode(src)
    attn = model.decoder.layers[layer].cross_attn
    return tx.split_heads(attn.w_k(memory), attn.n_heads)


def test_reference_answers_pass(capsys):
    ch08.check_causal_mask(causal_mask)
    ch08.check_next_tokens(next_tokens)
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


@pytest.mark.parametrize("wrong, hint", [
    (lambda logits, done, pad: logits[:, 0].argmax(-1).masked_fill(done, pad), "first position"),
    (lambda logits, done, pad: logits[:, -1].argmax(-1), "pad_id"),
    (lambda logits, done, pad: logits[:, -1].softmax(-1).max(-1).values, "integer"),
    (lambda logits, done, pad: logits[:, -1].argmin(-1).masked_fill(done, pad), "differs"),
    (lambda logits, done, pad: logits.argmax(-1), "shape"),
    (lambda logits, done, pad: logits[:, -1].argmax(-1).masked_fill(done, 0), "pad_id argument"),  # a fixed 0
    (lambda logits, done, pad: logits[:, -1].argmax(-1).masked_fill(done, pad)[:1], "shape"),
])
def test_next_tokens_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch08.check_next_tokens(wrong)


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
    assert rng_untouched(ch08.check_next_tokens, next_tokens)
    assert rng_untouched(ch08.check_cross_attention_keys, cross_attention_keys)
