import pytest
import torch
from torch.testing import assert_close

import tx


def test_feed_forward_is_applied_to_each_position_alone():
    ff = tx.FeedForward(tx.LayerConfig(d_model=8, n_heads=1, d_ff=16))
    x = torch.randn(2, 5, 8)
    out = ff(x)
    for t in range(5):
        assert_close(out[:, t], ff(x[:, t : t + 1])[:, 0])
    manual = torch.relu(x @ ff.linear1.weight.T + ff.linear1.bias) @ ff.linear2.weight.T + ff.linear2.bias
    assert_close(out, manual)


def test_post_ln_normalises_the_sum_and_pre_ln_adds_to_the_input():
    x = torch.randn(2, 3, 8)
    f = torch.nn.Linear(8, 8)
    cfg = tx.LayerConfig(d_model=8, n_heads=1, dropout=0.0)
    post = tx.Residual(cfg.replace(norm_first=False))
    pre = tx.Residual(cfg.replace(norm_first=True))
    assert_close(post(x, f), torch.nn.functional.layer_norm(x + f(x), (8,)))
    assert_close(pre(x, f), x + f(torch.nn.functional.layer_norm(x, (8,))))
    # Post-LN output has zero mean / unit variance per position; pre-LN output does not.
    assert_close(post(x, f).mean(-1), torch.zeros(2, 3), atol=1e-5, rtol=0)
    assert not torch.allclose(pre(x, f).mean(-1), torch.zeros(2, 3), atol=1e-3)


def test_dropout_zeroes_about_p_and_rescales_the_rest():
    drop = tx.Dropout(0.25)
    x = torch.ones(200, 500)
    out = drop(x)
    zero_fraction = (out == 0).float().mean().item()
    assert abs(zero_fraction - 0.25) < 0.01
    assert torch.allclose(out[out != 0], torch.full_like(out[out != 0], 1 / 0.75))
    assert abs(out.mean().item() - 1.0) < 0.02  # inverted dropout keeps the expectation
    drop.eval()
    assert drop(x) is x


def test_dropout_gradient_flows_only_through_kept_entries():
    drop = tx.Dropout(0.5)
    x = torch.ones(50, 40, requires_grad=True)
    out = drop(x)
    out.sum().backward()
    assert torch.equal(x.grad, out.detach())  # d(out)/dx is the mask, scaled by 1/(1-p)


def test_dropout_probability_must_be_below_one():
    import pytest

    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        tx.Dropout(1.0)


def test_feed_forward_gelu_uses_the_same_weights_with_a_gelu_between():
    torch.manual_seed(0)
    cfg = tx.LayerConfig(d_model=4, n_heads=1, d_ff=8)
    relu, gelu = tx.FeedForward(cfg), tx.FeedForward(cfg.replace(activation="gelu"))
    gelu.load_state_dict(relu.state_dict())  # same parameters: the activation has none
    x = torch.randn(2, 3, 4)
    expected = gelu.linear2(torch.nn.functional.gelu(gelu.linear1(x)))
    torch.testing.assert_close(gelu(x), expected)
    assert not torch.allclose(gelu(x), relu(x))
    with pytest.raises(ValueError, match=r"activation must be one of 'relu', 'gelu', got 'tanh'"):
        cfg.replace(activation="tanh")


def test_encoder_passes_its_activation_to_every_layer():
    enc = tx.Encoder(tx.LayerConfig(n_layers=2, d_model=8, n_heads=2, d_ff=16, activation="gelu"))
    assert [layer.feed_forward.activation for layer in enc.layers] == ["gelu", "gelu"]


def kinds(model):
    return {type(m).__name__ for m in model.modules() if isinstance(m, (torch.nn.LayerNorm, tx.RMSNorm))}


def count(model):
    return sum(p.numel() for p in model.parameters())


def test_rms_norm_is_torch_s_and_does_not_centre():
    torch.manual_seed(0)
    ours, theirs = tx.RMSNorm(8), torch.nn.RMSNorm(8, eps=1e-5)
    with torch.no_grad():
        ours.weight.uniform_(0.5, 2.0)
        theirs.weight.copy_(ours.weight)
    x = torch.randn(2, 3, 8) * 4 + 1
    assert_close(ours(x), theirs(x))
    rms = x.pow(2).mean(-1, keepdim=True).add(1e-5).sqrt()
    assert_close(ours(x), x / rms * ours.weight)
    # LayerNorm removes a shift of every feature; RMSNorm does not
    assert not torch.allclose(ours(x + 3.0), ours(x), atol=1e-3)
    assert [name for name, _ in ours.named_parameters()] == ["weight"]  # a gain, no bias


@pytest.mark.parametrize("norm_first", [False, True])
def test_norm_rms_puts_rms_norm_in_every_place_a_norm_is(norm_first):
    sizes = dict(src_vocab_size=11, tgt_vocab_size=12, d_model=16, n_heads=2, n_layers=2, d_ff=32)
    torch.manual_seed(0)
    layer_norm = tx.Transformer(**sizes, norm_first=norm_first)
    rms = tx.Transformer(**sizes, norm_first=norm_first, norm="rms")
    assert kinds(layer_norm) == {"LayerNorm"} and kinds(rms) == {"RMSNorm"}
    n_norms = sum(isinstance(m, tx.RMSNorm) for m in rms.modules())
    assert n_norms == 2 * 2 + 3 * 2 + (2 if norm_first else 0)  # residuals, and pre-LN's final norms
    # every norm loses its bias of d_model numbers, nothing else changes
    assert count(layer_norm) - count(rms) == n_norms * 16
    src, tgt = torch.tensor([[4, 5, 6, 2]]), torch.tensor([[1, 7, 8]])
    assert rms(src, tgt).shape == (1, 3, 12)
    lm = tx.LanguageModel(tx.LanguageModelConfig(vocab_size=20, d_model=16, n_heads=2, norm="rms"))
    assert kinds(lm) == {"RMSNorm"}


def test_the_decoder_takes_the_config_s_activation_too():
    model = tx.Transformer(src_vocab_size=11, tgt_vocab_size=12, d_model=16, n_heads=2, n_layers=2, d_ff=32,
                           activation="gelu")
    stacks = (model.encoder.layers, model.decoder.layers)
    assert [layer.feed_forward.activation for stack in stacks for layer in stack] == ["gelu"] * 4
    paper = tx.Transformer(src_vocab_size=11, tgt_vocab_size=12, d_model=16, n_heads=2, n_layers=2, d_ff=32)
    assert {layer.feed_forward.activation for layer in paper.decoder.layers} == {"relu"}


def test_a_config_refuses_an_unknown_norm():
    with pytest.raises(ValueError, match=r"norm must be one of 'layer', 'rms', got 'batch'"):
        tx.LayerConfig(norm="batch")
