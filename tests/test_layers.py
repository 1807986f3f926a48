import torch
from torch.testing import assert_close

import tx


def test_feed_forward_is_applied_to_each_position_alone():
    ff = tx.FeedForward(8, 16)
    x = torch.randn(2, 5, 8)
    out = ff(x)
    for t in range(5):
        assert_close(out[:, t], ff(x[:, t : t + 1])[:, 0])
    manual = torch.relu(x @ ff.linear1.weight.T + ff.linear1.bias) @ ff.linear2.weight.T + ff.linear2.bias
    assert_close(out, manual)


def test_post_ln_normalises_the_sum_and_pre_ln_adds_to_the_input():
    x = torch.randn(2, 3, 8)
    f = torch.nn.Linear(8, 8)
    post = tx.Residual(8, dropout=0.0, norm_first=False)
    pre = tx.Residual(8, dropout=0.0, norm_first=True)
    assert_close(post(x, f), torch.nn.functional.layer_norm(x + f(x), (8,)))
    assert_close(pre(x, f), x + f(torch.nn.functional.layer_norm(x, (8,))))
    # Post-LN output has zero mean / unit variance per position; pre-LN output does not.
    assert_close(post(x, f).mean(-1), torch.zeros(2, 3), atol=1e-5, rtol=0)
    assert not torch.allclose(pre(x, f).mean(-1), torch.zeros(2, 3), atol=1e-3)
