"""Chapter 7's checkers accept the reference answers and reject the usual mistakes with a hint."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import tx
from conftest import rng_untouched
from tx.exercises import ch07


def rms_norm(x, gain, eps=1e-5):
    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * gain


def post_ln_step(x, sublayer, norm, dropout):
    return norm(x + dropout(sublayer(x)))


def pre_ln_stack(x, sublayers, norms, final_norm):
    for sublayer, norm in zip(sublayers, norms):
        x = x + sublayer(norm(x))
    return final_norm(x)


def test_reference_answers_pass(capsys):
    ch07.check_rms_norm(rms_norm)
    ch07.check_post_ln_step(post_ln_step)
    ch07.check_pre_ln_stack(pre_ln_stack)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and all(line.startswith("Correct:") for line in lines)


def test_rms_norm_is_torchs_rms_norm():
    # The reference answer, and so the checker's formula, is torch's own RMSNorm.
    x, gain = torch.randn(3, 4, 6) * 5 + 2, torch.rand(6) + 0.5
    torch.testing.assert_close(rms_norm(x, gain, 1e-5), F.rms_norm(x, (6,), gain, 1e-5))


def mean_square(x):
    return x.pow(2).mean(-1, keepdim=True)


@pytest.mark.parametrize("wrong, hint", [
    # LayerNorm, with or without its centred variance
    (lambda x, g, eps=1e-5: (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + eps) * g,
     "that is LayerNorm"),
    (lambda x, g, eps=1e-5: rms_norm(x - x.mean(-1, keepdim=True), g, eps), "subtracted the mean"),
    (lambda x, g, eps=1e-5: x / (mean_square(x).sqrt() + eps) * g, "inside the square root"),
    (lambda x, g, eps=1e-5: x / mean_square(x).sqrt() * g, "0 / 0 is nan"),
    (lambda x, g, eps=1e-5: x / torch.sqrt(x.pow(2).sum(-1, keepdim=True) / (x.size(-1) - 1) + eps) * g, "D - 1"),
    (lambda x, g, eps=1e-5: x / (x.std(-1, keepdim=True) + eps) * g, "x.std and x.var subtract the mean"),
    (lambda x, g, eps=1e-5: x / torch.sqrt(x.var(-1, keepdim=True) + eps) * g, "x.std and x.var subtract the mean"),
    (lambda x, g, eps=1e-5: rms_norm(x, 1.0, eps), "ignores gain"),
    (lambda x, g, eps=1e-5: x / torch.sqrt(x.pow(2).mean() + eps) * g, "whole tensor"),
    (lambda x, g, eps=1e-5: x / torch.sqrt(x.pow(2).sum(-1, keepdim=True) + eps) * g, "length"),
    (lambda x, g, eps=1e-5: F.rms_norm(x, x.shape[-1:], g, eps), "calls torch.nn.functional.rms_norm"),
    (lambda x, g, eps=1e-5: torch.nn.RMSNorm(x.shape[-1], eps=eps)(x) * g, "calls (RMSNorm.forward|.*rms_norm)"),
    (lambda x, g, eps=1e-5: F.layer_norm(x, x.shape[-1:], g, None, eps), "calls torch.nn.functional.layer_norm"),
    (lambda x, g, eps=1e-5: rms_norm(x, g, eps) * float("nan"), "nan or inf"),
    (lambda x, g, eps=1e-5: x / torch.sqrt(mean_square(x) + eps) * g + 0.1, "differs"),
    (lambda x, g, eps=1e-5: x / torch.sqrt(x.pow(2).mean(0, keepdim=True) + eps) * g, "differs"),  # the first axis
    (lambda x, g, eps=1e-5: x.pow(2).mean(-1), "shape"),
])
def test_rms_norm_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch07.check_rms_norm(wrong)


@pytest.mark.parametrize("wrong, hint", [
    (lambda x, f, norm, drop: norm(x + f(x)), "without dropout"),
    (lambda x, f, norm, drop: norm(drop(x + f(x))), "dropped the sum"),
    (lambda x, f, norm, drop: drop(norm(x + f(x))), "after the LayerNorm"),
    (lambda x, f, norm, drop: norm(x + f(drop(x))), "sub-layer's input"),
    (lambda x, f, norm, drop: norm(x + drop(drop(f(x)))), "2 times"),
    (lambda x, f, norm, drop: x + drop(f(norm(x))), "pre-LN"),
    (lambda x, f, norm, drop: norm(drop(f(x))), "residual is missing"),
    (lambda x, f, norm, drop: x + drop(f(x)), "differs"),
    # a dropout of its own draws another mask than the one the step is given
    (lambda x, f, norm, drop: norm(x + torch.nn.functional.dropout(f(x), 0.25)), "differs"),
    (lambda x, f, norm, drop: norm(x + drop(f(x)))[:1] if x.shape[0] == 3 else norm(x + drop(f(x))), "shape"),
    (lambda x, f, norm, drop: F.layer_norm(x + drop(f(x)), x.shape[-1:]), "differs"),
])
def test_post_ln_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch07.check_post_ln_step(wrong)


def no_final_norm(x, sublayers, norms, final_norm):
    for sublayer, norm in zip(sublayers, norms):
        x = x + sublayer(norm(x))
    return x


def post_ln_stack(x, sublayers, norms, final_norm):
    for sublayer, norm in zip(sublayers, norms):
        x = norm(x + sublayer(x))
    return final_norm(x)


def final_norm_every_step(x, sublayers, norms, final_norm):
    for sublayer, norm in zip(sublayers, norms):
        x = final_norm(x + sublayer(norm(x)))
    return x


def one_norm_for_all(x, sublayers, norms, final_norm):
    for sublayer in sublayers:
        x = x + sublayer(norms[0](x))
    return final_norm(x)


@pytest.mark.parametrize("wrong, hint", [
    (no_final_norm, "final_norm is missing"), (post_ln_stack, "post-LN"), (one_norm_for_all, "differs"),
    (final_norm_every_step, "after every step"),
])
def test_pre_ln_stack_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch07.check_pre_ln_stack(wrong)


def test_checkers_leave_the_random_stream_alone():
    assert rng_untouched(ch07.check_rms_norm, rms_norm)
    assert rng_untouched(ch07.check_post_ln_step, post_ln_step)
    assert rng_untouched(ch07.check_pre_ln_stack, pre_ln_stack)


def test_reference_post_ln_step_is_tx_residual():
    # The chapter's claim, checked once more outside the checker: post-LN is tx.Residual's default,
    # and in training it drops what the reference step drops, given the same random stream.
    cfg = tx.LayerConfig(d_model=4, n_heads=1, d_ff=8, dropout=0.3)
    r, f, x = tx.Residual(cfg).train(), tx.FeedForward(cfg), torch.randn(2, 3, 4)
    torch.manual_seed(1)
    mine = post_ln_step(x, f, r.norm, r.dropout)  # tx's Dropout draws its mask its own way
    torch.manual_seed(1)
    torch.testing.assert_close(mine, r(x, f))
    torch.testing.assert_close(post_ln_step(x, f, r.norm, torch.nn.Identity()), r.eval()(x, f))
