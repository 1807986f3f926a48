"""Chapter 6's checkers accept right answers and reject wrong ones with a hint."""

import math

import pytest
import torch

import tx
from tx.exercises import ch06


def halves_layout(max_len, d_model):
    pe = tx.positional_encoding(max_len, d_model)
    return torch.cat([pe[:, 0::2], pe[:, 1::2]], dim=1)


def swapped(max_len, d_model):
    pe = tx.positional_encoding(max_len, d_model)
    out = pe.clone()
    out[:, 0::2], out[:, 1::2] = pe[:, 1::2], pe[:, 0::2]
    return out


def exponent_i_not_2i(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float32)[:, None]
    i = torch.arange(d_model // 2, dtype=torch.float32)
    angle = pos / 10000 ** (i / d_model)
    return torch.stack([angle.sin(), angle.cos()], dim=-1).reshape(max_len, d_model)


def by_hand(pos=5, d_model=6):
    row = []
    for two_i in range(0, d_model, 2):
        angle = pos / 10000 ** (two_i / d_model)
        row += [math.sin(angle), math.cos(angle)]
    return row


# ----------------------------------------------------------------- by hand


def test_pe_by_hand_accepts_the_six_numbers(capsys):
    ch06.check_pe_by_hand(by_hand)
    assert capsys.readouterr().out.startswith("Correct:")


def test_pe_by_hand_accepts_a_tensor_too(capsys):
    ch06.check_pe_by_hand(lambda: torch.tensor(by_hand()))
    assert "Correct:" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda row=halves_layout(6, 6)[5].tolist(): row, "all the sines first"),
    (lambda row=swapped(6, 6)[5].tolist(): row, "swapped"),
    (lambda row=exponent_i_not_2i(6, 6)[5].tolist(): row, "frequency"),
    (lambda: by_hand()[:4], "6 numbers"),
    (lambda: "sin(5)", "list of 6 numbers"),
    (lambda: by_hand(pos=4), "differs at index"),
    (lambda: tx.positional_encoding(6, 6)[5].tolist(), "calls tx.positional_encoding"),
    (lambda: [v * float("nan") for v in by_hand()], "nan or inf"),
])
def test_pe_by_hand_rejects_wrong_answers(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch06.check_pe_by_hand(wrong)


# ----------------------------------------------------------------- the table


def test_positional_encoding_accepts_tx(capsys):
    ch06.check_positional_encoding(tx.positional_encoding)
    assert capsys.readouterr().out.startswith("Correct:")


def test_positional_encoding_accepts_a_float64_table(capsys):
    ch06.check_positional_encoding(lambda L, D: tx.positional_encoding(L, D).double())
    assert "Correct:" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (halves_layout, "concatenated layout"),
    (swapped, "swapped"),
    (exponent_i_not_2i, "not i"),
    (lambda L, D: tx.positional_encoding(L + 1, D)[1:], "differs at index"),
    (lambda L, D: tx.positional_encoding(L, D)[None], "has shape"),  # a batch axis too many
    (lambda L, D: tx.positional_encoding(L, D).tolist(), "torch.Tensor"),
])
def test_positional_encoding_rejects_wrong_tables(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch06.check_positional_encoding(wrong)


# ----------------------------------------------------------------- dot products


def offset_dot(k, d_model):
    return sum(math.cos(k / 10000 ** (two_i / d_model)) for two_i in range(0, d_model, 2))


def test_offset_dot_accepts_the_sum_of_cosines(capsys):
    ch06.check_offset_dot(offset_dot)
    assert capsys.readouterr().out.startswith("Correct:")


def test_offset_dot_accepts_a_tensor_result(capsys):
    ch06.check_offset_dot(lambda k, d: torch.tensor(offset_dot(k, d)))
    assert "Correct:" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda k, d: 2 * offset_dot(k, d), "d_model / 2"),  # counts each pair twice
    (lambda k, d: offset_dot(k, d) + (k > 0), r"offset_dot\(1, 4\)"),
    (lambda k, d: sum(math.sin(k / 10000 ** (t / d)) for t in range(0, d, 2)) + d / 2 * (k == 0), "offset_dot"),
    (lambda k, d: [offset_dot(k, d)], "should return a number"),
    (lambda k, d: float((tx.positional_encoding(k + 1, d)[0] * tx.positional_encoding(k + 1, d)[k]).sum()), "calls tx.positional_encoding"),
    (lambda k, d: offset_dot(k, d) if d in (4, 64, 512) else 0.0, r"offset_dot\(\d+, \d+\) is 0"),  # the visible sizes only
    (lambda k, d: float("nan"), "not a finite number"),
])
def test_offset_dot_rejects_wrong_values(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch06.check_offset_dot(wrong)
