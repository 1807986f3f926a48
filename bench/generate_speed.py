"""tx.generate with and without the key/value cache: 48 new tokens for 8 prompts of different lengths.

Greedy, with no eos_id, so every run writes exactly 48 tokens; the script first checks that
both give the same tokens. The two runs are interleaved round by round and timed in CPU
seconds (the machine is shared); prints the median of each and the ratio.

    python bench/generate_speed.py                 # the book's language model size
    python bench/generate_speed.py --config gpt2   # GPT-2 small's sizes, untrained
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import tx

CONFIGS = {"book": lambda: tx.LanguageModelConfig.small(300, dropout=0.0, max_len=128),
           "gpt2": lambda: tx.LanguageModelConfig.gpt2_small(dropout=0.0, max_len=128)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", choices=CONFIGS, default="book")
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = tx.LanguageModel(CONFIGS[args.config]()).eval()
    prompts = tx.generation.left_pad([torch.randint(4, 300, (n,)).tolist() for n in (3, 5, 8, 13, 21, 8, 5, 3)])
    runs = {"cache": dict(use_cache=True), "no cache": dict(use_cache=False)}
    outs = {k: tx.generate(model, prompts, args.tokens, temperature=0, **kw) for k, kw in runs.items()}
    assert torch.equal(outs["cache"], outs["no cache"]), "the cache changed the tokens"
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(args.rounds):
        for k, kw in runs.items():
            t0 = time.process_time()
            tx.generate(model, prompts, args.tokens, temperature=0, **kw)
            times[k].append(time.process_time() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{args.config}: with cache {med['cache']:.3f} s, without {med['no cache']:.3f} s CPU; "
          f"speed-up {med['no cache'] / med['cache']:.2f}x ({torch.get_num_threads()} threads)")


if __name__ == "__main__":
    main()
