"""Chapter 10's checkers accept the right answers and reject wrong ones with a hint."""

from __future__ import annotations

import math

import pytest
import torch

from tx.exercises import ch10


def loss_floor(vocab_size, smoothing):
    right, other = 1 - smoothing + smoothing / vocab_size, smoothing / vocab_size
    wrong = (vocab_size - 1) * other * math.log(other) if smoothing > 0 else 0.0
    return -right * math.log(right) - wrong


def adam_step(param, grad, m, v, step, lr, betas=(0.9, 0.98), eps=1e-9):
    b1, b2 = betas
    m = b1 * m + (1 - b1) * grad
    v = b2 * v + (1 - b2) * grad**2
    m_hat, v_hat = m / (1 - b1**step), v / (1 - b2**step)
    return param - lr * m_hat / (v_hat.sqrt() + eps), m, v


def learning_rate(step, d_model, warmup):
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def test_right_answers_pass(capsys):
    ch10.check_loss_floor(loss_floor)
    ch10.check_loss_floor(lambda V, e: torch.tensor(loss_floor(V, e)))  # so is a 0-d tensor
    ch10.check_adam_step(adam_step)
    ch10.check_adam_step(lambda *args: list(adam_step(*args)))  # a list of three will do
    ch10.check_learning_rate(learning_rate)
    assert capsys.readouterr().out.count("Correct:") == 5


def floor_over_the_others(V, e):
    # smoothing / (V - 1) on each wrong word, 1 - smoothing on the right one
    return -(1 - e) * math.log(1 - e) - e * math.log(e / (V - 1)) if e else 0.0


def floor_with_nan(V, e):
    row = torch.tensor([1 - e + e / V, e / V], dtype=torch.float64)
    return float(-(row * row.log() * torch.tensor([1, V - 1])).sum())  # 0 * log 0 is nan


@pytest.mark.parametrize("wrong, hint", [
    (floor_over_the_others, "V - 1 wrong words"),
    (lambda V, e: loss_floor(V, e) / math.log(2), "log base 2"),
    (lambda V, e: -(1 - e + e / V) * math.log(1 - e + e / V) - (e / V) * math.log(e / V) if e else 0.0,
     "counted one wrong word"),
    (lambda V, e: -(1 - e + e / V) * math.log(1 - e + e / V), "left the wrong words out"),
    (lambda V, e: -(1 - e) * math.log(1 - e) - (V - 1) * e / V * math.log(e / V) if e else 0.0, "its own share"),
    (lambda V, e: -(1 - e + e / V) * math.log(1 - e + e / V) - e * math.log(e / V) if e else 0.0, "V wrong words"),
    (lambda V, e: -loss_floor(V, e), "minus sign"),
    (floor_with_nan, "0 \\* log 0 counts as 0"),
    (lambda V, e: -(1 - e + e / V) * math.log(1 - e + e / V) - (V - 1) * e / V * math.log(e / V),
     "ValueError: math domain error .*0 \\* log 0 counts as 0"),  # math.log(0) raises
    (lambda V, e: loss_floor(V, e) * 1.001, "expected"),
])
def test_loss_floor_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch10.check_loss_floor(wrong)


def test_the_floor_is_checked_at_the_papers_size():
    # eq. (10.2)'s floor for the paper's shared vocabulary of about 37,000 tokens and eps = 0.1
    row = torch.full((37_000,), 0.1 / 37_000, dtype=torch.float64)
    row[0] += 0.9
    assert math.isclose(loss_floor(37_000, 0.1), float(-(row * row.log()).sum()), rel_tol=1e-9)


@pytest.mark.parametrize("wrong, hint", [
    (lambda s, d, w: d**-0.5 * max(s**-0.5, s * w**-1.5), "larger of the two"),  # max instead of min
    (lambda s, d, w: min(s**-0.5, s * w**-1.5), "d_model \\*\\* -0.5 in front is missing"),
    (lambda s, d, w: __import__("tx").train.rate(s, d, w), "calls tx.train.rate"),
    (lambda s, d, w: learning_rate(s, 512, 4000), "learning_rate"),  # the paper's sizes, hard-coded
    (lambda s, d, w: d**-0.5 * min(s**-0.5, s * w**-0.5), "warm-up"),  # wrong warm-up exponent
])
def test_learning_rate_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch10.check_learning_rate(wrong)


def test_the_tolerance_is_relative():
    # Learning rates are ~1e-3, so an absolute tolerance of 1e-3 would accept almost anything.
    with pytest.raises(AssertionError):
        ch10.check_learning_rate(lambda s, d, w: learning_rate(s, d, w) * 1.01)
    assert math.isclose(learning_rate(4000, 512, 4000), (512 * 4000) ** -0.5)


def adam_with(swap=False, square=lambda g: g**2, offset=0, correct=True, inside=False, sign=-1, carry=True):
    # adam_step with one mistake: betas swapped, |grad| for grad ** 2, step counted from 0 (offset),
    # no bias correction, eps inside the square root, ascent, or the state not returned
    def step_fn(param, grad, m, v, step, lr, betas=(0.9, 0.98), eps=1e-9):
        b1, b2 = reversed(betas) if swap else betas
        new_m, new_v = b1 * m + (1 - b1) * grad, b2 * v + (1 - b2) * square(grad)
        t = step + offset
        m_hat, v_hat = (new_m / (1 - b1**t), new_v / (1 - b2**t)) if correct else (new_m, new_v)
        denom = (v_hat + eps).sqrt() if inside else v_hat.sqrt() + eps
        new_param = param + sign * lr * m_hat / denom
        return (new_param, new_m, new_v) if carry else (new_param, m, v)
    return step_fn


def functional_adam(param, grad, m, v, step, lr, betas, eps):
    torch.optim._functional.adam(
        [param], [grad], [m], [v], [], [torch.tensor(float(step - 1))], lr=lr, beta1=betas[0], beta2=betas[1],
        eps=eps, weight_decay=0, amsgrad=False, maximize=False)
    return param, m, v


def torch_adam(param, grad, m, v, step, lr, betas, eps):
    weight = torch.nn.Parameter(param)
    weight.grad = grad
    torch.optim.Adam([weight], lr=lr, betas=betas, eps=eps).step()  # fresh each call: no state carried
    return weight.detach(), m, v


@pytest.mark.parametrize("wrong, hint", [
    (adam_with(correct=False), "no bias correction"),
    (adam_with(offset=-1), "nan or inf. The step counts from 1"),  # 1 - beta ** 0 = 0 at step 1
    (adam_with(offset=1), "counts the steps from 0"),
    (adam_with(inside=True), "outside the square root"),
    (adam_with(square=torch.abs), "not of its size \\|grad\\|"),
    (adam_with(swap=True), "betas are swapped"),
    (adam_with(sign=+1), "climbs the loss"),
    (adam_with(carry=False), "return the updated m and v"),
    (functional_adam, "calls torch.optim._functional.adam"),
    (torch_adam, "calls Adam.step"),
    (lambda p, g, m, v, s, lr, betas, eps: adam_step(p, g, m, v, s, lr), "new_param differs"),  # the paper's betas
    (lambda *args: adam_step(*args)[0], "three tensors"),
])
def test_adam_step_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch10.check_adam_step(wrong)


def test_the_adam_checker_compares_with_torch():
    # the right answer equals torch.optim.Adam, which the checker trusts, step after step
    g = torch.Generator().manual_seed(0)
    weight = torch.nn.Parameter(torch.randn(4, generator=g))
    adam = torch.optim.Adam([weight], lr=0.1, betas=(0.9, 0.98), eps=1e-9)
    param, m, v = weight.detach().clone(), torch.zeros(4), torch.zeros(4)
    for step in range(1, 4):
        weight.grad = torch.randn(4, generator=g)
        param, m, v = adam_step(param, weight.grad, m, v, step, 0.1)
        adam.step()
        torch.testing.assert_close(param, weight.detach())
        torch.testing.assert_close(v, adam.state[weight]["exp_avg_sq"])
