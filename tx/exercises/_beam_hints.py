"""The hints of chapter 11's beam-step exercise (:func:`tx.exercises.ch11.check_beam_step`): which
continuations an answer kept or finished that a ranking of every continuation would not, and why.

Axes: K beam size, V vocabulary size.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from . import CheckFailed

__all__ = ["as_finished", "assert_go_on", "assert_finished"]

Continuation = tuple[int, int, float]  # (parent beam, token, new score)


def as_finished(got: Any, description: str) -> list[tuple[int, float]]:
    """The answer's ``finished`` as (parent, score) pairs, or CheckFailed saying what came back."""
    try:
        return [(int(p), float(s)) for p, s in got]
    except (TypeError, ValueError, RuntimeError):
        raise CheckFailed(f"{description}: finished should be a list of (parent, score) pairs, "
                          f"got {got!r:.120}.") from None


def assert_go_on(description: str, scores: Tensor, eos_id: int, mine: list[Continuation],
                 expected: list[Continuation]) -> None:
    """CheckFailed, with the mistake named, unless ``mine`` are the continuations that go on."""
    K = scores.size(0)
    for rank, (p, t, s) in enumerate(mine):
        if int(t) == eos_id:
            raise CheckFailed(
                f"{description}: (parent={int(p)}, token={int(t)}) goes on at rank {rank}, but it ends with "
                f"eos_id={eos_id}. A continuation that ends does not take a beam: it finishes if it is among the "
                f"{K} best of all and is dropped otherwise, and the next continuation takes its place."
            )
    for rank, ((p, t, s), (ep, et, es)) in enumerate(zip(mine, expected)):
        if (int(p), int(t)) != (ep, et) and 0 <= int(p) < K and scores[int(p)] == float("-inf"):
            raise CheckFailed(
                f"{description}: at rank {rank} you extend beam {int(p)}, whose score is -inf: it is not alive "
                "yet. Add scores[parent] to every log-prob, so its continuations stay at -inf and are never kept."
            )
        if (int(p), int(t)) != (ep, et) or not abs(s - es) <= 1e-4:
            hint = ("parent = flat index // V and token = flat index % V, where V = log_probs.size(1)"
                    if abs(s - es) <= 1e-4 else
                    "the score of a continuation is scores[parent] + log_probs[parent, token]; rank all K*V of them "
                    "together, and skip the ones that end")
            raise CheckFailed(
                f"{description}: at rank {rank} you keep (parent={int(p)}, token={int(t)}, score={s:.4f}); the "
                f"{K} best that go on have (parent={ep}, token={et}, score={es:.4f}) there. Hint: {hint}."
            )


def assert_finished(description: str, K: int, eos_id: int, everything: list[Continuation],
                    mine: list[tuple[int, float]], expected: list[tuple[int, float]]) -> None:
    """CheckFailed, with the mistake named, unless ``mine`` are the (parent, score) of the hypotheses that finish."""
    def same(a: tuple[int, float], b: tuple[int, float]) -> bool:
        return a[0] == b[0] and abs(a[1] - b[1]) <= 1e-4

    for f in mine:
        if not any(same(f, e) for e in expected):
            if any(same(f, (p, s)) for p, t, s in everything if t == eos_id):
                raise CheckFailed(
                    f"{description}: (parent={f[0]}, score={f[1]:.4f}) ends with eos_id={eos_id}, but it is not "
                    f"among the {K} best continuations of all, so it is dropped, not finished."
                )
            raise CheckFailed(f"{description}: finished holds (parent={f[0]}, score={f[1]:.4f}), which is not a "
                              f"continuation ending with eos_id={eos_id}. Its score is scores[parent] + "
                              "log_probs[parent, eos_id].")
    for e in expected:
        if not any(same(e, f) for f in mine):
            raise CheckFailed(f"{description}: (parent={e[0]}, token={eos_id}, score={e[1]:.4f}) is among the {K} "
                              "best continuations and ends: return it in finished.")
    if len(mine) != len(expected) or not all(same(f, e) for f, e in zip(mine, expected)):
        raise CheckFailed(f"{description}: finished should list each hypothesis once, best first: expected "
                          f"{[(p, round(s, 4)) for p, s in expected]}, got {[(p, round(s, 4)) for p, s in mine]}.")
