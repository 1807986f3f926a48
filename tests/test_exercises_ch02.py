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


# ----------------------------------------------------------------- equation (2.1), padded, from a start position


def embed_right(ids, table, start):
    T, D = ids.size(1), table.size(1)
    x = table[ids] * math.sqrt(D) + tx.positional_encoding(start + T, D)[start:]
    return x * (ids != tx.data.PAD_ID)[..., None]


def pe(ids, table, first):
    return tx.positional_encoding(first + ids.size(1), table.size(1))[first:]


def keep(ids):
    return (ids != 0)[..., None]


def test_embed_accepts_equation_2_1_with_zeros_at_pad(capsys):
    ch02.check_embed_tokens(embed_right)
    assert capsys.readouterr().out.startswith("Correct:")


def test_embed_accepts_masked_fill_and_where():
    def masked_fill(ids, t, s):
        x = t[ids] * math.sqrt(t.size(1)) + pe(ids, t, s)
        return x.masked_fill((ids == 0)[..., None], 0.0)

    def where(ids, t, s):
        x = t[ids] * math.sqrt(t.size(1)) + pe(ids, t, s)
        return torch.where(keep(ids), x, torch.zeros(()))

    ch02.check_embed_tokens(masked_fill)
    ch02.check_embed_tokens(where)


def test_embed_right_answer_is_the_models_embedding_with_pad_cleared():
    embed = tx.checkpoint.load().model.src_embed.eval()
    ids = torch.tensor([[5, 7, 9], [6, 0, 0]])
    with torch.no_grad():
        theirs = embed(ids, start=4)
        ours = embed_right(ids, embed.token.weight, 4)
    torch.testing.assert_close(ours[0], theirs[0])
    torch.testing.assert_close(ours[1, 0], theirs[1, 0])
    # the model itself leaves <pad> a vector; the exercise clears it
    assert theirs[1, 1:].abs().sum() > 0 and ours[1, 1:].abs().sum() == 0


def through_the_module(ids, table, start):
    embed = tx.Embedding(table.size(0), table.size(1), max_len=64, dropout=0.0)
    with torch.no_grad():
        embed.token.weight.copy_(table)
        return embed(ids, start=start) * keep(ids)


def scaled(ids, t):
    return t[ids] * math.sqrt(t.size(1))


@pytest.mark.parametrize("wrong, hint", [
    # the padding
    (lambda ids, t, s: scaled(ids, t) + pe(ids, t, s), "a vector like any other"),
    (lambda ids, t, s: scaled(ids, t) * keep(ids) + pe(ids, t, s), "their position vector"),
    (lambda ids, t, s: scaled(ids, t) + pe(ids, t, s) * keep(ids), "the <pad> row of the table"),
    (lambda ids, t, s: (scaled(ids, t) + pe(ids, t, s)) * (ids == 0)[..., None], "keep the positions"),
    (lambda ids, t, s: (scaled(ids, t) + pe(ids, t, s)) * (ids != 0), "RuntimeError"),  # [B, T] vs [B, T, D]
    # the formula, with the padding cleared
    (lambda ids, t, s: (scaled(ids, t) + pe(ids, t, 0)) * keep(ids), "hold the positions 0"),
    (lambda ids, t, s: (scaled(ids, t) + pe(ids, t, s + 1)) * keep(ids), "one position late"),
    (lambda ids, t, s: (t[ids] + pe(ids, t, s)) * keep(ids), "unscaled"),
    (lambda ids, t, s: (t[ids] + pe(ids, t, s)) * math.sqrt(t.size(1)) * keep(ids),
     "scale the positional encoding too"),
    (lambda ids, t, s: (t[ids] * t.size(1) + pe(ids, t, s)) * keep(ids), "square root"),
    (lambda ids, t, s: scaled(ids, t) * keep(ids), "no positional encoding"),
    (lambda ids, t, s: (t[ids] * math.sqrt(128) + pe(ids, t, s)) * keep(ids), "take d_model from the table"),
    # ... and without it
    (lambda ids, t, s: scaled(ids, t) + pe(ids, t, s + 1), "one position late"),
    (lambda ids, t, s: embed_right(ids, t, s)[0], "has shape"),
    (through_the_module, "calls Embedding.forward"),
    (lambda ids, t, s: embed_right(ids, t, s) + 1, "differs"),
])
def test_embed_rejects_wrong_answers(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch02.check_embed_tokens(wrong)
