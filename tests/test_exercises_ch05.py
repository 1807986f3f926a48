"""Chapter 5's checkers accept tx's answers and reject wrong ones with a hint."""

import pytest

import tx
from conftest import rng_untouched
from tx.exercises import ch05


def split_heads(x, n_heads):
    B, T, D = x.shape
    return x.view(B, T, n_heads, D // n_heads).transpose(1, 2)


def merge_heads(z):
    B, H, T, Dh = z.shape
    return z.transpose(1, 2).reshape(B, T, H * Dh)


def test_split_heads_accepts_view_then_transpose(capsys):
    ch05.check_split_heads(split_heads)
    assert capsys.readouterr().out.startswith("Correct:")


@pytest.mark.parametrize("checker, answer, name", [
    (ch05.check_split_heads, lambda x, h: tx.split_heads(x, h), "tx.split_heads"),
    (ch05.check_split_heads, lambda x, h: tx.multi_head.split_heads(x, h), "tx.multi_head.split_heads"),
    (ch05.check_combine_heads, lambda z, w_o: w_o(tx.merge_heads(z)), "tx.merge_heads"),
])
def test_tx_own_functions_are_refused(checker, answer, name):
    """The exercise is to write them: tx's own, under either name, is refused with a hint."""
    with pytest.raises(AssertionError, match=f"calls {name}"):
        checker(answer)
    assert tx.split_heads.__name__ == "split_heads" and tx.merge_heads.__name__ == "merge_heads"  # restored


def test_split_heads_rejects_a_plain_reshape_with_a_hint():
    def reshape_only(x, n_heads):
        B, T, D = x.shape
        return x.reshape(B, n_heads, T, D // n_heads)

    with pytest.raises(AssertionError, match="positions are mixed up"):
        ch05.check_split_heads(reshape_only)


def test_split_heads_rejects_the_wrong_shape():
    with pytest.raises(AssertionError, match=r"has shape \(2, 3, 2, 4\); expected \(2, 2, 3, 4\)"):
        ch05.check_split_heads(lambda x, h: x.view(x.size(0), x.size(1), h, -1))


def test_combine_heads_accepts_merge_then_w_o(capsys):
    ch05.check_combine_heads(lambda z, w_o: w_o(merge_heads(z)))
    assert capsys.readouterr().out.startswith("Correct:")


def test_combine_heads_rejects_a_missing_w_o():
    with pytest.raises(AssertionError, match="did not apply W\\^O"):
        ch05.check_combine_heads(lambda z, w_o: merge_heads(z))


def test_combine_heads_rejects_a_reshape_without_transpose():
    def no_transpose(z, w_o):
        B, H, T, Dh = z.shape
        return w_o(z.reshape(B, T, H * Dh))

    with pytest.raises(AssertionError, match="transpose"):
        ch05.check_combine_heads(no_transpose)


def test_split_heads_rejects_a_transpose_of_the_wrong_axes():
    with pytest.raises(AssertionError, match="swap only the T and H axes|differs"):
        ch05.check_split_heads(lambda x, h: x.view(x.size(0), x.size(1), h, -1).transpose(1, 2).transpose(2, 3).reshape(
            x.size(0), h, x.size(1), -1))


def test_split_heads_rejects_nan():
    with pytest.raises(AssertionError, match="nan or inf"):
        ch05.check_split_heads(lambda x, h: split_heads(x, h) / 0 * 0)


def test_combine_heads_rejects_the_wrong_shape():
    with pytest.raises(AssertionError, match="shape"):
        ch05.check_combine_heads(lambda z, w_o: w_o(merge_heads(z))[:, :1])


def test_combine_heads_rejects_w_o_applied_to_each_head():
    # W^O applied to one head's slice: the shapes cannot even agree, and the hint says what is expected.
    with pytest.raises(AssertionError, match="shape|torch.Tensor"):
        ch05.check_combine_heads(lambda z, w_o: z.sum(1))


def test_combine_heads_leaves_the_global_random_stream_alone():
    assert rng_untouched(ch05.check_combine_heads, lambda z, w_o: w_o(merge_heads(z)))


def count_parameters(d, h, dh):
    inner = h * dh
    return 3 * (d * inner + inner) + (inner * d + d)


def test_count_parameters_accepts_the_formula(capsys):
    ch05.check_count_parameters(count_parameters)
    assert capsys.readouterr().out.startswith("Correct:")


def test_count_parameters_agrees_with_tx_where_the_heads_fill_d_model():
    for d, h in [(512, 8), (12, 3)]:
        assert count_parameters(d, h, d // h) == sum(p.numel() for p in tx.MultiHeadAttention(d, h).parameters())


@pytest.mark.parametrize("wrong, hint", [
    (lambda d, h, dh: 4 * d * h * dh, "bias"),
    (lambda d, h, dh: 4 * (d * d + d), "n_heads \\* d_head = d_model"),  # exercise 1.1's count, heads ignored
    (lambda d, h, dh: 4 * (d * h * dh + h * dh), "W\\^O goes the other way"),
    (lambda d, h, dh: 3 * (d * h * dh + h * dh), "W\\^O"),
    (lambda d, h, dh: 3 * (d * dh + dh) + (dh * d + d), "side by side"),  # one head's matrices only
    (lambda d, h, dh: (3 * (d * dh + dh) + (dh * d + d)) * h, "side by side"),  # a full layer per head
    (lambda d, h, dh: "many", "should return an int"),
    (lambda d, h, dh: 1_050_624, "expected"),  # the base model's count, hard-coded
    (lambda d, h, dh: sum(p.numel() for p in tx.MultiHeadAttention(d, h).parameters()), "without building the layer"),
])
def test_count_parameters_rejects_wrong_counts(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch05.check_count_parameters(wrong)
