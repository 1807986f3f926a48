"""Greedy decoding with and without the key/value cache: 64 tokens for a batch of 8.

Without the cache every step re-runs the decoder over the whole prefix; with it, a step
projects one new token and reads earlier keys/values from preallocated buffers, and the
cross-attention keys/values are computed once per sentence. An untrained model never
emits <eos> reliably, so eos_id is -1, which matches no token: every run decodes
exactly 64 tokens. Runs are interleaved; prints the median time of each and the ratio.

    python bench/decode_speed.py               # the book's model size
    python bench/decode_speed.py --config base
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import tx

CONFIGS = {
    "book": dict(d_model=128, n_heads=4, n_layers=2, d_ff=256),
    "base": dict(d_model=512, n_heads=8, n_layers=6, d_ff=2048),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", choices=CONFIGS, default="book")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(0)
    vocab = 300
    model = tx.Transformer(src_vocab_size=vocab, tgt_vocab_size=vocab, dropout=0.0, max_len=args.tokens + 1, **CONFIGS[args.config]).eval()
    src = torch.randint(4, vocab, (args.batch, 20))
    never = -1  # eos_id=-1 matches no token: no row ever ends early
    out = {}
    for use_cache in (True, False):  # same tokens both ways
        out[use_cache] = tx.greedy_decode(model, src, args.tokens, 1, never, use_cache=use_cache)
    assert torch.equal(out[True], out[False]) and out[True].size(1) == args.tokens + 1
    times = {True: [], False: []}
    for _ in range(args.rounds):
        for use_cache in (True, False):
            t0 = time.perf_counter()
            tx.greedy_decode(model, src, args.tokens, 1, never, use_cache=use_cache)
            times[use_cache].append(time.perf_counter() - t0)
    cached, uncached = statistics.median(times[True]), statistics.median(times[False])
    # Each round times both back to back, so its ratio is measured under one machine state;
    # the median of those ratios is steadier than a ratio of medians taken minutes apart.
    speedup = statistics.median(u / c for c, u in zip(times[True], times[False]))
    print(f"config {args.config} {CONFIGS[args.config]}, batch {args.batch}, {args.tokens} tokens, threads={torch.get_num_threads()}")
    print(f"with cache    {cached * 1000:8.1f} ms (median of {args.rounds})")
    print(f"without cache {uncached * 1000:8.1f} ms")
    print(f"speed-up with the cache: {speedup:.2f}x (median of the rounds' ratios)")


if __name__ == "__main__":
    main()
