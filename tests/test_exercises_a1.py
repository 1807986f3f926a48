"""Appendix A1's checkers accept the right answers and reject wrong ones with a hint."""

from __future__ import annotations

import math

import pytest

from tx.exercises import CheckFailed, a1


def global_mean(means, tokens):
    return sum(m * n for m, n in zip(means, tokens)) / sum(tokens)


def bf16_spacing(x):
    return 2.0 ** (math.floor(math.log2(abs(x))) - 7)


def test_right_answers_pass(capsys):
    a1.check_global_mean(global_mean)
    a1.check_bf16_spacing(bf16_spacing)
    assert capsys.readouterr().out.count("Correct:") == 2


@pytest.mark.parametrize("wrong, hint", [
    (lambda means, tokens: sum(means) / len(means), "plain mean of the shards' means"),
    (lambda means, tokens: sum(m * n for m, n in zip(means, tokens)), "sum of the token losses"),
    (lambda means, tokens: sum(means), "sum of the means"),
    (lambda means, tokens: global_mean(means, tokens) + 0.01, "expected"),
])
def test_global_mean_mistakes_get_hints(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        a1.check_global_mean(wrong)


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
    def stub(means, tokens):
        raise NotImplementedError

    with pytest.raises(CheckFailed, match="NotImplementedError"):
        a1.check_global_mean(stub)


# tests/test_exercises.py holds every chNN checker to these promises; A1's are held here.
@pytest.mark.parametrize("checker", [a1.check_global_mean, a1.check_bf16_spacing])
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
