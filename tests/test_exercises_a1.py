"""Appendix A1's checkers accept the right answers and reject wrong ones with a hint."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tx.exercises import CheckFailed, a1


def accumulation_weights(tokens):
    return [n / sum(tokens) for n in tokens]


def bf16_spacing(x):
    return 2.0 ** (math.floor(math.log2(abs(x))) - 7)


def test_right_answers_pass(capsys):
    a1.check_accumulation_weights(accumulation_weights)
    a1.check_accumulation_weights(lambda tokens: torch.tensor(tokens) / sum(tokens))  # a tensor [M] will do
    a1.check_accumulation_weights(lambda tokens: np.array(tokens) / sum(tokens))  # so will an array
    a1.check_bf16_spacing(bf16_spacing)
    assert capsys.readouterr().out.count("Correct:") == 4


@pytest.mark.parametrize("wrong, hint", [
    (lambda tokens: [1 / len(tokens)] * len(tokens), "equal weights"),
    (lambda tokens: list(tokens), "too large"),
    (lambda tokens: [1.0] * len(tokens), "adds the micro-batches' means"),
    (lambda tokens: [sum(tokens) / n for n in tokens], "upside down"),
    (lambda tokens: [1 / n for n in tokens], "divides each mean by its tokens once more"),
    (lambda tokens: [1 / sum(tokens)] * len(tokens), "sum of its token losses"),
    (lambda tokens: [n / sum(tokens) * 2 for n in tokens], "right proportions, but they add up to 2"),
    (lambda tokens: [(n + 1) / (sum(tokens) + len(tokens)) for n in tokens], "accumulated gradient differs"),
    (lambda tokens: [1.0], "list of .* numbers, one per micro-batch"),
    (lambda tokens: sum(tokens), "list of .* numbers"),
])
def test_accumulation_weights_mistakes_get_hints(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        a1.check_accumulation_weights(wrong)


def test_the_weights_are_checked_by_the_gradients_themselves():
    # weights that match no named mistake but are slightly off still fail, on the gradient
    with pytest.raises(CheckFailed, match="accumulated gradient differs"):
        a1.check_accumulation_weights(lambda tokens: [n / sum(tokens) + 0.01 * (-1) ** i for i, n in enumerate(tokens)])


@pytest.mark.parametrize("wrong, hint", [
    (lambda x: 2.0 ** (math.floor(math.log2(abs(x))) - 23), "spacing of float32"),
    (lambda x: 2.0 ** (math.floor(math.log2(abs(x))) - 10), "spacing of float16"),
    (lambda x: 2.0 ** (math.floor(math.log2(abs(x))) - 8), "half the gap"),
    (lambda x: math.copysign(2.0 ** (math.floor(math.log2(abs(x))) - 7), x), "use abs"),
    (lambda x: abs(x) * 2.0**-7, "expected"),
])
def test_bf16_spacing_mistakes_get_hints(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        a1.check_bf16_spacing(wrong)


def test_a_stub_gets_a_hint():
    def stub(tokens):
        raise NotImplementedError

    with pytest.raises(CheckFailed, match="NotImplementedError"):
        a1.check_accumulation_weights(stub)


# tests/test_exercises.py holds every chNN checker to these promises; A1's are held here.
@pytest.mark.parametrize("checker", [a1.check_accumulation_weights, a1.check_bf16_spacing])
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
    (a1.check_accumulation_weights, accumulation_weights),
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
    # check_accumulation_weights seeds torch to build its model; the notebook's stream must not notice.
    from conftest import rng_untouched

    assert rng_untouched(lambda: a1.check_accumulation_weights(accumulation_weights))
