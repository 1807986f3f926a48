"""Chapter 2's checkers accept the reference answers and reject wrong ones with a useful hint."""

from __future__ import annotations

import math

import pytest
import torch

import tx
from tx.exercises import ch02


# ----------------------------------------------------------------- position-wise feed-forward


def ffn_right(x, w1, b1, w2, b2):
    return torch.relu(x @ w1 + b1) @ w2 + b2


def test_ffn_accepts_the_formula(capsys):
    ch02.check_position_wise_ffn(ffn_right)
    assert capsys.readouterr().out.startswith("Correct:")


@pytest.mark.parametrize("wrong, hint", [
    (lambda x, w1, b1, w2, b2: (x @ w1 + b1) @ w2 + b2, "ReLU"),
    (lambda x, w1, b1, w2, b2: torch.relu(x @ w1) @ w2 + b2, "b1 is missing"),
    (lambda x, w1, b1, w2, b2: torch.relu(x @ w1 + b1) @ w2, "b2 is missing"),
    (lambda x, w1, b1, w2, b2: torch.relu(x @ w1 + b1), "has shape"),
    (lambda x, w1, b1, w2, b2: ffn_right(x, w1, b1, w2, b2).tolist(), "torch.Tensor"),
    # mixing positions breaks the position-wise property
    (lambda x, w1, b1, w2, b2: ffn_right(x.mean(1, keepdim=True).expand_as(x), w1, b1, w2, b2), "differs at index"),
])
def test_ffn_rejects_wrong_answers(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch02.check_position_wise_ffn(wrong)


# ----------------------------------------------------------------- shape of an embedded batch


def shape_right(sentences, d_model):
    return (len(sentences), max(len(tx.data.tokenize(s)) for s in sentences) + 1, d_model)


def test_shape_accepts_the_padded_shape(capsys):
    ch02.check_embedded_shape(shape_right)
    assert capsys.readouterr().out.startswith("Correct:")


def test_shape_accepts_a_list_or_torch_size():
    ch02.check_embedded_shape(lambda s, d: list(shape_right(s, d)))
    ch02.check_embedded_shape(lambda s, d: torch.Size(shape_right(s, d)))


@pytest.mark.parametrize("wrong, hint", [
    (lambda s, d: (len(s), max(len(tx.data.tokenize(x)) for x in s), d), "<eos>"),
    (lambda s, d: (len(s), max(len(x.split()) for x in s) + 1, d), "tokenize"),
    (lambda s, d: (len(s), len(tx.data.tokenize(s[0])) + 1, d), "longest sentence"),
    (lambda s, d: (len(s), len(tx.data.tokenize(max(s, key=len))) + 1, d), "most characters"),
    (lambda s, d: (max(len(tx.data.tokenize(x)) for x in s) + 1, len(s), d), "expected"),
    (lambda s, d: "shape", "three integers"),
    (lambda s, d: (len(s), max(len(tx.data.tokenize(x)) for x in s) + 2, d), "<bos> starts the target"),
    (lambda s, d: (len(s), max(len(tx.data.tokenize(x)) for x in s) + 1, 512), "expected"),  # a hard-coded d_model
])
def test_shape_rejects_wrong_answers(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch02.check_embedded_shape(wrong)


# ----------------------------------------------------------------- equation (2.1) from a start position


def embed_right(ids, table, start):
    T, D = ids.size(1), table.size(1)
    return table[ids] * math.sqrt(D) + tx.positional_encoding(start + T, D)[start:]


def pe(ids, table, first):
    return tx.positional_encoding(first + ids.size(1), table.size(1))[first:]


def test_embed_accepts_equation_2_1(capsys):
    ch02.check_embed_tokens(embed_right)
    assert capsys.readouterr().out.startswith("Correct:")


def test_embed_right_answer_is_the_models_embedding():
    embed = tx.checkpoint.load().model.src_embed.eval()
    ids = torch.tensor([[5, 7, 9]])
    with torch.no_grad():
        torch.testing.assert_close(embed_right(ids, embed.token.weight, 4), embed(ids, start=4))


def through_the_module(ids, table, start):
    embed = tx.Embedding(table.size(0), table.size(1), max_len=64, dropout=0.0)
    with torch.no_grad():
        embed.token.weight.copy_(table)
        return embed(ids, start=start)


@pytest.mark.parametrize("wrong, hint", [
    (lambda ids, t, s: t[ids] * math.sqrt(t.size(1)) + pe(ids, t, 0), "hold the positions 0"),
    (lambda ids, t, s: t[ids] * math.sqrt(t.size(1)) + pe(ids, t, s + 1), "one position late"),
    (lambda ids, t, s: t[ids] + pe(ids, t, s), "unscaled"),
    (lambda ids, t, s: (t[ids] + pe(ids, t, s)) * math.sqrt(t.size(1)), "scale the positional encoding too"),
    (lambda ids, t, s: t[ids] * t.size(1) + pe(ids, t, s), "square root"),
    (lambda ids, t, s: t[ids] * math.sqrt(t.size(1)), "no positional encoding"),
    (lambda ids, t, s: t[ids] * math.sqrt(128) + pe(ids, t, s), "take d_model from the table"),
    (lambda ids, t, s: embed_right(ids, t, s)[0], "has shape"),
    (through_the_module, "calls Embedding.forward"),
    (lambda ids, t, s: torch.nn.functional.embedding(ids, t) * math.sqrt(t.size(1)) + pe(ids, t, s) + 1,
     "differs"),
])
def test_embed_rejects_wrong_answers(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch02.check_embed_tokens(wrong)
