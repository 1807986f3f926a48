"""Checkers for chapter 7, the residuals: RMSNorm, the paper's Add & Norm step, a pre-LN stack.

Axes: B batch, T sequence length, D d_model.

Every checker draws its inputs from a seeded generator of its own, so running a check
leaves the learner's random stream where it was.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..config import LayerConfig
from ..layers import FeedForward, Residual, RMSNorm
from . import CheckFailed, assert_tensor, call, forbids, part, parts, passed, seeded

__all__ = ["check_rms_norm", "check_post_ln_step", "check_pre_ln_stack"]


def _with_random_norm(norm: nn.LayerNorm, seed: int) -> nn.LayerNorm:
    """Give ``norm`` a gain and bias away from 1 and 0, so an answer that skips it shows."""
    g = torch.Generator().manual_seed(seeded(seed))
    with torch.no_grad():
        norm.weight.copy_(torch.rand(norm.weight.shape, generator=g) * 1.5 + 0.5)
        norm.bias.copy_(torch.randn(norm.bias.shape, generator=g))
    return norm


def _sublayers(n: int, d_model: int) -> list[FeedForward]:
    """``n`` feed-forward sub-layers with seeded weights."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seeded(7))
        return [FeedForward(LayerConfig(d_model=d_model, n_heads=1, d_ff=2 * d_model)) for _ in range(n)]


def _rms(x: Tensor, eps: float) -> Tensor:
    """The root mean square of the last axis, eps inside the root: [..., D] -> [..., 1]."""
    return torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)


# Torch's own RMSNorm (torch 2.4 and later), tx's and LayerNorm: the exercise is to write it.
_NORMS = [(owner, name) for owner, name in [(F, "rms_norm"), (torch, "rms_norm"), (F, "layer_norm"),
                                            (torch, "layer_norm"), (nn.LayerNorm, "forward"), (RMSNorm, "forward")]
          if hasattr(owner, name)] + ([(nn.RMSNorm, "forward")] if hasattr(nn, "RMSNorm") else [])


def _tx_rms_norm(x: Tensor, gain: Tensor, eps: float) -> Tensor:
    """tx.RMSNorm (what a model with norm="rms" uses) with this gain: what an answer is compared with."""
    norm = RMSNorm(x.size(-1), eps)
    with torch.no_grad():
        norm.weight.copy_(gain)
        return norm(x)


def _call_rms_norm(rms_norm: Callable[..., Tensor], *args: object) -> object:
    return call(rms_norm, *args)


def _rms_mistake(got: Tensor, x: Tensor, gain: Tensor, eps: float) -> str | None:
    """The hint naming the mistake ``got`` is, on inputs where each mistake gives other numbers; else None."""
    D, mean = x.size(-1), x.mean(-1, keepdim=True)
    square_sum = x.pow(2).sum(-1, keepdim=True)
    whole = torch.sqrt(x.pow(2).mean() + eps)
    std = ("x.std and x.var subtract the mean first (and divide by D - 1 unless told otherwise): RMSNorm takes "
           "the root of the mean of the squares of x itself, ")
    mistakes = [
        ((x - mean) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + eps) * gain,
         "you subtracted the mean and divided by the standard deviation: that is LayerNorm. RMSNorm does not "
         "centre the vector, it only divides it by its root mean square, sqrt(mean(x**2) + eps)."),
        ((x - mean) / _rms(x, eps) * gain,
         "you subtracted the mean: RMSNorm does not centre the vector, it only divides it by sqrt(mean(x**2) + eps)."),
        (x / _rms(x, eps), "the output ignores gain: multiply the normalised vector by gain."),
        (x / torch.sqrt(square_sum / (D - 1) + eps) * gain,
         "you divided the sum of squares by D - 1: the mean of the squares divides by D, x.pow(2).mean(-1)."),
        (x / torch.sqrt(x.var(-1, keepdim=True) + eps) * gain, std + "sqrt(x.pow(2).mean(-1, keepdim=True) + eps)."),
        (x / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + eps) * gain,
         std + "sqrt(x.pow(2).mean(-1, keepdim=True) + eps)."),
        (x / (x.std(-1, keepdim=True) + eps) * gain, std + "sqrt(x.pow(2).mean(-1, keepdim=True) + eps)."),
        (x / torch.sqrt(square_sum + eps) * gain,
         "you divided by the vector's length, sqrt(sum of squares): RMSNorm divides by the root of the *mean* of "
         "the squares, sqrt(D) times smaller."),
        (x / whole * gain,
         "you took one root mean square for the whole tensor: take it over the last axis only, "
         "x.pow(2).mean(-1, keepdim=True), so each position gets its own."),
    ]
    for value, hint in mistakes:
        if torch.allclose(got, value, atol=1e-4):
            return hint
    return None


_SCALES, _SHAPE, _EPS = ("vectors on very different scales", "another shape, [2, 2, 3, 7]",
                         "a zero and a nearly-zero vector (eps)")


@forbids(_NORMS, "write RMSNorm with tensor arithmetic: square, mean, square root, divide.")
@parts(_SCALES, _SHAPE, _EPS, drawn=True)
def check_rms_norm(rms_norm: Callable[..., Tensor]) -> None:
    """``rms_norm(x, gain, eps)`` must be x / sqrt(mean(x**2) + eps) * gain over the last axis of x [..., D]."""
    # x [2, 3, 5]: positions on very different scales, all shifted from 0, so centring shows
    g = torch.Generator().manual_seed(seeded(0))
    x = torch.randn(2, 3, 5, generator=g) * torch.tensor([1.0, 10.0, 0.1])[None, :, None] + 3.0
    gain = torch.rand(5, generator=g) * 2 + 0.5  # far from 1, so an answer that skips it shows
    with part(_SCALES):
        got = _call_rms_norm(rms_norm, x.clone(), gain.clone(), 1e-5)
        if isinstance(got, Tensor) and got.shape == x.shape and got.is_floating_point():
            if hint := _rms_mistake(got.detach().float(), x, gain, 1e-5):
                raise CheckFailed(hint)
        assert_tensor(got, _tx_rms_norm(x, gain, 1e-5), "rms_norm(x, gain, 1e-5) on x of shape (2, 3, 5)")
    with part(_SHAPE):
        # Another shape, one the learner never sees: [..., D] with three leading axes and D = 7.
        x, gain = torch.randn(2, 2, 3, 7, generator=g) * 4 - 1, torch.rand(7, generator=g) + 0.5
        assert_tensor(_call_rms_norm(rms_norm, x.clone(), gain, 1e-5), _tx_rms_norm(x, gain, 1e-5),
                      "rms_norm(x, gain, 1e-5) on x of shape (2, 2, 3, 7)")
    with part(_EPS):
        _check_rms_norm_eps(rms_norm)
    passed("your rms_norm divides each vector by its root mean square and applies the gain, eps included: "
           "it is tx.RMSNorm, which a model built with norm=\"rms\" uses wherever it normalises.")


def _check_rms_norm_eps(rms_norm: Callable[..., Tensor]) -> None:
    # A vector of zeros, whose root mean square is 0: only eps keeps 0 / 0 from being nan. And a
    # nearly-zero vector, where eps outside the root would give other numbers than eps inside.
    small = torch.tensor([[0.0, 0.0, 0.0, 0.0], [1e-4, -2e-4, 3e-4, 5e-5]])
    ones = torch.ones(4)
    for eps in (1e-5, 1e-2):
        got = _call_rms_norm(rms_norm, small.clone(), ones, eps)
        if isinstance(got, Tensor) and got.shape == small.shape and got.is_floating_point():
            got = got.detach().float()
            if not bool(torch.isfinite(got[0]).all()):
                raise CheckFailed(f"a vector of zeros gave {got[0].tolist()}: its mean square is 0, and 0 / 0 is "
                                  "nan. Add eps inside the square root, sqrt(mean(x**2) + eps).")
            if torch.allclose(got, small / (small.pow(2).mean(-1, keepdim=True).sqrt() + eps), atol=1e-5):
                raise CheckFailed("eps belongs inside the square root: divide by sqrt(mean(x**2) + eps), not "
                                  "sqrt(mean(x**2)) + eps. The two differ for a vector close to zero.")
        assert_tensor(got, _tx_rms_norm(small, ones, eps),
                      f"rms_norm of a zero and a nearly-zero vector with eps={eps} (eps goes inside the root)")


class _FixedDropout(nn.Module):
    """Dropout whose mask is drawn once: every call drops the same entries, so two answers compare.

    A real ``nn.Dropout`` draws a new mask at each call; with this one the learner's step and
    tx.Residual's drop the same numbers, and a dropout put in the wrong place shows as a
    different result. ``calls`` counts how often it was applied (the course's grader copies it
    back from the student's process: ``synced``).
    """

    synced = ("calls",)

    def __init__(self, keep: Tensor, p: float):
        super().__init__()
        self.keep, self.p, self.calls = keep, p, 0  # keep: bool, the shape of x

    def forward(self, y: Tensor) -> Tensor:
        self.calls += 1
        return y * self.keep / (1 - self.p)  # inverted dropout, as nn.Dropout in training


def _post_ln_misplaced(got: Tensor, x: Tensor, sublayer: Callable[[Tensor], Tensor], norm: nn.LayerNorm,
                       drop: _FixedDropout, calls: int) -> None:
    """CheckFailed naming the mistake when ``got`` is the Add & Norm step with its dropout elsewhere, or none."""
    if calls == 0 and torch.allclose(got, norm(x + sublayer(x)), atol=1e-5):
        raise CheckFailed("that is the step without dropout, norm(x + sublayer(x)). In training the paper drops part "
                          "of each sub-layer's output (section 5.4): call dropout once, at the right place.")
    if calls > 1:
        raise CheckFailed(f"you applied dropout {calls} times in one step; the paper applies it once, to the "
                          "sub-layer's output.")
    misplaced = [
        (x + drop(sublayer(norm(x))), "that is pre-LN, x + dropout(sublayer(norm(x))). The paper (section 3.1) adds "
                                      "first and normalises the sum."),
        (norm(drop(sublayer(x))), "the residual is missing: add x to the dropped sub-layer output before the "
                                  "LayerNorm."),
        (norm(drop(x + sublayer(x))), "you dropped the sum, x included: entries of the input itself would vanish from "
                                      "the residual path. Drop the sub-layer's output only, before adding x."),
        (drop(norm(x + sublayer(x))), "you dropped after the LayerNorm, so the vectors handed on are no longer "
                                      "normalised. Drop the sub-layer's output, before the addition."),
        (norm(x + sublayer(drop(x))), "you dropped the sub-layer's input; the paper drops its output, before the "
                                      "addition (section 5.4)."),
    ]
    for value, hint in misplaced:
        if torch.allclose(got, value, atol=1e-5):
            raise CheckFailed(hint)


@forbids([(Residual, "forward")], "write the step yourself, from the norm, the sub-layer and the dropout.")
@parts("x of shape [2, 4, 6]", "another shape, [3, 2, 10]", drawn=True)
def check_post_ln_step(post_ln_step: Callable[..., Tensor]) -> None:
    """``post_ln_step(x, sublayer, norm, dropout)`` must equal ``tx.Residual(norm_first=False)`` in training:
    norm(x + dropout(sublayer(x)))."""
    # the second size is one the learner never sees
    for name, D, seed, shape in (("x of shape [2, 4, 6]", 6, 1, (2, 4)), ("another shape, [3, 2, 10]", 10, 5, (3, 2))):
        with part(name):
            _check_post_ln_step(post_ln_step, D, seed, shape)
    passed("post_ln_step is the paper's Add & Norm in training, LayerNorm(x + Dropout(Sublayer(x))), as "
           "tx.Residual(norm_first=False).")


def _check_post_ln_step(post_ln_step: Callable[..., Tensor], D: int, seed: int, shape: tuple[int, int]) -> None:
    residual = Residual(LayerConfig(d_model=D, n_heads=1, dropout=0.25, norm_first=False))
    _with_random_norm(residual.norm, seed)
    (sublayer,) = _sublayers(1, D)
    g = torch.Generator().manual_seed(seeded(seed + 1))
    x = 3 * torch.randn(*shape, D, generator=g)
    drop = _FixedDropout(torch.rand(*shape, D, generator=g) >= 0.25, 0.25)
    residual.dropout = drop  # tx.Residual now drops exactly what the learner's step drops
    residual.train()
    with torch.no_grad():
        got = call(post_ln_step, x.clone(), sublayer, residual.norm, drop)
        calls = drop.calls
        expected = residual(x, sublayer)
        if isinstance(got, Tensor) and got.shape == x.shape:
            _post_ln_misplaced(got, x, sublayer, residual.norm, drop, calls)
    assert_tensor(got, expected, f"post_ln_step(x of shape {tuple(x.shape)}, sublayer, norm, dropout)")


@forbids([(Residual, "forward")], "write each step yourself: x + sublayer(norm(x)).")
@parts("3 steps, d_model = 6", "another stack, 2 steps of d_model = 8", drawn=True)
def check_pre_ln_stack(pre_ln_stack: Callable[..., Tensor]) -> None:
    """``pre_ln_stack(x, sublayers, norms, final_norm)`` must equal N pre-LN tx.Residual steps, then final_norm."""
    # the second stack is one the learner never sees
    for name, D, N, seed in (("3 steps, d_model = 6", 6, 3, 3), ("another stack, 2 steps of d_model = 8", 8, 2, 4)):
        with part(name):
            _check_pre_ln_stack(pre_ln_stack, D, N, seed)
    passed("pre_ln_stack matches tx.Residual(norm_first=True) steps followed by the final LayerNorm.")


def _check_pre_ln_stack(pre_ln_stack: Callable[..., Tensor], D: int, N: int, seed: int) -> None:
    residuals = [Residual(LayerConfig(d_model=D, n_heads=1, dropout=0.0, norm_first=True)) for _ in range(N)]
    for i, r in enumerate(residuals):
        _with_random_norm(r.norm, 10 * seed + i)
    final_norm = _with_random_norm(nn.LayerNorm(D), 20 * seed)
    sublayers = _sublayers(N, D)
    x = torch.randn(2, 4, D, generator=torch.Generator().manual_seed(seeded(seed)))
    with torch.no_grad():
        got = call(pre_ln_stack, x.clone(), sublayers, [r.norm for r in residuals], final_norm)
        h = x
        for r, f in zip(residuals, sublayers):
            h = r(h, f)  # [B, T, D], the un-normalised residual stream
        expected = final_norm(h)
        post = x
        for r, f in zip(residuals, sublayers):
            post = r.norm(post + f(post))
        each_normed = x
        for r, f in zip(residuals, sublayers):
            each_normed = final_norm(r(each_normed, f))
    if isinstance(got, Tensor) and got.shape == x.shape and torch.allclose(got, h, atol=1e-5):
        raise CheckFailed("the stack is right but final_norm is missing: apply it once, after the last step.")
    if isinstance(got, Tensor) and got.shape == x.shape and (
            torch.allclose(got, post, atol=1e-5) or torch.allclose(got, final_norm(post), atol=1e-5)):
        raise CheckFailed("those are post-LN steps, norm(x + sublayer(x)); a pre-LN step is x + sublayer(norm(x)).")
    if isinstance(got, Tensor) and got.shape == x.shape and torch.allclose(got, each_normed, atol=1e-5):
        raise CheckFailed("you applied final_norm after every step: apply it once, after the last step.")
    assert_tensor(got, expected, f"pre_ln_stack(x, {N} sublayers, {N} norms, final_norm) with d_model={D}")
