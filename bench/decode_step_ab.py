"""One cached decoding step of this tx against another commit's tx, in one process: is a change's cost measurable?

The other commit's ``tx`` is extracted with ``git archive`` into a temporary folder as the
package ``txbase`` (tx imports itself relatively, so the copy runs as it is). Both models get the
same weights and the same 30 cached positions (the setting of ``decode_step_overhead.py``, batch
8, the book's size), and give the same logits (checked). Three measures, from noisiest to
steadiest on a shared machine:

- one step's CPU time of this process (not wall-clock), both versions timed in alternating
  rounds; the median of the rounds' ratios, with its quartiles. A tx with ``tx.checks.guarded``
  is timed as its decoding loops run a step (inside one checked call: ``checked_once``), and
  also called directly, when ``decode`` checks its arguments first;
- the checks a direct call runs (token ids, the memory, the cache), alone, best of many repeats;
- the Python function calls of one step, counted by cProfile: a count, no timing at all.

    python bench/decode_step_ab.py --baseline 58fb427
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import torch

import tx

ROOT = Path(__file__).resolve().parents[1]


def import_baseline(rev: str, folder: Path):
    """The tx of commit ``rev`` as the module ``txbase``."""
    archive = subprocess.run(["git", "archive", rev, "tx"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    (folder / "tx").rename(folder / "txbase")
    sys.path.insert(0, str(folder))
    import txbase

    return txbase


def cached_step(
    model, src: torch.Tensor, tokens: torch.Tensor, t: int, in_loop: bool = False
) -> tuple[Callable[[], torch.Tensor], tuple]:
    """step() decodes one more token at position t, the cache rewound before each call; and (memory, cache).

    ``in_loop``: the step as greedy_decode and beam_search run it, inside their one checked call.
    """
    memory = model.encode(src)
    cache = model.new_cache(64)
    for _ in range(t):
        model.decode(memory, src, tokens, cache)

    def step() -> torch.Tensor:
        for c in cache.self_attn:
            c.length = t
        if in_loop:
            with tx.checks.checked_once():
                return model.decode(memory, src, tokens, cache)
        return model.decode(memory, src, tokens, cache)

    return step, (memory, cache)


def best_of(runs: dict[str, Callable[[], object]], number: int, repeat: int, clock=time.perf_counter) -> tuple[dict, list]:
    """Best time a call of each run over ``repeat`` alternating rounds of ``number`` calls, and each round's new/base ratio."""
    best, ratios = dict.fromkeys(runs, float("inf")), []
    for r in range(repeat):
        got = {}
        for name in list(runs) if r % 2 == 0 else list(runs)[::-1]:  # alternating order
            t0 = clock()
            for _ in range(number):
                runs[name]()
            got[name] = (clock() - t0) / number
            best[name] = min(best[name], got[name])
        ratios.append(got["new"] / got["base"])
    return best, ratios


def ab_arguments(steps: int, rounds: int) -> argparse.Namespace:
    """--baseline REV, --steps and --rounds, the command line of every A/B script here."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", required=True, help="the commit whose tx to compare with")
    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--rounds", type=int, default=rounds)
    return parser.parse_args()


def twin_models(txbase, **sizes):
    """A seeded tx.Transformer of ``sizes`` and the baseline's, holding the same weights: (new, base)."""
    torch.manual_seed(0)
    new = tx.Transformer(**sizes)
    base = txbase.Transformer(**sizes)
    base.load_state_dict(new.state_dict())
    return new, base


def main() -> None:
    args = ab_arguments(steps=300, rounds=30)
    with tempfile.TemporaryDirectory() as folder:
        txbase = import_baseline(args.baseline, Path(folder))
        vocab, B, t = 300, 8, 30
        new, base = twin_models(txbase, src_vocab_size=vocab, tgt_vocab_size=vocab, d_model=128, n_heads=4,
                                n_layers=2, d_ff=256, dropout=0.0, max_len=65)
        new, base = new.eval(), base.eval()
        src, tokens = torch.randint(4, vocab, (B, 20)), torch.randint(4, vocab, (B, 1))
        with torch.inference_mode():
            (base_step, _), (new_step, (memory, cache)) = (cached_step(m, src, tokens, t) for m in (base, new))
            loop_step, _ = cached_step(new, src, tokens, t, in_loop=True)
            torch.testing.assert_close(new_step(), base_step())
            torch.testing.assert_close(loop_step(), base_step())
            steps = {"base": base_step, "new": loop_step, "new, called directly": new_step}
            calls = {}
            for name, step in steps.items():
                profile = cProfile.Profile()
                profile.runcall(step)
                calls[name] = pstats.Stats(profile).total_calls
            cpu, ratios = best_of(steps, args.steps, args.rounds, time.process_time)
            base_checks = txbase.model.check_tokens  # there it lived in tx.model
            _, (base_memory, base_cache) = cached_step(base, src, tokens, t)
            checks = {  # what a direct call of decode checks before any arithmetic, in each version
                "base": lambda: (base_checks(tokens, vocab, 65, "tgt", t),
                                 base._check_memory(base_memory, src, tokens, base_cache)),
                "new": lambda: tx.model._check_decode(new, memory, src, tokens, cache),
            }
            check_best, _ = best_of(checks, 200, args.rounds)
    q = statistics.quantiles(ratios, n=4)
    print(f"baseline {args.baseline}; threads={torch.get_num_threads()}; batch {B}, {t} cached positions")
    print(f"Python function calls in one step: base {calls['base']}, new {calls['new']} "
          f"({calls['new, called directly']} called directly)")
    print(f"one step, CPU time, best: base {cpu['base'] * 1e6:.1f} us, new {cpu['new'] * 1e6:.1f} us "
          f"({cpu['new, called directly'] * 1e6:.1f} us called directly); "
          f"new/base by round: median {statistics.median(ratios):.3f} (quartiles {q[0]:.3f} to {q[2]:.3f})")
    print(f"the step's checks alone, best: base {check_best['base'] * 1e6:.2f} us, new {check_best['new'] * 1e6:.2f} us")


if __name__ == "__main__":
    main()
