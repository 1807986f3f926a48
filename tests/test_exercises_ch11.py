"""Chapter 11's checkers accept the right answers and reject wrong ones with a hint."""

from __future__ import annotations

import pytest
import torch

import tx
from tx.exercises import ch11


def greedy(next_log_probs, bos_id, eos_id, max_len):
    ids = [bos_id]
    for _ in range(max_len):
        ids.append(int(next_log_probs(ids).argmax()))
        if ids[-1] == eos_id:
            break
    return ids


def beam_step(scores, log_probs):
    K, V = log_probs.shape
    top, flat = (scores[:, None] + log_probs).flatten().topk(K)
    return flat // V, flat % V, top


def penalised_score(token_log_probs, alpha):
    return float(token_log_probs.sum() / len(token_log_probs) ** alpha)


def test_right_answers_pass(capsys):
    ch11.check_greedy(greedy)
    ch11.check_beam_step(beam_step)
    ch11.check_penalised_score(penalised_score)
    assert capsys.readouterr().out.count("Correct:") == 3


def test_checkers_leave_the_callers_random_state_alone():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    ch11.check_greedy(greedy)
    ch11.check_beam_step(beam_step)
    torch.testing.assert_close(torch.rand(3), expected)


def greedy_without_stopping(next_log_probs, bos_id, eos_id, max_len):
    ids = [bos_id]
    for _ in range(max_len):
        ids.append(int(next_log_probs(ids).argmax()))
    return ids


def greedy_dropping_eos(next_log_probs, bos_id, eos_id, max_len):
    return [t for t in greedy(next_log_probs, bos_id, eos_id, max_len) if t != eos_id]


def greedy_one_step_too_many(next_log_probs, bos_id, eos_id, max_len):
    return greedy(next_log_probs, bos_id, eos_id, max_len + 1)


def greedy_one_step_too_few(next_log_probs, bos_id, eos_id, max_len):
    ids = [bos_id]
    for _ in range(max_len - 1):
        ids.append(int(next_log_probs(ids).argmax()))
        if ids[-1] == eos_id:
            break
    return ids


def greedy_second_best(next_log_probs, bos_id, eos_id, max_len):
    ids = [bos_id]
    for _ in range(max_len):
        ids.append(int(next_log_probs(ids).topk(2).indices[1]))
        if ids[-1] == eos_id:
            break
    return ids


@pytest.mark.parametrize("wrong, hint", [
    (greedy_without_stopping, "stop as soon as"),
    (greedy_dropping_eos, "without keeping it"),
    (greedy_one_step_too_many, "at most max_len"),
    (greedy_one_step_too_few, "you stopped after"),
    (greedy_second_best, "argmax"),
    (lambda f, b, e, n: greedy(f, b, e, n)[1:], "starts with bos_id"),
    (lambda f, b, e, n: "the cat", "list of token ids"),
])
def test_greedy_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch11.check_greedy(wrong)


def best_per_beam(scores, log_probs):
    # Keeps each beam's best word: the classic mistake of ranking inside each beam only.
    top, token = (scores[:, None] + log_probs).max(dim=-1)
    order = top.argsort(descending=True)
    return order, token[order], top[order]


def parent_token_swapped(scores, log_probs):
    parent, token, score = beam_step(scores, log_probs)
    return token, parent, score


def forgets_running_score(scores, log_probs):
    K, V = log_probs.shape
    top, flat = log_probs.flatten().topk(K)
    return flat // V, flat % V, top


def worst_first(scores, log_probs):
    parent, token, score = beam_step(scores, log_probs)
    return parent.flip(0), token.flip(0), score.flip(0)


@pytest.mark.parametrize("wrong, hint", [
    (best_per_beam, "rank all K\\*V"),
    (parent_token_swapped, "parent = flat index // V"),
    (forgets_running_score, "scores\\[parent\\] \\+ log_probs"),
    (worst_first, "rank 0"),
    (lambda s, lp: beam_step(s, lp)[:2], "three tensors"),
    (lambda s, lp: tuple(x[:1] for x in beam_step(s, lp)), "shape"),
    (lambda s, lp: tuple(x.float() for x in beam_step(s, lp)), "integer tensor"),
    (lambda s, lp: beam_step(s.nan_to_num(neginf=0.0), lp), "not alive"),  # revives the dead beams of the first step
])
def test_beam_step_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch11.check_beam_step(wrong)


def test_brute_force_agrees_with_a_hand_count():
    scores = torch.tensor([-1.0, -2.0])
    log_probs = torch.tensor([[-3.0, -0.5, -2.0], [-0.1, -4.0, -0.2]])
    # All six sums: -4, -1.5, -3, -2.1, -6, -2.2. The two best: (0, 1, -1.5) and (1, 0, -2.1).
    got = ch11.brute_force_top_k(scores, log_probs)
    assert [(p, t) for p, t, _ in got] == [(0, 1), (1, 0)]
    assert [s for _, _, s in got] == pytest.approx([-1.5, -2.1])


def test_brute_force_agrees_with_beam_search_on_its_first_step():
    model = ch11._tiny_model(5)
    src = ch11._sources(5, 1)
    trace = []
    tx.beam_search(model, src, beam_size=3, max_len=1, bos_id=1, eos_id=2, trace=trace)
    with torch.no_grad():
        log_probs = model(src, torch.tensor([[1]]))[:, -1].log_softmax(-1)  # [1, V]
    expected = ch11.brute_force_top_k(torch.tensor([0.0]), log_probs)  # one live beam: its top 1
    assert (trace[1][0]["parent"], trace[1][0]["token"]) == expected[0][:2]


@pytest.mark.parametrize("wrong, hint", [
    (lambda lp, a: float(lp.sum()), "plain sum"),  # no penalty
    (lambda lp, a: float(lp.sum() / (len(lp) - 1) ** a) if len(lp) > 1 else float(lp.sum()), "<eos> included"),
    (lambda lp, a: float(lp.sum() * len(lp) ** a), "multiplied"),
    (lambda lp, a: float(lp.mean()), "whatever alpha is"),  # alpha ignored, always 1
    (lambda lp, a: float(-lp.sum() / len(lp) ** a), "negative"),
    (lambda lp, a: float("nan"), "not a finite number"),
    (lambda lp, a: "score", "should be one number"),
])
def test_penalised_score_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch11.check_penalised_score(wrong)
