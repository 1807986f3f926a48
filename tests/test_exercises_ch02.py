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


# ----------------------------------------------------------------- embedding lookup by hand


def embed_right(ids, table):
    return table[ids] * math.sqrt(table.size(1))


def test_embed_accepts_the_scaled_lookup(capsys):
    ch02.check_embed_tokens(embed_right)
    assert capsys.readouterr().out.startswith("Correct:")


@pytest.mark.parametrize("wrong, hint", [
    (lambda ids, table: table[ids], "sqrt\\(d_model\\)"),
    (lambda ids, table: table[ids] * math.sqrt(table.size(1)) + tx.positional_encoding(ids.size(1), table.size(1)),
     "positional encoding"),
    (lambda ids, table: table[ids] * table.size(1), "square root"),
    (lambda ids, table: table[ids] * math.sqrt(128), "take d_model from the table"),  # the book's size, hard-coded
    (lambda ids, table: table[ids[0]] * math.sqrt(table.size(1)), "has shape"),
])
def test_embed_rejects_wrong_answers(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch02.check_embed_tokens(wrong)
