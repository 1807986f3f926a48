"""Turning a trained model into sentences: greedy decoding and beam search.

Axes: B batch (source sentences), K beam size, L generated length, S source length,
V target vocabulary size, D d_model.

Both work with any model that offers ``encode(src)``, ``decode(memory, src, tgt, cache)``,
``new_cache(max_len)`` and ``config.pad_id``, as :class:`~tx.model.Transformer` does.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

import torch
from torch import Tensor, nn

from .checks import check_float, check_int, check_tensor, check_tokens, guarded

__all__ = ["greedy_decode", "beam_search", "normalised_score", "Hypothesis", "output_limit", "LENGTH_MARGIN"]

#: Tokens a translation may write beyond its source's length (:func:`output_limit`). The paper
#: stops at "input length + 50" (Vaswani et al., 2017, section 6.1) for news sentences of dozens
#: of tokens; the book's sentences are a few tokens long, and no reference in either corpus (the
#: grammar's, or Tatoeba's for chapter 12) is more than 8 tokens longer than its French.
LENGTH_MARGIN = 10


@contextmanager
def _evaluating(model: nn.Module) -> Iterator[None]:
    """Eval mode and inference mode inside (no autograd bookkeeping at all), the caller's mode restored after."""
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            yield
    finally:
        model.train(was_training)


def _check_lengths(model: nn.Module, max_len: int) -> None:
    if not all(hasattr(model, name) for name in ("encode", "decode", "new_cache", "config")):
        raise TypeError(f"model must offer encode, decode, new_cache and config, as tx.Transformer does; got {type(model).__name__}.")
    check_int("max_len", max_len)
    if max_len < 1:
        raise ValueError(f"max_len must be at least 1 (tokens to generate after <bos>), got {max_len}.")
    if max_len > model.config.max_len:
        raise ValueError(
            f"max_len={max_len} tokens exceeds the model's max_len={model.config.max_len} positions; "
            "ask for fewer tokens or build the model with a larger max_len."
        )


def _check_ids(model: nn.Module, src: Tensor, bos_id: int, eos_id: int) -> None:
    """src is a [B, S] tensor of source ids; bos_id and eos_id are ids of the model's target vocabulary (eos_id -1: none)."""
    check_tensor("src", src, dims=2)
    vocab_size = getattr(model.config, "tgt_vocab_size", None)
    high = None if vocab_size is None else vocab_size - 1
    check_int("bos_id (an id of the target vocabulary)", bos_id, low=0, high=high)
    check_int("eos_id (an id of the target vocabulary, or -1 to never stop)", eos_id, low=-1, high=high)
    src_vocab = getattr(model.config, "src_vocab_size", None)
    if src_vocab is not None:  # the ids model.encode would check, checked once for the whole decoding
        check_tokens(src, src_vocab, model.config.max_len, "src")


def _check_greedy(
    model: nn.Module, src: Tensor, max_len: int, bos_id: int, eos_id: int, use_cache: bool = True
) -> None:
    _check_lengths(model, max_len)
    _check_ids(model, src, bos_id, eos_id)


def _check_beam(
    model: nn.Module, src: Tensor, beam_size: int, max_len: int, bos_id: int, eos_id: int,
    length_penalty: float = 0.0, n_best: int = 1, trace: list | None = None, penalty_form: str = "power",
) -> None:
    _check_penalty(0.0, 1, length_penalty, penalty_form)
    _check_lengths(model, max_len)
    _check_ids(model, src, bos_id, eos_id)
    _check_beams(beam_size, n_best, length_penalty, trace)


def _check_beams(beam_size: int, n_best: int, length_penalty: float, trace: list | None) -> None:
    check_int("beam_size", beam_size, low=1)
    check_int("n_best (hypotheses returned, at most beam_size)", n_best, low=1, high=beam_size)
    check_float("length_penalty", length_penalty)
    if trace is not None and not isinstance(trace, list):
        raise TypeError(f"trace must be a list to fill, or None, got {type(trace).__name__}.")


@guarded(_check_greedy)
def greedy_decode(
    model: nn.Module,
    src: Tensor,
    max_len: int,
    bos_id: int,
    eos_id: int,
    use_cache: bool = True,
) -> Tensor:
    """Pick the most probable token at every step. src [B, S] -> tokens [B, L]
    with L <= 1 + max_len.

    Every row starts with ``bos_id``; ``max_len`` counts the tokens generated
    after it, <eos> included. Rows that have finished are padded with the
    model's pad id, and the loop stops once every row has (``eos_id=-1``
    matches no token: every row runs to ``max_len``). ``use_cache=False``
    re-runs the decoder over the whole prefix at each step: slower, same
    tokens.
    """
    pad_id = model.config.pad_id
    with _evaluating(model):
        memory = model.encode(src)  # [B, S, D]
        B = src.size(0)
        # [B, 1]
        ys = torch.full((B, 1), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        cache = model.new_cache(max_len) if use_cache else None
        for _ in range(max_len):
            new = ys[:, -1:] if use_cache else ys
            logits = model.decode(memory, src, new, cache)[:, -1]  # [B, V]
            token = logits.argmax(dim=-1).masked_fill(done, pad_id)  # [B]
            ys = torch.cat([ys, token[:, None]], dim=1)  # [B, L+1]
            done |= token == eos_id
            if bool(done.all()):
                break
    # a normal tensor: inference-mode tensors cannot be fed back with
    # gradients on
    return ys.clone()


def output_limit(src_len: int, max_len: int, margin: int | None = LENGTH_MARGIN) -> int:
    """The most tokens to write after <bos> for a source of ``src_len`` tokens (its <eos> included).

    ``src_len + margin``, as the paper's "input length + 50", and never more than ``max_len``
    (the model's positions less <bos>); ``margin=None`` gives ``max_len`` whatever the source.
    A model that meets a sentence it cannot read may never write <eos>: the limit keeps what it
    writes instead about as long as what it read.
    """
    check_int("src_len", src_len, low=1)
    check_int("max_len", max_len, low=1)
    if margin is None:
        return max_len
    check_int("margin", margin, low=0)
    return min(max_len, src_len + margin)


@dataclass
class Hypothesis:
    """A finished beam-search hypothesis: its tokens (starting with <bos>) and its score."""

    tokens: Tensor  #: [L] ids, <bos> first and <eos> last
    score: float  #: what the beam ranked it by: log_prob over the length penalty
    log_prob: float = field(default=0.0)  #: the sum of its tokens' log-probabilities


PENALTY_FORMS = ("power", "gnmt")  # the two length penalties beam_search offers


def _check_penalty(log_prob: float, length: int, length_penalty: float, penalty_form: str = "power") -> None:
    if penalty_form not in PENALTY_FORMS:
        raise ValueError(f"penalty_form must be one of {PENALTY_FORMS}, got {penalty_form!r}.")


@guarded(_check_penalty)
def normalised_score(
    log_prob: float,
    length: int,
    length_penalty: float,
    penalty_form: str = "power",
) -> float:
    """score = sum of token log-probs / lp(length), with lp chosen by
    ``penalty_form``.

    ``"power"``: lp(L) = L ** length_penalty, the plain power of the length.
    ``"gnmt"``: lp(L) = ((5 + L) / 6) ** length_penalty, the penalty of Wu et
    al. (2016), which the Transformer paper uses with length_penalty = 0.6.
    Both are 1 when length_penalty is 0 (no normalisation) and grow with L, so
    both favour longer hypotheses as length_penalty grows; "gnmt" grows more
    slowly for short sentences.
    """
    if penalty_form == "power":
        return log_prob / length**length_penalty
    return log_prob / ((5 + length) / 6) ** length_penalty  # "gnmt"


def _best_possible(
    log_prob: float, length: int, max_len: int, length_penalty: float, penalty_form: str = "power"
) -> float:
    """An upper bound on the score any continuation of an unfinished hypothesis can reach.

    Adding tokens only lowers the summed log-probability, so the best case divides the
    current sum by the most favourable length still reachable (both penalty forms grow with L).
    """
    best_len = max_len if length_penalty > 0 else length + 1
    return normalised_score(log_prob, best_len, length_penalty, penalty_form)


@guarded(_check_beam)
def beam_search(
    model: nn.Module,
    src: Tensor,
    beam_size: int,
    max_len: int,
    bos_id: int,
    eos_id: int,
    length_penalty: float = 0.0,
    n_best: int = 1,
    trace: list[list[dict[str, Any]]] | None = None,
    penalty_form: str = "power",
) -> list[list[tuple[Tensor, float]]]:
    """Keep the ``beam_size`` most probable prefixes at every step, batched
    over sentences and beams.

    src [B, S]. Returns, per source sentence, a list of ``n_best``
    ``(tokens, score)`` pairs, best first; tokens is a 1-D LongTensor
    starting with ``bos_id``; score = sum of token log-probs / len **
    ``length_penalty``, len counting the generated tokens (<eos> included).
    A hypothesis ends at <eos> or after ``max_len`` tokens. ``beam_size=1``
    gives the same tokens as :func:`greedy_decode`. Pass a list as ``trace``
    to receive, for the first sentence, every step's kept and pruned
    candidates (for :func:`tx.viz.beam_search_tree`); the beams still alive
    at the step where the search stops are marked ``"stopped"``.
    ``penalty_form="gnmt"`` divides by ((5 + len) / 6) ** ``length_penalty``
    instead, the paper's penalty (see :func:`normalised_score`).
    """
    B, K = src.size(0), beam_size
    with _evaluating(model):
        memory = model.encode(src).repeat_interleave(K, dim=0)  # [B*K, S, D]
        src_k = src.repeat_interleave(K, dim=0)  # [B*K, S]
        cache = model.new_cache(max_len)
        # [B*K, 1]
        tokens = torch.full(
            (B * K, 1), bos_id, dtype=torch.long, device=src.device
        )
        # Only beam 0 is alive at the start; the others would duplicate it.
        # [B, K] summed log-probs
        scores = torch.full((B, K), float("-inf"), device=src.device)
        scores[:, 0] = 0.0
        finished: list[list[Hypothesis]] = [[] for _ in range(B)]
        active = [True] * B
        if trace is not None:
            trace.append(
                [
                    {
                        "parent": None,
                        "token": bos_id,
                        "score": 0.0,
                        "finished": False,
                    }
                ]
            )
        for step in range(1, max_len + 1):
            # [B*K, V]
            logits = model.decode(memory, src_k, tokens[:, -1:], cache)[:, -1]
            log_probs = logits.float().log_softmax(dim=-1)
            V = log_probs.size(-1)
            # [B, K, V]
            candidates = scores[:, :, None] + log_probs.view(B, K, V)
            # 2K candidates leave K to continue even if up to K of them end
            # with <eos>.
            # [B, 2K]
            top, flat = candidates.view(B, K * V).topk(
                min(2 * K, K * V), dim=-1
            )
            parent, token = flat // V, flat % V  # [B, 2K]
            keep_parent, keep_token, keep_score = _select(
                tokens.view(B, K, -1),
                top,
                parent,
                token,
                finished,
                active,
                step,
                max_len,
                eos_id,
                (length_penalty, penalty_form),
                n_best,
                trace,
            )
            if not any(active):
                break
            scores = keep_score  # [B, K]
            # [B*K]
            rows = (
                torch.arange(B, device=src.device)[:, None] * K + keep_parent
            ).view(-1)
            cache.reorder(rows)
            # [B*K, step+1]
            tokens = torch.cat([tokens[rows], keep_token.view(-1, 1)], dim=1)
    return [
        [
            (h.tokens.clone(), h.score)
            for h in sorted(hyps, key=lambda h: -h.score)[:n_best]
        ]
        for hyps in finished
    ]


def _select(
    prefixes: Tensor, top: Tensor, parent: Tensor, token: Tensor, finished: list[list[Hypothesis]],
    active: list[bool], step: int, max_len: int, eos_id: int, penalty: tuple[float, str], n_best: int,
    trace: list | None,
) -> tuple[Tensor, Tensor, Tensor]:
    """One step's bookkeeping: candidates that end go to ``finished``; the best K others continue.

    prefixes [B, K, step]; top, parent, token [B, 2K], best first. Returns the kept beams'
    parent index, new token and summed log-prob, each [B, K] (-inf marks an empty beam).
    ``penalty`` is ``(length_penalty, penalty_form)``.
    """
    B, K = prefixes.shape[:2]
    keep_parent = torch.zeros(B, K, dtype=torch.long)
    keep_token = torch.zeros(B, K, dtype=torch.long)
    keep_score = torch.full((B, K), float("-inf"))
    for b, row in enumerate(zip(top.tolist(), parent.tolist(), token.tolist())):
        if not active[b]:
            continue
        kept, ended, pruned = [], [], []
        for rank, (lp, p, t) in enumerate(zip(*row)):
            if lp == float("-inf"):
                break
            ends = t == eos_id or step == max_len
            if ends and rank >= K:
                # Only a top-K candidate may finish: otherwise a beam of one could stop on an
                # <eos> that greedy decoding never picked, and beam_size=1 would not be greedy.
                pruned.append((p, t, lp))
            elif ends:
                seq = torch.cat([prefixes[b, p].cpu(), torch.tensor([t])])
                finished[b].append(Hypothesis(seq, normalised_score(lp, step, *penalty), lp))
                ended.append((p, t, lp))
            elif len(kept) < K:
                kept.append((p, t, lp))
            else:
                pruned.append((p, t, lp))
        for i, (p, t, lp) in enumerate(kept):
            keep_parent[b, i], keep_token[b, i], keep_score[b, i] = p, t, lp
        active[b] = _still_searching(finished[b], keep_score[b], step, max_len, penalty, n_best)
        if trace is not None and b == 0:
            trace.append(_trace_nodes(kept, ended, pruned, stopped=not active[b]))
    return keep_parent.to(top.device), keep_token.to(top.device), keep_score.to(top.device)


def _trace_nodes(kept: list, ended: list, pruned: list, stopped: bool = False) -> list[dict[str, Any]]:
    """One step of the trace: kept beams first (their index is the next step's ``parent``); with
    ``stopped`` (the search ends at this step) the kept beams are marked so: never extended."""

    def node(p: int, t: int, lp: float, finished: bool = False, is_pruned: bool = False) -> dict[str, Any]:
        return {"parent": p, "token": t, "score": lp, "finished": finished, "pruned": is_pruned}

    return (
        [{**node(*c), "stopped": True} if stopped else node(*c) for c in kept]
        + [node(*c, finished=True) for c in ended]
        + [node(*c, is_pruned=True) for c in pruned]
    )


def _still_searching(
    hyps: list[Hypothesis], alive: Tensor, step: int, max_len: int, penalty: tuple[float, str], n_best: int
) -> bool:
    """False once no live beam can still beat the n_best-th finished hypothesis."""
    best_alive = float(alive.max())
    if step >= max_len or best_alive == float("-inf"):
        return False
    if len(hyps) < n_best:
        return True
    nth_best = sorted((h.score for h in hyps), reverse=True)[n_best - 1]
    return _best_possible(best_alive, step, max_len, *penalty) > nth_best
