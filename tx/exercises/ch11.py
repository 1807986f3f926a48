"""Checkers for chapter 11, exact search, beam search and the length penalty.

Axes: K beam size, V vocabulary size, L generated length. The checkers of beam search build
a small seeded :class:`~tx.model.Transformer` of their own (its weights random, so no answer
can be guessed from the book's corpus) and compare the learner's answer with what
:func:`tx.decoding.beam_search` does on it; the checker of exact search builds small random
models whose every sentence it can enumerate. Each prints one line when the answer is right.
The hints for a wrong beam step are in :mod:`tx.exercises._beam_hints`.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import torch
from torch import Tensor

from ..decoding import beam_search, normalised_score
from ..model import Transformer
from . import CheckFailed, as_number, assert_number, call, part, parts, passed, seeded
from ._beam_hints import Continuation, as_finished, assert_finished, assert_go_on

__all__ = ["brute_force_step", "check_best_sentence", "check_beam_step", "check_crossing_alpha"]

BOS, EOS = 1, 2


def _tiny_model(seed: int) -> Transformer:
    """A small random model in eval mode, built without touching the caller's random state."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return Transformer(src_vocab_size=13, tgt_vocab_size=11, d_model=32, n_heads=4, n_layers=2,
                           d_ff=64, dropout=0.0, max_len=24).eval()


def _sources(seed: int, n: int, length: int = 5) -> Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, 13, (n, length), generator=g)  # [n, S], no special tokens


def _as_ids(got: Any, what: str) -> list[int]:
    if isinstance(got, Tensor):
        got = got.flatten().tolist()
    if not isinstance(got, (list, tuple)) or not all(isinstance(t, int) for t in got):
        raise CheckFailed(f"{what} should return a list of token ids (ints), got {got!r:.80}.")
    return list(got)


# --------------------------------------------------------------------------- exact search


Sentence = tuple[int, ...]  # token ids: bos_id, the generated tokens, eos_id


class _RandomModel:
    """``next_log_probs`` of a small random model: every prefix gets its own seeded distribution [V].

    Its tokens are 0 .. V-1, ``eos_id`` among them; ``bos_id`` is V, so it is never generated.
    After k generated tokens the logit of ``eos_id`` is shifted by ``eos_bias[k]`` (the last
    entry from there on), which makes a case's sentences end early or late. Distributions are
    cached: brute force and the learner's search read the same numbers, and ``asked`` counts the
    prefixes the learner's search asked about. The course's grader keeps it in its own process
    (``by_reference``): the student's search asks it from there, and cannot change the count.
    """

    by_reference = True

    def __init__(self, seed: int, V: int, eos_id: int, max_len: int, sharpness: float,
                 eos_bias: Sequence[float] = (0.0,)):
        self.seed, self.V, self.eos_id, self.bos_id, self.max_len = seed, V, eos_id, V, max_len
        self.sharpness, self.eos_bias = sharpness, tuple(eos_bias)
        self._cache: dict[Sentence, Tensor] = {}
        self.asked: set[Sentence] = set()

    def log_probs(self, prefix: Sentence) -> Tensor:
        """The distribution [V] of the token after ``prefix``, without counting it as asked."""
        if prefix not in self._cache:
            code = self.seed
            for t in prefix:  # one seed per prefix, the same on every run
                code = (code * 1_000_003 + t + 1) % (2**61 - 1)
            logits = torch.randn(self.V, generator=torch.Generator().manual_seed(code)) * self.sharpness  # [V]
            logits[self.eos_id] += self.eos_bias[min(len(prefix) - 1, len(self.eos_bias) - 1)]
            self._cache[prefix] = logits.log_softmax(-1)
        return self._cache[prefix]

    def score(self, sentence: Sentence) -> float:
        """log P(sentence): the sum of the log-probabilities of its generated tokens."""
        return sum(float(self.log_probs(sentence[:t])[sentence[t]]) for t in range(1, len(sentence)))

    def __call__(self, prefix: Any) -> Tensor:
        """What the learner's search calls: checks the prefix, counts it, returns a copy of its distribution."""
        ids = tuple(_as_ids(prefix, "the prefix you pass to next_log_probs"))
        if not ids or ids[0] != self.bos_id:
            raise CheckFailed(f"you called next_log_probs({list(ids)}): a prefix starts with bos_id={self.bos_id}.")
        if self.eos_id in ids[1:]:
            raise CheckFailed(f"you called next_log_probs({list(ids)}), a prefix that holds eos_id={self.eos_id}: "
                              "a sentence ends at eos_id, so nothing comes after it. Record it as a finished "
                              "sentence instead of extending it.")
        if len(ids) - 1 > self.max_len + 2:
            raise CheckFailed(f"you called next_log_probs on a prefix of {len(ids) - 1} tokens after bos_id, with "
                              f"max_len={self.max_len}: a sentence has at most max_len tokens after bos_id, eos_id "
                              "included, so stop extending a prefix when it has no room left for eos_id.")
        if not all(0 <= t < self.V for t in ids[1:]):
            raise CheckFailed(f"you called next_log_probs({list(ids)}), whose tokens are not all ids of the "
                              f"model's V={self.V} tokens (0 to {self.V - 1}).")
        self.asked.add(ids)
        return self.log_probs(ids).clone()


def _every_sentence(model: _RandomModel) -> dict[Sentence, float]:
    """Brute force: every finished sentence of at most max_len generated tokens, with its log-probability.

    Each prefix without eos_id, of 0 to max_len - 1 generated tokens, is asked about once and ends
    one sentence (itself and eos_id); so the dictionary has one entry per prefix asked about.
    """
    found: dict[Sentence, float] = {}
    V, eos = model.V, model.eos_id

    def visit(prefix: Sentence, score: float) -> None:
        lp = model.log_probs(prefix)  # [V]
        found[prefix + (eos,)] = score + float(lp[eos])
        if len(prefix) < model.max_len:  # room for one more token and eos_id
            for t in range(V):
                if t != eos:
                    visit(prefix + (t,), score + float(lp[t]))

    visit((model.bos_id,), 0.0)
    return found


def _greedy(model: _RandomModel) -> Sentence:
    """Greedy decoding's sentence: the argmax at every step, up to eos_id or max_len tokens."""
    ids: Sentence = (model.bos_id,)
    while len(ids) - 1 < model.max_len and (len(ids) == 1 or ids[-1] != model.eos_id):
        ids += (int(model.log_probs(ids).argmax()),)
    return ids


ExactCase = tuple[str, Callable[[], _RandomModel]]


def _exact_cases() -> list[ExactCase]:
    """(description, a fresh model) for every case. Each was chosen for a mistake it shows:

    V=5 and V=6: greedy decoding's sentence is not the best, nor is the one with the best
    log-probability per token. The last: <eos> is unlikely until max_len tokens are written and
    likely after, so a search that ignores max_len finds a longer, more probable sentence.
    """
    return [
        ("a random model of V=5 tokens, eos_id=0, max_len=5",
         lambda: _RandomModel(seed=15, V=5, eos_id=0, max_len=5, sharpness=1.5, eos_bias=(-2.0, -1.0, 0.0))),
        ("a random model of V=6 tokens, eos_id=3, max_len=6",
         lambda: _RandomModel(seed=38, V=6, eos_id=3, max_len=6, sharpness=1.5, eos_bias=(-2.0, -1.0, 0.0))),
        ("a random model of V=6 tokens, eos_id=5, max_len=5, whose sentences would rather be longer",
         lambda: _RandomModel(seed=6, V=6, eos_id=5, max_len=5, sharpness=1.5, eos_bias=(-3.0,) * 5 + (6.0,))),
    ]


def _show(model: _RandomModel, sentence: Sentence) -> str:
    return f"{list(sentence)} (log P = {model.score(sentence):.3f})"


def _check_sentence(what: str, model: _RandomModel, answer: Any, every: dict[Sentence, float]) -> None:
    """CheckFailed, with the mistake named, unless ``answer`` is the most probable finished sentence."""
    if answer is None or (isinstance(answer, (list, tuple)) and not answer):
        root = "" if (model.bos_id,) in model.asked else (
            f" It never asked next_log_probs about [{model.bos_id}], the bare bos_id: the pruning cut the root. "
            "Start the best finished log-probability at -inf, and prune a prefix when its log-probability "
            "is below it, not above.")
        raise CheckFailed(f"{what} returned {answer!r}: no sentence.{root}")
    got = _as_ids(answer, "best_sentence")
    bos, eos, max_len = model.bos_id, model.eos_id, model.max_len
    best = max(every, key=every.get)
    if not got or got[0] != bos:
        raise CheckFailed(f"{what} returned {got}: a sentence starts with bos_id={bos}.")
    if len(got) - 1 > max_len:
        raise CheckFailed(f"{what} returned {got}, {len(got) - 1} tokens after bos_id: a sentence has at most "
                          f"max_len={max_len}, eos_id included. Stop extending a prefix that has no room for eos_id.")
    if eos in got[1:-1]:
        raise CheckFailed(f"{what} returned {got}, which goes on after eos_id={eos}: a sentence ends there.")
    if not all(0 <= t < model.V for t in got[1:]):
        raise CheckFailed(f"{what} returned {got}, whose tokens are not all ids of the model's V={model.V} tokens.")
    sentence = tuple(got)
    if got[-1] != eos:
        if sentence + (eos,) == best:
            raise CheckFailed(f"{what} returned {got}: the best sentence, without its eos_id={eos}. Keep it: the "
                              "sentence's log-probability includes the probability of ending there.")
        raise CheckFailed(
            f"{what} returned {got}, an unfinished prefix: a sentence counts only once it ends with eos_id={eos}. "
            "A prefix scores higher than any sentence that starts with it only because it has not yet paid for "
            f"the token that ends it. The best finished sentence is {_show(model, best)}."
        )
    if sentence == best:
        return
    mine = f"{what} returned {_show(model, sentence)}, but {_show(model, best)} is more probable"
    if sentence == _greedy(model):
        raise CheckFailed(f"{mine}. Yours is greedy decoding's sentence: the first sentence a search finishes "
                          "need not be the best. Go on trying every prefix whose log-probability is still above "
                          "that of the best finished sentence so far.")
    per_token = max(every, key=lambda s: every[s] / (len(s) - 1))
    if sentence == per_token:
        raise CheckFailed(f"{mine}. Yours has the best log-probability per token (the sum divided by its length, "
                          "a length penalty with alpha = 1): rank finished sentences by the sum itself.")
    for t in range(1, len(best)):
        if best[:t] not in model.asked:
            raise CheckFailed(
                f"{mine}. Your search never asked next_log_probs about {list(best[:t])}, a prefix of the best "
                f"sentence, although its log-probability, {model.score(best[:t]):.3f}, is above that of any "
                "sentence you finished: your pruning cut it. Prune a prefix only when its log-probability is "
                "below that of the best finished sentence found so far."
            )
    raise CheckFailed(f"{mine}: return the finished sentence with the highest log-probability.")


@parts("a model of 5 tokens", "a model of 6 tokens", "sentences that would rather be longer",
       "the search prunes")
def check_best_sentence(fn: Callable[[Callable[[list[int]], Tensor], int, int, int], Sequence[int]]) -> None:
    """``fn(next_log_probs, bos_id, eos_id, max_len) -> ids``: the most probable finished sentence, by exact search.

    ``next_log_probs(prefix)`` returns the log-probabilities [V] of the token after ``prefix``
    (a list of ids starting with ``bos_id``). The answer starts with ``bos_id``, ends with
    ``eos_id`` and has at most ``max_len`` tokens after ``bos_id``. Each case's random model is
    searched by brute force too; the prefixes the learner's search asked about are counted.
    """
    asked = every_prefix = 0
    names = ("a model of 5 tokens", "a model of 6 tokens", "sentences that would rather be longer")
    for name, (description, new_model) in zip(names, _exact_cases()):
        with part(name):
            model = new_model()
            every = _every_sentence(model)  # one sentence per prefix brute force asks about
            got = call(fn, model, model.bos_id, model.eos_id, model.max_len)
            _check_sentence(f"best_sentence on {description}", model, got, every)
            asked += len(model.asked)
            every_prefix += len(every)
    with part("the search prunes"):
        if asked >= every_prefix:
            raise CheckFailed(
                f"your search finds the best sentences, but it asked next_log_probs about {asked} prefixes, as many "
                "as trying every sentence does: it never pruned. Skip a prefix as soon as its log-probability is "
                "below that of the best finished sentence found so far: nothing that extends it can do better."
            )
    passed(f"on {len(_exact_cases())} random models your search found the most probable sentence, asking "
           f"next_log_probs about {asked} prefixes where trying every sentence asks about {every_prefix}: the "
           f"pruning spared {every_prefix - asked} ({1 - asked / every_prefix:.0%}).")


# --------------------------------------------------------------------------- one beam step


def brute_force_step(scores: Tensor, log_probs: Tensor,
                     eos_id: int) -> tuple[list[Continuation], list[tuple[int, float]]]:
    """One beam-search step by ranking every continuation of scores [K] and log_probs [K, V].

    Returns the K best continuations that do not end with ``eos_id`` (they go on), and the
    ``(parent, score)`` of those among the K best of all that do (they finish), best first.
    """
    K, V = log_probs.shape
    everything = [(k, v, float(scores[k] + log_probs[k, v])) for k in range(K) for v in range(V)]
    everything.sort(key=lambda c: -c[2])
    go_on = [c for c in everything if c[1] != eos_id][:K]
    finished = [(p, s) for p, t, s in everything[:K] if t == eos_id]
    return go_on, finished


def _ranked_tokens(scores: Tensor, log_probs: Tensor) -> list[int]:
    """The token of every continuation, best first."""
    V = log_probs.size(1)
    return [int(i) % V for i in (scores[:, None] + log_probs).flatten().argsort(descending=True)]


def _real_step(K: int) -> tuple[str, Tensor, Tensor, int]:
    """Step 2 of tx.beam_search on a small random model, with an <eos> id that makes a hypothesis finish there.

    The checker's answer for this step must be what the search did: the trace lists the kept
    and the finished candidates of step 2, which brute force must agree with.
    """
    # Not seeded(): for about one model in ten, no <eos> id finishes a hypothesis at step 2.
    model, src = _tiny_model(12), _sources(12, 1)
    for eos in range(2, 11):
        trace: list = []
        beam_search(model, src, beam_size=K, max_len=4, bos_id=BOS, eos_id=eos, trace=trace)
        step2 = trace[2] if len(trace) > 2 else []
        if not any(n["finished"] for n in step2):
            continue  # the first id with a hypothesis finishing at step 2
        alive = [n for n in trace[1] if not n["finished"] and not n["pruned"]]
        prefixes = torch.tensor([[BOS, n["token"]] for n in alive])  # [K, 2]
        scores = torch.tensor([n["score"] for n in alive])  # [K]
        with torch.no_grad():
            log_probs = model(src.expand(len(alive), -1), prefixes)[:, -1].log_softmax(-1)  # [K, V]
        kept = [(n["parent"], n["token"], n["score"]) for n in step2 if not n["finished"] and not n["pruned"]]
        ended = [(n["parent"], n["score"]) for n in step2 if n["finished"]]
        go_on, finished = brute_force_step(scores, log_probs, eos)
        same = [c[:2] for c in go_on] == [c[:2] for c in kept] and [f[0] for f in finished] == [e[0] for e in ended]
        if not same or any(abs(a[-1] - b[-1]) > 1e-4 for a, b in zip(go_on + finished, kept + ended)):
            raise RuntimeError(f"tx.beam_search kept {kept} and finished {ended}, but brute force finds {go_on} "
                               f"and {finished}: please report this.")
        return f"step 2 of tx.beam_search (K={K}, V=11, eos_id={eos})", scores, log_probs, eos
    raise RuntimeError("no <eos> id makes the small model finish a hypothesis at step 2: please report this.")


BeamCase = tuple[str, Tensor, Tensor, int]  # (description, scores [K], log_probs [K, V], eos_id)


def _beam_step_cases() -> dict[str, list[BeamCase]]:
    """The cases of each graded part, by name; the last from a real tx.beam_search step."""
    g = torch.Generator().manual_seed(seeded(12))
    # Ranked: (0, 0), (1, 0), (1, 1), (0, 1), ... with tokens 2 and 3 far below.
    scores = torch.tensor([-0.5, -1.0])
    log_probs = torch.tensor([[-0.1, -2.3, -3.0, -4.0], [-0.2, -0.9, -5.0, -3.1]]).log_softmax(-1)
    cases = {
        "no <eos> near the top": [("K=2, V=4, small numbers, eos_id=3 (no <eos> near the top)", scores, log_probs, 3)],
        "continuations that end": [
            ("the same numbers with eos_id=1 (an <eos> just below the 2 best)", scores, log_probs, 1),
            ("the same numbers with eos_id=0 (both of the 2 best end)", scores, log_probs, 0),
        ],
    }
    scores, log_probs = -torch.rand(3, generator=g) * 3, torch.randn(3, 7, generator=g).log_softmax(-1)
    eos = _ranked_tokens(scores, log_probs)[0]
    cases["continuations that end"].append(
        (f"K=3, V=7, random, eos_id={eos} (the best continuation ends)", scores, log_probs, eos))
    # The first step: only beam 0 is alive, the others hold -inf and must never be chosen.
    scores = torch.tensor([0.0, float("-inf"), float("-inf")])
    log_probs = torch.randn(3, 6, generator=g).log_softmax(-1)
    eos = _ranked_tokens(scores, log_probs)[1]
    cases["the first step, dead beams at -inf"] = [(f"first step, scores [0, -inf, -inf], eos_id={eos}", scores,
                                                    log_probs, eos)]
    cases["a step of tx.beam_search"] = [_real_step(3)]
    return cases


@parts("no <eos> near the top", "continuations that end", "the first step, dead beams at -inf",
       "a step of tx.beam_search", drawn=True)
def check_beam_step(fn: Callable[[Tensor, Tensor, int], tuple[Tensor, Tensor, Tensor, list]]) -> None:
    """``fn(scores [K], log_probs [K, V], eos_id) -> (parent [K], token [K], score [K], finished)``: the K best
    continuations that do not end with ``eos_id``, best first, and the (parent, score) of those among the K best
    of all that do."""
    for name, cases in _beam_step_cases().items():
        with part(name):
            for case in cases:
                _check_beam_step(fn, *case)
    passed("your step keeps the same K beams and finishes the same hypotheses as a ranking of every "
           "continuation and as tx.beam_search.")


def _check_beam_step(fn: Callable[..., Any], description: str, scores: Tensor, log_probs: Tensor,
                     eos_id: int) -> None:
    K = scores.size(0)
    got = call(fn, scores.clone(), log_probs.clone(), eos_id)
    if not (isinstance(got, (tuple, list)) and len(got) == 4):
        raise CheckFailed("beam_step should return four things: parent, token and score (tensors [K]) and "
                          f"finished (a list of (parent, score) pairs); got {type(got).__name__} {got!r:.80}.")
    try:
        parent, token, score = (torch.as_tensor(x) for x in got[:3])
    except (TypeError, ValueError, RuntimeError):
        raise CheckFailed(f"parent, token and score should be three tensors, got {got[:3]!r:.120}.") from None
    for name, x in (("parent", parent), ("token", token), ("score", score)):
        if x.dim() == 1 and x.size(0) < K:
            raise CheckFailed(
                f"{description}: {name} has {x.size(0)} entries; {K} beams go on even when some of the best "
                "continuations end. Look further down the ranking: how far must you look to be sure of K?"
            )
        if x.shape != (K,):
            raise CheckFailed(f"{description}: {name} has shape {tuple(x.shape)}; expected ({K},), one entry per "
                              "beam that goes on.")
    for name, x in (("parent", parent), ("token", token)):
        if x.is_floating_point() or x.dtype == torch.bool:
            raise CheckFailed(
                f"{description}: {name} has dtype {x.dtype}; it holds indices, so it must be an integer "
                "tensor (// and % of topk's indices give torch.long)."
            )
    if not bool(torch.isfinite(score).all()):
        raise CheckFailed(
            f"{description}: your scores {score.tolist()} are not all finite. Only the best continuations "
            "go on, and a beam of score -inf is never among them while finite ones remain."
        )
    finished = as_finished(got[3], description)
    go_on, expected_finished = brute_force_step(scores, log_probs, eos_id)
    assert_go_on(description, scores, eos_id, list(zip(parent.tolist(), token.tolist(), score.tolist())), go_on)
    everything = [(k, v, float(scores[k] + log_probs[k, v])) for k in range(K) for v in range(log_probs.size(1))]
    assert_finished(description, K, eos_id, everything, finished, expected_finished)


# --------------------------------------------------------------------------- length penalty


def _crossing(a: Tensor, b: Tensor) -> float:
    """The alpha at which ``a`` [L_a] and ``b`` [L_b] score the same under the power penalty.

    sum_a / L_a ** alpha = sum_b / L_b ** alpha, so (L_b / L_a) ** alpha = sum_b / sum_a, a
    ratio of two negative sums; above this alpha the longer hypothesis scores higher.
    """
    return math.log(float(b.sum()) / float(a.sum())) / math.log(len(b) / len(a))


def _crossing_cases() -> dict[str, list[tuple[str, Tensor, Tensor]]]:
    """Each graded part's (description, a, b): the chapter's small numbers, hypotheses tx.beam_search found,
    random ones."""
    short, long = torch.tensor([-0.5, -0.6]), torch.full((5,), -0.3)
    cases = {"the chapter's two hypotheses": [("the chapter's short and long hypotheses", short, long),
                                              ("the same two, long first", long, short)]}
    # Not seeded(): this model's hypotheses end after 1 to 6 tokens, so three pairs differ in length.
    model, src = _tiny_model(1), _sources(1, 1)
    found = beam_search(model, src, beam_size=4, max_len=6, bos_id=BOS, eos_id=EOS, n_best=4)[0]
    hypotheses = []
    for tokens, _ in found:
        with torch.no_grad():
            lp = model(src, tokens[None, :-1])[0].log_softmax(-1)  # [L, V]
        hypotheses.append(lp.gather(1, tokens[1:, None])[:, 0])  # [L]: one per generated token
    pairs = [(x, y) for i, x in enumerate(hypotheses) for y in hypotheses[i + 1:] if len(x) != len(y)]
    cases["hypotheses tx.beam_search found"] = [
        (f"two hypotheses tx.beam_search found, of L={len(x)} and L={len(y)} tokens", x, y) for x, y in pairs[:3]]
    g = torch.Generator().manual_seed(seeded(11))  # hypotheses the learner never sees
    cases["random hypotheses"] = []
    for _ in range(3):
        L_a, L_b = (torch.randperm(8, generator=g)[:2] + 1).tolist()  # two different lengths
        a, b = (-(torch.rand(L, generator=g) * 2 + 0.05) for L in (L_a, L_b))
        cases["random hypotheses"].append((f"random hypotheses of L={L_a} and L={L_b} tokens", a, b))
    return cases


def _crossing_hint(got: float, a: Tensor, b: Tensor, expected: float, description: str) -> None:
    """CheckFailed naming the mistake when ``got`` is a familiar wrong alpha, else saying what tx scores there."""
    if abs(got - expected) <= 1e-4:
        return
    sum_a, sum_b, L_a, L_b = float(a.sum()), float(b.sum()), len(a), len(b)
    wrong = [
        (expected - 1, "yours is 1 less than it should be: the penalty divides the sum of the log-probs, not their "
                       "mean, by L ** alpha."),
        (-expected, "the sign is wrong: one of your two ratios is upside down. If (L_b / L_a) ** alpha is on one side, "
                    "sum_b / sum_a is on the other."),
    ]
    if min(L_a, L_b) > 1:
        wrong.append((math.log(sum_b / sum_a) / math.log((L_b - 1) / (L_a - 1)),
                      "L counts every generated token, <eos> included: use len(a) and len(b)."))
    for value, hint in wrong:
        if abs(got - value) <= 1e-4:
            raise CheckFailed(f"for {description} you gave alpha = {got:.6g}, expected {expected:.6g}: {hint}")
    score_a, score_b = (normalised_score(s, L, got) for s, L in ((sum_a, L_a), (sum_b, L_b)))
    raise CheckFailed(
        f"for {description} you gave alpha = {got:.6g}, expected {expected:.6g}: at your alpha "
        f"tx.decoding.normalised_score gives them {score_a:.6g} (L={L_a}) and {score_b:.6g} (L={L_b}), "
        "which should be equal."
    )


@parts("the chapter's two hypotheses", "hypotheses tx.beam_search found", "random hypotheses", drawn=True)
def check_crossing_alpha(fn: Callable[[Tensor, Tensor], float]) -> None:
    """``fn(a [L_a], b [L_b]) -> float``: the alpha at which the two score the same, sum / L ** alpha."""
    cases = _crossing_cases()
    for name, part_cases in cases.items():
        with part(name):
            for description, a, b in part_cases:
                _check_crossing(fn, description, a, b)
    passed(f"on {sum(map(len, cases.values()))} pairs of hypotheses tx.decoding.normalised_score gives both the "
           "same score at your alpha.")


def _check_crossing(fn: Callable[[Tensor, Tensor], float], description: str, a: Tensor, b: Tensor) -> None:
    expected = _crossing(a, b)
    # the reference is tx's: at it, tx.decoding.normalised_score gives the two one score
    assert abs(normalised_score(float(a.sum()), len(a), expected)
               - normalised_score(float(b.sum()), len(b), expected)) < 1e-6
    got = call(fn, a.clone(), b.clone())
    if isinstance(got, (int, float, Tensor)) and (not isinstance(got, Tensor) or got.numel() == 1) \
            and math.isnan(float(got)):
        raise CheckFailed(f"for {description} you returned nan: was it the log of a negative number? Both sums "
                          "are negative, but their ratio is positive.")
    what = f"crossing_alpha for {description}"
    _crossing_hint(as_number(got, what), a, b, expected, description)
    assert_number(got, expected, what, tol=1e-4)
