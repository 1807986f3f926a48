"""Chapter 11's checkers accept the right answers and reject wrong ones with a hint."""

from __future__ import annotations

import math
import re
from functools import partial

import pytest
import torch

import tx
from tx.exercises import ch11


def best_sentence(next_log_probs, bos_id, eos_id, max_len):
    # depth-first, the most probable continuation first; prune below the best finished
    best, best_lp = None, -math.inf

    def extend(prefix, lp):
        nonlocal best, best_lp
        if lp < best_lp:
            return
        log_probs = next_log_probs(prefix)
        if lp + float(log_probs[eos_id]) > best_lp:
            best, best_lp = prefix + [eos_id], lp + float(log_probs[eos_id])
        if len(prefix) < max_len:  # room for one more token and eos_id
            for t in log_probs.argsort(descending=True).tolist():
                if t != eos_id:
                    extend(prefix + [t], lp + float(log_probs[t]))

    extend([bos_id], 0.0)
    return best


def beam_step(scores, log_probs, eos_id):
    K, V = log_probs.shape
    top, flat = (scores[:, None] + log_probs).flatten().topk(2 * K)
    parent, token = flat // V, flat % V
    ends = token == eos_id
    finished = [(int(p), float(s)) for p, s, e in zip(parent[:K], top[:K], ends[:K]) if e]
    return parent[~ends][:K], token[~ends][:K], top[~ends][:K], finished


def crossing_alpha(a, b):
    # sum_a / L_a ** alpha = sum_b / L_b ** alpha
    return math.log(float(b.sum() / a.sum())) / math.log(len(b) / len(a))


def test_right_answers_pass(capsys):
    ch11.check_best_sentence(best_sentence)
    ch11.check_beam_step(beam_step)
    ch11.check_crossing_alpha(crossing_alpha)
    assert capsys.readouterr().out.count("Correct:") == 3


def test_checkers_leave_the_callers_random_state_alone():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    ch11.check_best_sentence(best_sentence)
    ch11.check_beam_step(beam_step)
    torch.testing.assert_close(torch.rand(3), expected)


def exact_search(next_log_probs, bos_id, eos_id, max_len, prune=lambda lp, best_lp: lp < best_lp,
                 keep_eos=True, room=lambda prefix, max_len: len(prefix) < max_len, bound_of=None):
    # best_sentence with one piece swapped for a wrong one; bound_of(prefix lp, sentence lp) is the
    # log-prob a finished sentence sets as the bound
    best, best_lp, bound = None, -math.inf, -math.inf

    def extend(prefix, lp):
        nonlocal best, best_lp, bound
        if prune(lp, bound):
            return
        log_probs = next_log_probs(prefix)
        ending = lp + float(log_probs[eos_id])
        if ending > best_lp:
            best, best_lp = prefix + [eos_id] * keep_eos, ending
            bound = ending if bound_of is None else bound_of(lp, ending)
        if room(prefix, max_len):
            for t in log_probs.argsort(descending=True).tolist():
                if t != eos_id:
                    extend(prefix + [t], lp + float(log_probs[t]))

    extend([bos_id], 0.0)
    return best


def every_sentence(next_log_probs, bos_id, eos_id, max_len, rank=lambda ids, lp: lp):
    # brute force: every finished sentence, the best by rank(ids, log-prob)
    found = []

    def visit(prefix, lp):
        log_probs = next_log_probs(prefix)
        found.append((prefix + [eos_id], lp + float(log_probs[eos_id])))
        if len(prefix) < max_len:
            for t in range(len(log_probs)):
                if t != eos_id:
                    visit(prefix + [t], lp + float(log_probs[t]))

    visit([bos_id], 0.0)
    return max(found, key=lambda s: rank(*s))[0]


def greedy(next_log_probs, bos_id, eos_id, max_len):
    ids = [bos_id]
    for _ in range(max_len):
        ids.append(int(next_log_probs(ids).argmax()))
        if ids[-1] == eos_id:
            break
    return ids


def prefixes_count_as_sentences(next_log_probs, bos_id, eos_id, max_len):
    # A prefix that reaches max_len is taken as a sentence, as greedy decoding's would be.
    best, best_lp = None, -math.inf

    def extend(prefix, lp):
        nonlocal best, best_lp
        if lp < best_lp:
            return
        if len(prefix) - 1 == max_len:
            best, best_lp = prefix, lp
            return
        log_probs = next_log_probs(prefix)
        if lp + float(log_probs[eos_id]) > best_lp:
            best, best_lp = prefix + [eos_id], lp + float(log_probs[eos_id])
        for t in log_probs.argsort(descending=True).tolist():
            if t != eos_id:
                extend(prefix + [t], lp + float(log_probs[t]))

    extend([bos_id], 0.0)
    return best


def best_depth_first(next_log_probs, bos_id, eos_id, max_len):
    # Prunes a prefix that is worse than one already seen at its depth: a greedy search
    # that backtracks, not an exact one.
    best, best_lp, at_depth = None, -math.inf, {}

    def extend(prefix, lp):
        nonlocal best, best_lp
        if lp < best_lp or lp < at_depth.get(len(prefix), -math.inf):
            return
        at_depth[len(prefix)] = lp
        log_probs = next_log_probs(prefix)
        if lp + float(log_probs[eos_id]) > best_lp:
            best, best_lp = prefix + [eos_id], lp + float(log_probs[eos_id])
        if len(prefix) < max_len:
            for t in log_probs.argsort(descending=True).tolist():
                if t != eos_id:
                    extend(prefix + [t], lp + float(log_probs[t]))

    extend([bos_id], 0.0)
    return best


def past_eos(next_log_probs, bos_id, eos_id, max_len):
    # Extends every prefix, <eos> or not, as far as max_len.
    ids = [bos_id]
    next_log_probs(ids + [eos_id])
    return best_sentence(next_log_probs, bos_id, eos_id, max_len)


@pytest.mark.parametrize("wrong, hint", [
    (greedy, "greedy decoding's sentence"),
    (partial(exact_search, keep_eos=False), "without its eos_id"),
    (prefixes_count_as_sentences, "an unfinished prefix"),
    (partial(exact_search, prune=lambda lp, best_lp: lp > best_lp), "cut the root"),  # the wrong way round
    (partial(exact_search, bound_of=lambda lp, ending: lp), "your pruning cut it"),  # the bound forgets <eos>
    (best_depth_first, "your pruning cut it"),
    (partial(exact_search, room=lambda prefix, max_len: True), "at most max_len"),  # runs on past max_len
    (partial(exact_search, room=lambda prefix, max_len: True, prune=lambda lp, best_lp: False), "at most max_len"),
    (partial(exact_search, room=lambda prefix, max_len: len(prefix) <= max_len), "at most max_len"),  # one too many
    (partial(every_sentence, rank=lambda ids, lp: lp / (len(ids) - 1)), "per token"),  # length-normalised
    (every_sentence, "never pruned"),
    (past_eos, "nothing comes after it"),
    (lambda f, b, e, n: best_sentence(f, b, e, n)[1:], "starts with bos_id"),
    (lambda f, b, e, n: "the cat", "list of token ids"),
    (lambda f, b, e, n: None, "no sentence"),
])
def test_best_sentence_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch11.check_best_sentence(wrong)


def test_best_sentence_checker_counts_what_the_pruning_spared(capsys):
    ch11.check_best_sentence(best_sentence)
    asked, every = map(int, re.search(r"about (\d+) prefixes where trying every sentence asks about (\d+)",
                                      capsys.readouterr().out).groups())
    # brute force asks about every prefix without <eos> of 0 .. max_len - 1 tokens, once
    assert every == sum((m().V - 1) ** k for _, m in ch11._exact_cases() for k in range(m().max_len))
    assert 0 < asked < every / 10


def test_the_exact_search_cases_show_each_mistake():
    # the cases the hints rely on: greedy's sentence and the best per token are not the best
    # sentence; a search that runs past max_len finds a more probable, longer one
    for description, new_model in ch11._exact_cases():
        model = new_model()
        every = ch11._every_sentence(model)
        ranked = sorted(every, key=every.get, reverse=True)
        best = ranked[0]
        assert every[ranked[0]] - every[ranked[1]] > 0.01, description  # one clear winner
        assert ch11._greedy(model) != best and len(best) > 2, description
        assert max(every, key=lambda s: every[s] / (len(s) - 1)) != best, description
        assert abs(model.score(best) - every[best]) < 1e-9
    longer = ch11._exact_cases()[-1][1]()
    assert len(exact_search(longer, longer.bos_id, longer.eos_id, longer.max_len + 1)) - 1 > longer.max_len


def test_brute_force_of_the_exact_search_agrees_with_a_hand_count():
    # V=2: token 0 and eos_id=1; max_len=2 allows exactly [bos, 1] and [bos, 0, 1]
    model = ch11._RandomModel(seed=0, V=2, eos_id=1, max_len=2, sharpness=1.0)
    every = ch11._every_sentence(model)
    assert set(every) == {(2, 1), (2, 0, 1)}
    p = [model.log_probs((2,)), model.log_probs((2, 0))]
    assert every[(2, 1)] == pytest.approx(float(p[0][1]))
    assert every[(2, 0, 1)] == pytest.approx(float(p[0][0] + p[1][1]))
    assert model.asked == set()  # brute force's own questions are not counted as the learner's


def plain_top_k(scores, log_probs, eos_id):
    # The step without <eos>: the K best continuations, whatever they end with.
    K, V = log_probs.shape
    top, flat = (scores[:, None] + log_probs).flatten().topk(K)
    return flat // V, flat % V, top, []


def top_k_without_the_ended(scores, log_probs, eos_id):
    # Sets the ended ones aside but looks no further than the K best: fewer than K go on.
    parent, token, score, _ = plain_top_k(scores, log_probs, eos_id)
    ends = token == eos_id
    finished = [(int(p), float(s)) for p, s in zip(parent[ends], score[ends])]
    return parent[~ends], token[~ends], score[~ends], finished


def looks_one_further(scores, log_probs, eos_id):
    # K + 1 candidates: enough when one of the best ends, not when two do.
    K, V = log_probs.shape
    top, flat = (scores[:, None] + log_probs).flatten().topk(K + 1)
    parent, token = flat // V, flat % V
    ends = token == eos_id
    finished = [(int(p), float(s)) for p, s, e in zip(parent[:K], top[:K], ends[:K]) if e]
    return parent[~ends][:K], token[~ends][:K], top[~ends][:K], finished


def finishes_too_far_down(scores, log_probs, eos_id):
    # Every <eos> among the 2K candidates finishes, not only those among the K best.
    parent, token, score, _ = beam_step(scores, log_probs, eos_id)
    K, V = log_probs.shape
    top, flat = (scores[:, None] + log_probs).flatten().topk(2 * K)
    return parent, token, score, [(int(f) // V, float(s)) for f, s in zip(flat, top) if int(f) % V == eos_id]


def best_per_beam(scores, log_probs, eos_id):
    # Keeps each beam's best word: the classic mistake of ranking inside each beam only.
    _, _, _, finished = beam_step(scores, log_probs, eos_id)
    top, token = (scores[:, None] + log_probs.index_fill(1, torch.tensor([eos_id]), float("-inf"))).max(dim=-1)
    order = top.argsort(descending=True)
    return order, token[order], top[order], finished


def parent_token_swapped(scores, log_probs, eos_id):
    parent, token, score, finished = beam_step(scores, log_probs, eos_id)
    return token, parent, score, finished


def forgets_running_score(scores, log_probs, eos_id):
    return beam_step(torch.zeros_like(scores), log_probs, eos_id)


def worst_first(scores, log_probs, eos_id):
    parent, token, score, finished = beam_step(scores, log_probs, eos_id)
    return parent.flip(0), token.flip(0), score.flip(0), finished


@pytest.mark.parametrize("wrong, hint", [
    (plain_top_k, "does not take a beam"),
    (top_k_without_the_ended, "entries; 2 beams go on"),
    (looks_one_further, "entries; 2 beams go on"),
    (finishes_too_far_down, "dropped, not finished"),
    (lambda s, lp, e: (*beam_step(s, lp, e)[:3], []), "return it in finished"),
    (lambda s, lp, e: (*beam_step(s, lp, e)[:3], beam_step(s, lp, e)[3][::-1]), "best first"),
    (lambda s, lp, e: (*beam_step(s, lp, e)[:3], [s for _, s in beam_step(s, lp, e)[3]]), r"\(parent, score\) pairs"),
    (best_per_beam, "rank all K\\*V"),
    (parent_token_swapped, "parent = flat index // V"),
    (forgets_running_score, "scores\\[parent\\] \\+ log_probs"),
    (worst_first, "rank 0"),
    (lambda s, lp, e: beam_step(s, lp, e)[:3], "four things"),
    (lambda s, lp, e: tuple(x[:1] for x in beam_step(s, lp, e)[:3]) + (beam_step(s, lp, e)[3],), "entries"),
    (lambda s, lp, e: tuple(x.float() for x in beam_step(s, lp, e)[:3]) + (beam_step(s, lp, e)[3],), "integer tensor"),
    (lambda s, lp, e: beam_step(s.nan_to_num(neginf=0.0), lp, e), "not alive"),  # revives the first step's dead beams
])
def test_beam_step_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch11.check_beam_step(wrong)


def test_brute_force_agrees_with_a_hand_count():
    scores = torch.tensor([-1.0, -2.0])
    log_probs = torch.tensor([[-3.0, -0.5, -2.0], [-0.1, -4.0, -0.2]])
    # All six sums: (0, 0) -4, (0, 1) -1.5, (0, 2) -3, (1, 0) -2.1, (1, 1) -6, (1, 2) -2.2.
    # With eos_id=0: (1, 0) is among the two best and finishes; (0, 1) and (1, 2) go on.
    go_on, finished = ch11.brute_force_step(scores, log_probs, eos_id=0)
    assert [(p, t) for p, t, _ in go_on] == [(0, 1), (1, 2)]
    assert [s for _, _, s in go_on] == pytest.approx([-1.5, -2.2])
    assert finished == [(1, pytest.approx(-2.1))]
    # With eos_id=2: (1, 2) at -2.2 ends but is third, so it is dropped; (1, 0) takes its place.
    go_on, finished = ch11.brute_force_step(scores, log_probs, eos_id=2)
    assert [(p, t) for p, t, _ in go_on] == [(0, 1), (1, 0)] and finished == []


def test_the_checker_asks_about_every_way_a_step_can_end():
    # The cases the exercise's hints name: none of the best ends, one just below the K best,
    # all K of the best, and a real step of tx.beam_search in which a hypothesis finishes.
    kinds = set()
    for _, scores, log_probs, eos_id in (case for cases in ch11._beam_step_cases().values() for case in cases):
        K = scores.size(0)
        ranked = sorted(((float(scores[k] + log_probs[k, v]), v) for k in range(K) for v in range(log_probs.size(1))),
                        reverse=True)
        ends = [v == eos_id for _, v in ranked[:2 * K]]
        kinds.add(("none" if not any(ends) else "all" if all(ends[:K]) else "some" if any(ends[:K]) else "below"))
    assert kinds == {"none", "below", "some", "all"}


def test_brute_force_agrees_with_beam_search_on_its_first_step():
    model = ch11._tiny_model(5)
    src = ch11._sources(5, 1)
    trace = []
    tx.beam_search(model, src, beam_size=3, max_len=1, bos_id=1, eos_id=2, trace=trace)
    with torch.no_grad():
        log_probs = model(src, torch.tensor([[1]]))[:, -1].log_softmax(-1)  # [1, V]
    # one live beam, and at max_len every candidate ends: its best, whatever the token (no id is -1)
    expected, _ = ch11.brute_force_step(torch.tensor([0.0]), log_probs, eos_id=-1)
    assert (trace[1][0]["parent"], trace[1][0]["token"]) == expected[0][:2]


def crossing_of_means(a, b):
    return math.log(float(b.mean() / a.mean())) / math.log(len(b) / len(a))


def crossing_upside_down(a, b):
    return math.log(float(b.sum() / a.sum())) / math.log(len(a) / len(b))


def crossing_without_eos(a, b):
    return math.log(float(b.sum() / a.sum())) / math.log((len(b) - 1) / (len(a) - 1))


def crossing_of_negative_logs(a, b):
    return float((b.sum().log() - a.sum().log()) / math.log(len(b) / len(a)))


def crossing_of_gnmt(a, b):  # the other penalty: unfamiliar, so tx's two scores are shown
    return math.log(float(b.sum() / a.sum())) / math.log((5 + len(b)) / (5 + len(a)))


@pytest.mark.parametrize("wrong, hint", [
    (crossing_of_means, "not their mean"),
    (crossing_upside_down, "upside down"),
    (crossing_without_eos, "<eos> included"),
    (crossing_of_negative_logs, "log of a negative number"),
    (crossing_of_gnmt, "which should be equal"),
    (lambda a, b: "alpha", "should be one number"),
])
def test_crossing_alpha_checker_rejects(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch11.check_crossing_alpha(wrong)
