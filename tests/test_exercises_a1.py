"""Appendix A1's checkers accept the right answers and reject wrong ones with a hint."""

from __future__ import annotations

import math

import pytest
import torch

from tx.exercises import CheckFailed, a1
from tx.train import loss_fn


def accumulate(model, micro_batches, pad_id, *, summed=True, keep=True, rescale="N", count="N"):
    """The solution; the keyword arguments turn it into the named mistakes."""
    seen = {"N": 0, "M": 0, "positions": 0, "none": 1}
    for x, y in micro_batches:
        if not keep:
            model.zero_grad()  # .grad zeroed between micro-batches
        n = int((y != pad_id).sum())
        mean = loss_fn(model(x), y, pad_id, 0.1)
        (mean * n if summed else mean).backward()
        seen["N"], seen["M"], seen["positions"] = seen["N"] + n, seen["M"] + 1, seen["positions"] + y.numel()
    for p in model.parameters():
        p.grad /= seen[rescale]
    return seen[count]


def bf16_spacing(x):
    return 2.0 ** (math.floor(math.log2(abs(x))) - 7)


def test_right_answers_pass(capsys):
    a1.check_accumulate(accumulate)
    a1.check_accumulate(lambda *args: torch.tensor(accumulate(*args)))  # a one-element tensor will do for N
    a1.check_bf16_spacing(bf16_spacing)
    assert capsys.readouterr().out.count("Correct:") == 3


def kept_all(model, micro_batches, pad_id):
    # a first pass over the stream to count the tokens, a second to run them
    N = sum(int((y != pad_id).sum()) for _, y in micro_batches)
    for x, y in micro_batches:
        loss_fn(model(x), y, pad_id, 0.1).mul(int((y != pad_id).sum()) / N).backward()
    return N


def graphs_kept(model, micro_batches, pad_id):
    # the losses' graphs kept, one backward() at the end
    losses, N = [], 0
    for x, y in micro_batches:
        n = int((y != pad_id).sum())
        losses.append(loss_fn(model(x), y, pad_id, 0.1) * n)
        N += n
    (sum(losses) / N).backward()
    return N


@pytest.mark.parametrize("wrong, hint", [
    (lambda *a: accumulate(*a, summed=False, rescale="M"), "weighed equally"),
    (lambda *a: accumulate(*a, summed=False, rescale="none"), "backward\\(\\) on each micro-batch's mean: multiply"),
    (lambda *a: accumulate(*a, summed=False), "divided by N at the end"),
    (lambda *a: accumulate(*a, rescale="none"), "N = .* times too large"),
    (lambda *a: accumulate(*a, rescale="M"), "divided by the number of micro-batches"),
    (lambda *a: accumulate(*a, keep=False), "only the last micro-batch's gradient"),
    (lambda *a: accumulate(*a, count="M"), "number of micro-batches"),
    (lambda *a: accumulate(*a, count="positions"), "counts the pad positions"),
    (lambda *a: accumulate(*a) + 1, "expected N = "),
    (lambda m, mb, pad: accumulate(m, [next(mb)], pad), "read 1 of them"),
    (lambda m, mb, pad: (accumulate(m, mb, pad), [p.grad.mul_(1.01) for p in m.parameters()])[0],
     "right way but is 1.01 times"),
    (kept_all, "A first pass that counts the tokens"),
    (lambda m, mb, pad: (accumulate(m, mb, pad), list(mb))[0], "read again after its last micro-batch"),
    (graphs_kept, "read before backward\\(\\) ran on micro-batch 1"),
])
def test_accumulate_mistakes_get_hints(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        a1.check_accumulate(wrong)


def test_the_gradients_are_compared_entry_by_entry():
    # a gradient that matches no named mistake but is slightly off still fails, on the gradient
    def nudged(model, micro_batches, pad_id):
        N = accumulate(model, micro_batches, pad_id)
        model[0].weight.grad[1, 0] += 0.01
        return N

    with pytest.raises(CheckFailed, match="differs from the whole batch's by up to 0.01"):
        a1.check_accumulate(nudged)


@pytest.mark.parametrize("wrong, hint", [
    (lambda x: 2.0 ** (math.floor(math.log2(abs(x))) - 23), "spacing of float32"),
    (lambda x: 2.0 ** (math.floor(math.log2(abs(x))) - 10), "spacing of float16"),
    (lambda x: 2.0 ** (math.floor(math.log2(abs(x))) - 8), "half the gap"),
    (lambda x: math.copysign(2.0 ** (math.floor(math.log2(abs(x))) - 7), x), "use abs"),
    (lambda x: abs(x) * 2.0**-7, "expected"),
    # math.frexp's exponent is one more than x's: 2 ** (e - 7) is twice the gap
    (lambda x: 2.0 ** (math.frexp(x)[1] - 7), "twice the gap. math.frexp"),
    # one epsilon for every x
    (lambda x: 2.0**-7, "grows with x's exponent"),
])
def test_bf16_spacing_mistakes_get_hints(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        a1.check_bf16_spacing(wrong)


def test_a_wrong_spacing_gets_one_clean_sentence():
    # None of the named mistakes: the hint is assert_number's one sentence, "expected" once.
    with pytest.raises(CheckFailed) as failed:
        a1.check_bf16_spacing(lambda x: abs(x) * 2.0**-7)
    assert str(failed.value) == "bf16_spacing(3.0) is 0.0234375; expected 0.015625 (within 1.56e-11)."


def test_a_stub_gets_a_hint():
    def stub(model, micro_batches, pad_id):
        raise NotImplementedError

    with pytest.raises(CheckFailed, match="NotImplementedError"):
        a1.check_accumulate(stub)


# tests/test_exercises.py holds every chNN checker to these promises; A1's are held here.
@pytest.mark.parametrize("checker", [a1.check_accumulate, a1.check_bf16_spacing])
def test_every_checker_keeps_the_common_promises(checker):
    from conftest import rng_untouched

    def stub(*args):
        raise NotImplementedError

    with pytest.raises(CheckFailed, match="still raises NotImplementedError"):
        checker(stub)
    with pytest.raises(AssertionError, match="expected a function"):
        checker(None)
    for bad in (math.nan, math.inf):
        with pytest.raises(CheckFailed):
            checker(lambda *args, bad=bad: bad)

    def check_a_stub():
        with pytest.raises(AssertionError):
            checker(stub)

    assert rng_untouched(check_a_stub)


@pytest.mark.parametrize("checker, solution", [
    (a1.check_accumulate, accumulate),
    (a1.check_bf16_spacing, bf16_spacing),
])
def test_a_hard_coded_answer_fails(checker, solution):
    # The answer to the checker's first question, returned whatever the question.
    first = []

    def hard_coded(*args):
        if not first:
            first.append(solution(*args))
        return first[0]

    with pytest.raises(CheckFailed):
        checker(hard_coded)


def test_a_right_answer_leaves_the_random_stream_alone(capsys):
    # check_accumulate seeds torch to build its model; the notebook's stream must not notice.
    from conftest import rng_untouched

    assert rng_untouched(lambda: a1.check_accumulate(accumulate))
