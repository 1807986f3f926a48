"""Checkers for chapter 2, Bringing the tensors into the picture: embeddings and the feed-forward network.

Axes: B batch, T sequence length, D d_model, F d_ff, V vocabulary size.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import torch
from torch import Tensor

from . import CheckFailed, as_shape, assert_tensor, call, forbids, keeps_random_state, part, parts, passed, seeded
from .. import data
from ..config import LayerConfig
from ..layers import FeedForward
from ..positional_encoding import Embedding, positional_encoding

__all__ = ["check_position_wise_ffn", "check_embedded_shape", "check_embed_tokens"]


@forbids([(FeedForward, "forward")], "write the two products yourself, with the weights you are given.")
@parts("one sentence", "a batch of sentences", drawn=True)
@keeps_random_state
def check_position_wise_ffn(fn: Callable[..., Any]) -> None:
    """``fn(x, w1, b1, w2, b2)`` must equal :class:`~tx.layers.FeedForward` with the same weights."""
    gen = torch.Generator().manual_seed(seeded(0))
    for name, shape, d_ff in (("one sentence", (1, 3, 4), 6), ("a batch of sentences", (2, 5, 8), 16)):
        with part(name):
            _check_position_wise_ffn(fn, shape, d_ff, gen)
    passed("max(0, x W1 + b1) W2 + b2 matches tx.FeedForward at every position.")


def _check_position_wise_ffn(fn: Callable[..., Any], shape: tuple[int, int, int], d_ff: int,
                             gen: torch.Generator) -> None:
    d_model = shape[-1]
    ffn = FeedForward(LayerConfig(d_model=d_model, n_heads=1, d_ff=d_ff))
    with torch.no_grad():
        for p in ffn.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    x = torch.randn(shape, generator=gen)  # [B, T, D]
    w1, b1 = ffn.linear1.weight.T.clone(), ffn.linear1.bias.clone()  # [D, F], [F]
    w2, b2 = ffn.linear2.weight.T.clone(), ffn.linear2.bias.clone()  # [F, D], [D]
    with torch.no_grad():
        expected = ffn(x)  # [B, T, D]
        no_relu = ffn.linear2(ffn.linear1(x))
    got = call(fn, x.clone(), w1, b1, w2, b2)
    if isinstance(got, Tensor) and got.shape == expected.shape and torch.allclose(got, no_relu, atol=1e-4):
        raise CheckFailed(
            "your output is x W1 + b1 passed straight into W2: apply the ReLU, max(0, .), in between."
        )
    if isinstance(got, Tensor) and got.shape == expected.shape:
        if torch.allclose(got, torch.relu(x @ w1) @ w2 + b2, atol=1e-4):
            raise CheckFailed("b1 is missing: add it to x W1 before the ReLU, max(0, x W1 + b1).")
        if torch.allclose(got, torch.relu(x @ w1 + b1) @ w2, atol=1e-4):
            raise CheckFailed("b2 is missing: add it after the second product, ... W2 + b2.")
    assert_tensor(got, expected, f"your feed-forward output for x of shape {tuple(shape)} (d_ff={d_ff})", atol=1e-4)


@parts("one sentence", "a padded batch", "the most tokens, not the most characters")
@keeps_random_state
def check_embedded_shape(fn: Callable[[list[str], int], Any]) -> None:
    """``fn(sentences, d_model)`` must give the shape of the embedded, padded source batch."""
    batches = {
        "one sentence": [(["je suis étudiant"], 128)],
        "a padded batch": [
            (["merci", "le chat noir mange une pomme", "je suis étudiant"], 128),
            (["l'ami n'est pas fatigué.", "elle lit le journal"], 512),
        ],
        # The sentence with the most characters is not the one with the most tokens.
        "the most tokens, not the most characters": [
            (["nous sommes ici ce soir", "extraordinairement magnifiques"], 64),
        ],
    }
    for name, cases in batches.items():
        with part(name):
            for sentences, d_model in cases:
                _check_embedded_shape(fn, sentences, d_model)
    passed("[batch, longest sentence + <eos>, d_model]: one d_model vector per token of every sentence.")


def _check_embedded_shape(fn: Callable[[list[str], int], Any], sentences: list[str], d_model: int) -> None:
    vocab = data.Vocab.build(sentences)
    src = data.pad([vocab.encode(s, add_bos=False) for s in sentences], vocab.pad_id)  # [B, S]
    embed = Embedding(len(vocab), d_model, max_len=64, dropout=0.0)
    expected = tuple(embed(src).shape)  # (B, S, D)
    got = call(fn, list(sentences), d_model)
    got = as_shape(got, "the shape (batch, length, d_model)", length=3)
    if got == expected:
        return
    hint = ""
    if len(got) == 3 and got[0] == expected[0] and got[2] == expected[2]:
        lengths = [len(data.tokenize(s)) for s in sentences]
        if got[1] == max(lengths):
            hint = " The source ends with <eos>: a sentence of n tokens is n + 1 ids."
        elif got[1] == max(len(s.split()) for s in sentences) + 1:
            hint = (" Count tokens with tx.data.tokenize, not words with str.split: "
                    "\"l'ami\" is two tokens, and \".\" is one.")
        elif got[1] == len(data.tokenize(max(sentences, key=len))) + 1 != max(lengths) + 1:
            hint = (" You took the sentence with the most characters; the batch is padded to the one "
                    "with the most tokens, and a few long words can be fewer tokens than many short ones.")
        elif got[1] == max(lengths) + 2:
            hint = " The source gets <eos> only; <bos> starts the target, not the source."
        elif got[1] != max(lengths) + 1:
            hint = " The batch is padded to its longest sentence."
    raise CheckFailed(f"for {sentences} with d_model={d_model} you gave {got}; expected {expected}.{hint}")


@functools.lru_cache(maxsize=1)
def _book_embedding() -> tuple[Embedding, Any]:
    """The trained model's source embedding and vocabulary (loaded once)."""
    from .. import checkpoint

    ck = checkpoint.load()
    return ck.model.src_embed, ck.src_vocab


@forbids([(Embedding, "forward"), (torch.nn.Embedding, "forward")],
"build the sum from the table and tx.positional_encoding.")
@parts("the book's table from position 0", "other start positions", "a small table of another size", drawn=True)
@keeps_random_state
def check_embed_tokens(fn: Callable[[Tensor, Tensor, int], Any]) -> None:
    """``fn(ids [B, T], table [V, D], start)`` must give equation (2.1) for tokens at positions
    start .. start+T-1, as ``model.src_embed(ids, start=start)`` in evaluation, with every
    ``<pad>`` position (id 0) a vector of zeros, [B, T, D]."""
    embed, vocab = _book_embedding()
    embed = embed.eval()
    sentences = ["je suis étudiant", "le chat noir", "nous aimons les pommes rouges"]
    ids = data.pad([vocab.encode(s, add_bos=False) for s in sentences], vocab.pad_id)  # [B, T]
    table = embed.token.weight.detach().clone()  # [V, D]
    # A table and ids the learner never sees, of another size: d_model is the table's width.
    g = torch.Generator().manual_seed(seeded(2))
    small = torch.randint(1, 11, (2, 4), generator=g)
    small[0, 2:] = data.PAD_ID
    cases = {
        "the book's table from position 0": [(ids, table, 0)],  # two sentences end in <pad>
        "other start positions": [
            (ids, table, 5),
            (ids[2:], table, 2),  # the longest sentence alone: no <pad> at all
            (ids[:, 4:5], table, 9),  # one column, one token per sentence: <pad>, <pad>, rouges
        ],
        "a small table of another size": [(small, torch.randn(11, 6, generator=g), 3)],
    }
    for name, calls in cases.items():
        with part(name):
            for ids, table, start in calls:
                _check_embed_tokens(fn, ids, table, start)
    passed("sqrt(d_model) E[ids] + the positions from start on, zeros at <pad>: what "
           "model.src_embed(ids, start=start) computes in evaluation, with the padding cleared.")


def _check_embed_tokens(fn: Callable[[Tensor, Tensor, int], Any], ids: Tensor, table: Tensor, start: int) -> None:
    T, D = ids.size(1), table.size(1)  # ids [B, T]
    pe = positional_encoding(start + T + 1, D)  # [start+T+1, D]
    rows = table[ids]  # [B, T, D]
    keep = (ids != data.PAD_ID)[..., None].to(table.dtype)  # [B, T, 1]: 0 at <pad>
    where = pe[start : start + T]  # [T, D]
    expected = (rows * math.sqrt(D) + where) * keep  # [B, T, D]
    got = call(fn, ids.clone(), table.clone(), start)
    what = f"your vectors for ids of shape {tuple(ids.shape)}, a table [{table.size(0)}, {D}] and start={start}"
    if isinstance(got, Tensor) and got.shape == expected.shape:
        pads = "the <pad> positions (id 0)"
        masking = [
            (rows * math.sqrt(D) + where, f"give {pads} a vector like any other: set each of them to "
             "zeros, the word and the position alike."),
            (rows * math.sqrt(D) * keep + where, f"leave {pads} their position vector p_i: zero the whole "
             "sum there, not only the word's row."),
            (rows * math.sqrt(D) + where * keep, f"leave {pads} the <pad> row of the table: zero the whole "
             "sum there, not only the position."),
            ((rows * math.sqrt(D) + where) * (1 - keep), "are zero at the words and kept at the <pad> "
             "positions: keep the positions whose id is not 0."),
        ]
        formula = [
            (rows * math.sqrt(D) + pe[:T], f"hold the positions 0 .. {T - 1}: take rows start .. start+T-1 "
             f"of the positional encoding, here {start} .. {start + T - 1}."),
            (rows * math.sqrt(D) + pe[start + 1 : start + T + 1], "are one position late: the first token "
             "sits at position start, so its row of the positional encoding is row start."),
            (rows + where, f"add the rows of the table unscaled: multiply them by "
             f"sqrt(d_model) = sqrt({D}) before adding the positions."),
            ((rows + where) * math.sqrt(D), "scale the positional encoding too: only the "
             "word vectors are multiplied by sqrt(d_model)."),
            (rows * D + where, f"multiply by d_model = {D}; the scale is its square root."),
            (rows * math.sqrt(D), "have no positional encoding: add p_i, rows start .. start+T-1 of "
             "tx.positional_encoding."),
            (rows * math.sqrt(128) + where, "are scaled by sqrt(128), the book's d_model; "
             "take d_model from the table, table.size(1)."),
        ]
        # A wrong formula is named whether or not the <pad> positions were zeroed as well.
        wrong = masking + [(v * k, hint) for v, hint in formula for k in (keep, 1.0)]
        for value, hint in wrong:
            if not torch.allclose(value, expected, atol=1e-4) and torch.allclose(got, value, atol=1e-4):
                raise CheckFailed(f"{what} {hint}")
    call_text = f"embed_tokens(ids of shape {tuple(ids.shape)}, a table [{table.size(0)}, {D}], start={start})"
    assert_tensor(got, expected, call_text, atol=1e-4)
