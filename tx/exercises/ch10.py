"""Checkers for chapter 10, the loss function and training.

Axes: V vocabulary size. Each checker calls the learner's function on inputs of its own,
compares the answer with tx or torch, and prints one line when it is right.
"""

from __future__ import annotations

import importlib
import math
from typing import Any, Callable

import torch
from torch import Tensor, nn

from ..train import rate
from . import (CheckFailed, as_number, assert_number, assert_tensor, call, forbids, keeps_random_state, part, parts,
               passed, seeded)
from .. import train

__all__ = ["check_loss_floor", "check_adam_step", "check_learning_rate"]


def _entropy_of_smoothed_row(vocab_size: int, smoothing: float) -> float:
    """The floor, computed the long way: the entropy of one smoothed row [V], in float64."""
    row = torch.full((vocab_size,), smoothing / vocab_size, dtype=torch.float64)
    row[0] += 1 - smoothing
    return float(-torch.xlogy(row, row).sum())


def _floor_mistakes(V: int, eps: float) -> list[tuple[float, str]]:
    """(the value, the hint) of the usual wrong formulas for the floor."""
    right, other = 1 - eps + eps / V, eps / V
    h = lambda p: -p * math.log(p) if p > 0 else 0.0  # noqa: E731 - one word's share of the entropy
    floor = h(right) + (V - 1) * h(other)
    mistakes = [
        (floor / math.log(2), "that is the floor in bits (log base 2); the loss uses the natural log, as torch.log "
         "does."),
        (h(right) + h(other), "you counted one wrong word; there are V - 1 of them, each with smoothing / V."),
        (h(right) + V * h(other), "you counted V wrong words; the right word is one of the V and holds "
         "1 - smoothing + smoothing / V, so V - 1 words are left with smoothing / V."),
        (h(right), "you left the wrong words out: each of the V - 1 holds smoothing / V and adds its own -p log p."),
        (h(1 - eps) + (V - 1) * h(other), "the right word holds 1 - smoothing plus its own share smoothing / V, "
         "as the chapter's label-smoothing equation says."),
        (-floor, "an entropy is never negative: -sum p log p carries a minus sign, and log p < 0."),
    ]
    if eps > 0 and V > 1:
        mistakes.insert(0, (h(1 - eps) + (V - 1) * h(eps / (V - 1)), "you spread smoothing over the V - 1 wrong "
                            "words; tx spreads it over all V, the right one included: smoothing / V each, and "
                            "1 - smoothing more on the right word."))
    return mistakes


_AT_ZERO = ("At smoothing 0 the wrong words have probability 0, and 0 * log 0 counts as 0 (its limit): "
            "leave those terms out, or return 0.0 when smoothing is 0.")


@parts("the chapter's sizes", "other sizes", "smoothing 0", drawn=True)
def check_loss_floor(fn: Callable[[int, float], Any]) -> None:
    """``fn(vocab_size, smoothing) -> float``: the entropy of a label-smoothed target, the floor of the loss."""
    g = torch.Generator().manual_seed(seeded(11))
    hidden = (int(torch.randint(50, 50_000, (1,), generator=g)),
              round(float(torch.rand(1, generator=g)) * 0.4 + 0.05, 3))
    cases = {"the chapter's sizes": [(6, 0.1), (37_000, 0.1)],
             "other sizes": [(2, 0.5), hidden, (1_000_000, 0.1), (37_000, 0.001), (50, 0.9)],
             "smoothing 0": [(1000, 0.0)]}
    for name, part_cases in cases.items():
        with part(name):
            for V, eps in part_cases:
                _check_loss_floor(fn, V, eps)
    passed("your floor matches the entropy of a smoothed row, from V = 2 to a million, smoothing 0 included.")


def _check_loss_floor(fn: Callable[[int, float], Any], V: int, eps: float) -> None:
    what = f"loss_floor(vocab_size={V}, smoothing={eps})"
    try:
        got = call(fn, V, eps)
    except CheckFailed as error:  # math.log(0) raises ValueError
        if eps == 0 and "NotImplementedError" not in str(error):
            raise CheckFailed(f"{error} {_AT_ZERO}") from None
        raise
    value = got.item() if isinstance(got, Tensor) and got.numel() == 1 else got
    if eps == 0 and isinstance(value, float) and math.isnan(value):  # 0 * log 0 = 0 * -inf = nan
        raise CheckFailed(f"{what} is nan, expected 0. {_AT_ZERO}")
    got = as_number(got, what)
    expected = _entropy_of_smoothed_row(V, eps)
    for value, hint in _floor_mistakes(V, eps):
        if (math.isclose(got, value, rel_tol=1e-6, abs_tol=1e-9)
                and not math.isclose(value, expected, rel_tol=1e-5, abs_tol=1e-9)):
            raise CheckFailed(f"{what} is {got:.6g}, expected {expected:.6g}: {hint}")
    assert_number(got, expected, what, tol=1e-5 * max(1.0, expected))


def _module(name: str) -> Any:
    """The module ``name``, or None where this torch has no such module."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


ADAM_SHORTCUTS = [(torch.optim.Adam, "step"), (torch.optim.AdamW, "step")] + [
    (module, "adam") for module in map(_module, ["torch.optim.adam", "torch.optim._functional"])
    if hasattr(module, "adam")  # the functional form behind Adam.step, where this torch has one
]
"""torch's ready-made Adam, which exercise 10.2 asks the learner to do without."""

ADAM_STEPS = 5  # consecutive steps, each fed the state the learner's last one returned


def _adam_variants(param: Tensor, grad: Tensor, m: Tensor, v: Tensor, step: int, lr: float,
                   betas: tuple[float, float], eps: float) -> dict[str, tuple[Tensor, Tensor, Tensor]]:
    """(new param, new m, new v) of Adam and of its usual wrong versions, by name; "right" is Kingma & Ba's."""
    b1, b2 = betas

    def update(b1: float, b2: float, square: Tensor, c1: float, c2: float, inside: bool, sign: int = -1):
        new_m, new_v = b1 * m + (1 - b1) * grad, b2 * v + (1 - b2) * square
        m_hat, v_hat = new_m / c1, new_v / c2
        denom = (v_hat + eps).sqrt() if inside else v_hat.sqrt() + eps
        return param + sign * lr * m_hat / denom, new_m, new_v

    right = (1 - b1**step, 1 - b2**step)
    return {
        "right": update(b1, b2, grad**2, *right, False),
        "no correction": update(b1, b2, grad**2, 1.0, 1.0, False),
        "from 0": update(b1, b2, grad**2, 1 - b1 ** (step + 1), 1 - b2 ** (step + 1), False),
        "eps inside": update(b1, b2, grad**2, *right, True),
        "abs": update(b1, b2, grad.abs(), *right, False),
        "swapped": update(b2, b1, grad**2, 1 - b2**step, 1 - b1**step, False),
        "ascent": update(b1, b2, grad**2, *right, False, sign=+1),
    }


_ADAM_HINTS = {
    "no correction": "there is no bias correction: m and v start at 0, so early on they are too small by the factors "
    "1 - beta1 ** step and 1 - beta2 ** step; divide by those before the update (Algorithm 1's m-hat and v-hat).",
    "from 0": "your bias correction counts the steps from 0; torch, like Algorithm 1, counts them from 1: "
    "at step t the factors are 1 - beta1 ** t and 1 - beta2 ** t, with the t the function is given.",
    "eps inside": "epsilon goes outside the square root: divide by sqrt(v_hat) + eps, not sqrt(v_hat + eps).",
    "abs": "v is the running mean of the gradient's square, grad ** 2, not of its size |grad|.",
    "swapped": "the betas are swapped: beta1 (0.9 in the paper) averages the gradient into m, "
    "beta2 (0.98) averages its square into v.",
    "ascent": "your step climbs the loss: Adam subtracts lr * m_hat / (sqrt(v_hat) + eps) from the weights, "
    "as gradient descent subtracts the gradient.",
}
_NOT_CARRIED = ("return the updated m and v, not the ones you were given: they carry the running means "
                "from one step to the next.")
_ZERO_DIVIDED = ("at step 1 your update is nan or inf. The step counts from 1: the bias corrections "
                 "1 - beta ** step are 0 only at step 0, and dividing m and v by 0 gives nan.")


def _same(got: Tensor, value: Tensor) -> bool:
    """Whether ``got`` equals ``value`` within the tolerance the checker accepts."""
    return bool(torch.allclose(got.detach().double(), value.double(), rtol=1e-6, atol=1e-8))


def _named_mistake(got: tuple[Tensor, Tensor, Tensor], given: tuple[Tensor, Tensor, Tensor],
                   variants: dict[str, tuple[Tensor, Tensor, Tensor]]) -> str | None:
    """The hint for the first wrong part of ``got`` (param, m, v) that a known mistake explains, or None."""
    right = variants["right"]
    for i in (1, 2, 0):  # m and v first: a wrong state spoils the weights too
        if _same(got[i], right[i]):
            continue
        if i and _same(got[i], given[i]):
            return _NOT_CARRIED
        for name, value in variants.items():
            if name != "right" and _same(got[i], value[i]) and not _same(value[i], right[i]):
                return _ADAM_HINTS[name]
        return None
    return None


@forbids(ADAM_SHORTCUTS, "write Adam's update yourself, from Algorithm 1 of Kingma & Ba.")
@keeps_random_state
@parts("the paper's betas and eps", "tiny gradients and a large eps", "other betas and rates", drawn=True)
def check_adam_step(fn: Callable[..., Any]) -> None:
    """``fn(param, grad, m, v, step, lr, betas, eps) -> (new_param, new_m, new_v)``: one step of torch.optim.Adam."""
    g = torch.Generator().manual_seed(seeded(12))
    hidden = tuple(int(n) for n in torch.randint(2, 6, (3,), generator=g))
    # Tiny gradients before the last setting: an answer that uses the paper's betas, not the ones it is
    # given, would read there as swapped betas, its beta2 = 0.9 being the paper's beta1.
    settings = {  # (shape, lr, betas, eps, spread): gradients' sizes span 10 ** -spread to 1
        "the paper's betas and eps": ((3, 4), 0.01, (0.9, 0.98), 1e-9, 0),
        "tiny gradients and a large eps": (hidden, 0.1, (0.8, 0.999), 1e-3, 4),  # eps's place shows
        "other betas and rates": ((7,), 0.5, (0.5, 0.9), 1e-6, 2),
    }
    for name, (shape, lr, betas, eps, spread) in settings.items():
        with part(name):
            start = torch.randn(shape, generator=g, dtype=torch.float64)
            grads = [torch.randn(shape, generator=g, dtype=torch.float64)
                     * 10 ** -(spread * torch.rand(shape, generator=g, dtype=torch.float64))
                     for _ in range(ADAM_STEPS)]
            _check_adam_run(fn, start, grads, lr, betas, eps)
    passed(f"your adam_step matches torch.optim.Adam over {ADAM_STEPS} steps in a row, the paper's betas "
           "and eps among the settings.")


def _check_adam_run(fn: Callable[..., Any], start: Tensor, grads: list[Tensor], lr: float,
                    betas: tuple[float, float], eps: float) -> None:
    """The learner's steps against torch.optim.Adam's, each fed the state the learner's last one returned."""
    shape = tuple(start.shape)
    weight = nn.Parameter(start.clone())
    adam = torch.optim.Adam([weight], lr=lr, betas=betas, eps=eps)
    param, m, v = start.clone(), torch.zeros(shape, dtype=torch.float64), torch.zeros(shape, dtype=torch.float64)
    for step, grad in enumerate(grads, start=1):
        weight.grad = grad.clone()
        adam.step()
        state = adam.state[weight]
        expected = (weight.detach(), state["exp_avg"], state["exp_avg_sq"])
        what = (f"adam_step(param, grad, m, v, step={step}, lr={lr}, betas={betas}, eps={eps}) "
                f"on tensors of shape {shape}")
        got = call(fn, param.clone(), grad.clone(), m.clone(), v.clone(), step, lr, betas, eps)
        if not isinstance(got, (tuple, list)) or len(got) != 3:
            raise CheckFailed(f"{what} should return three tensors (new_param, new_m, new_v), got {got!r:.80}.")
        for answer, name in zip(got, ("new_param", "new_m", "new_v")):
            if not isinstance(answer, Tensor) or answer.shape != start.shape:
                kind = f"shape {tuple(answer.shape)}" if isinstance(answer, Tensor) else type(answer).__name__
                raise CheckFailed(f"{what}: {name} should be a tensor of shape {shape}, got {kind}.")
        if step == 1 and not bool(torch.isfinite(got[0]).all()):
            raise CheckFailed(f"{what}: {_ZERO_DIVIDED}")
        hint = _named_mistake(got, (param, m, v), _adam_variants(param, grad, m, v, step, lr, betas, eps))
        if hint:
            raise CheckFailed(f"{what}: {hint}")
        for answer, value, name in zip(got, expected, ("new_param", "new_m", "new_v")):
            assert_tensor(answer, value, f"{what}: {name}", atol=1e-8, rtol=1e-6)
        param, m, v = (answer.detach().double() for answer in got)


@forbids([(train, "rate")], "write the formula yourself, from the paper's equation (3).")
@parts("the paper's schedule", "other sizes", drawn=True)
def check_learning_rate(fn: Callable[[int, int, int], float]) -> None:
    """``fn(step, d_model, warmup) -> float`` must equal :func:`tx.train.rate` (the paper's eq. 3)."""
    g = torch.Generator().manual_seed(seeded(10))
    hidden = (64 * int(torch.randint(1, 9, (1,), generator=g)), int(torch.randint(50, 900, (1,), generator=g)))
    for name, sizes in (("the paper's schedule", [(512, 4000)]), ("other sizes", [(128, 300), hidden])):
        with part(name):
            for d_model, warmup in sizes:
                for step in [1, 10, warmup // 2, warmup - 1, warmup, warmup + 1, 3 * warmup, 100_000]:
                    _check_learning_rate(fn, step, d_model, warmup)
    passed("your learning rate matches tx.train.rate, during warm-up and after.")


def _check_learning_rate(fn: Callable[[int, int, int], float], step: int, d_model: int, warmup: int) -> None:
    got = call(fn, step, d_model, warmup)
    expected = rate(step, d_model, warmup)
    phase = "warm-up (rising)" if step < warmup else "decay (falling)"
    call_text = f"learning_rate(step={step}, d_model={d_model}, warmup={warmup})"
    value = as_number(got, call_text)
    where = f"{call_text} is {value:.6g}, expected {expected:.6g}"
    if step != warmup and math.isclose(value, d_model**-0.5 * max(step**-0.5, step * warmup**-1.5), rel_tol=1e-6):
        raise CheckFailed(f"{where}: you took the larger of the two terms; the rate is the smaller, min(...).")
    if math.isclose(value, expected * d_model**0.5, rel_tol=1e-6):
        raise CheckFailed(f"{where}: the factor d_model ** -0.5 in front is missing.")
    assert_number(got, expected, f"{call_text} in the {phase} phase", tol=1e-6 * expected)
