"""Chapter 6's checkers accept right answers and reject wrong ones with a hint."""

import math

import pytest
import torch

import tx
from tx.exercises import ch06


def table(max_len, d_model):
    """The right answer, written out: the checker refuses tx.positional_encoding itself."""
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = pos / 10000 ** (two_i / d_model)
    return torch.stack([angle.sin(), angle.cos()], dim=-1).reshape(max_len, d_model).float()


def halves_layout(max_len, d_model):
    pe = table(max_len, d_model)
    return torch.cat([pe[:, 0::2], pe[:, 1::2]], dim=1)


def swapped(max_len, d_model):
    pe = table(max_len, d_model)
    out = pe.clone()
    out[:, 0::2], out[:, 1::2] = pe[:, 1::2], pe[:, 0::2]
    return out


def exponent_i_not_2i(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float32)[:, None]
    i = torch.arange(d_model // 2, dtype=torch.float32)
    angle = pos / 10000 ** (i / d_model)
    return torch.stack([angle.sin(), angle.cos()], dim=-1).reshape(max_len, d_model)


# ----------------------------------------------------------------- the table


def test_positional_encoding_accepts_a_right_table(capsys):
    ch06.check_positional_encoding(table)
    assert capsys.readouterr().out.startswith("Correct:")


@pytest.mark.parametrize("answer", [tx.positional_encoding, lambda L, D: 1 * tx.positional_encoding(L, D)])
def test_positional_encoding_refuses_tx_s_own_table(answer):
    with pytest.raises(AssertionError, match="calls tx.positional_encoding"):
        ch06.check_positional_encoding(answer)


def test_positional_encoding_accepts_a_float64_table(capsys):
    ch06.check_positional_encoding(lambda L, D: table(L, D).double())
    assert "Correct:" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (halves_layout, "concatenated layout"),
    (swapped, "swapped"),
    (exponent_i_not_2i, "not i"),
    (lambda L, D: table(L + 1, D)[1:], "differs at index"),
    (lambda L, D: table(L, D)[None], "has shape"),  # a batch axis too many
    (lambda L, D: table(L, D).tolist(), "torch.Tensor"),
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


# ----------------------------------------------------------------- the offset from two encodings


def turn_of_last_pair(pe_a, pe_b):
    """The signed angle by which the slowest pair turned from pe_a to pe_b."""
    (s_a, c_a), (s_b, c_b) = pe_a[-2:].tolist(), pe_b[-2:].tolist()
    return math.atan2(s_b * c_a - c_b * s_a, s_a * s_b + c_a * c_b)


def offset_between(pe_a, pe_b):
    d_model = pe_a.shape[-1]
    omega = 1 / 10000 ** ((d_model - 2) / d_model)
    return round(turn_of_last_pair(pe_a, pe_b) / omega)


def offset_by_all_pairs(pe_a, pe_b):  # brute force with the rotation: also right
    d_model = pe_a.shape[-1]
    omega = 1 / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    a, b = pe_a.double().view(-1, 2), pe_b.double().view(-1, 2)

    def miss(k):
        c, s = torch.cos(k * omega), torch.sin(k * omega)
        turned = torch.stack([a[:, 0] * c + a[:, 1] * s, a[:, 1] * c - a[:, 0] * s], dim=-1)
        return float((turned - b).abs().max())

    return min(range(-300, 301), key=miss)


def test_offset_between_accepts_the_slowest_pair(capsys):
    ch06.check_offset_between(offset_between)
    assert capsys.readouterr().out.startswith("Correct:")


def test_offset_between_accepts_a_search_over_offsets(capsys):
    ch06.check_offset_between(offset_by_all_pairs)
    assert "Correct:" in capsys.readouterr().out


def test_offset_between_accepts_a_tensor_result(capsys):
    ch06.check_offset_between(lambda a, b: torch.tensor(offset_between(a, b)))
    assert "Correct:" in capsys.readouterr().out


def first_pair_only(pe_a, pe_b):  # omega_0 = 1: wraps after 6.28 positions
    (s_a, c_a), (s_b, c_b) = pe_a[:2].tolist(), pe_b[:2].tolist()
    return round(math.atan2(s_b * c_a - c_b * s_a, s_a * s_b + c_a * c_b))


def from_the_dot_product(pe_a, pe_b):  # acos of the cosine: the size of the turn, never its sign
    d_model = pe_a.shape[-1]
    omega = 1 / 10000 ** ((d_model - 2) / d_model)
    cosine = float(pe_a[-2:] @ pe_b[-2:])
    return round(math.acos(max(-1.0, min(1.0, cosine))) / omega)


@pytest.mark.parametrize("wrong, hint", [
    (lambda a, b: -offset_between(a, b), "from pe_a to pe_b"),  # measured backwards
    (from_the_dot_product, "cannot tell k from -k"),
    (first_pair_only, "what pair 0 shows"),
    (lambda a, b: offset_between(a, b) + 0.2, "round it"),
    (lambda a, b: [offset_between(a, b)], "one int"),
    (lambda a, b: torch.tensor([offset_between(a, b)] * 2), "one int"),
    (lambda a, b: 2 * offset_between(a, b), "Pair i turns"),
    (lambda a, b: offset_between(a, b) if a.shape[-1] in (4, 6, 64, 128, 512) else 0, "Pair i turns"),  # visible sizes only
    (lambda a, b: float((tx.positional_encoding(2, 4) @ torch.ones(4)).sum()), "calls tx.positional_encoding"),
    (lambda a, b: float("nan"), "not a finite number"),
])
def test_offset_between_rejects_wrong_answers(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch06.check_offset_between(wrong)
