"""Training steps of the book's model with and without torch.compile (``python -m tx.train --compile``).

The same model and batch, eager and compiled (inductor); the compiled model's first step pays
for compiling, timed apart. Then both are timed in alternating rounds of steps (wall-clock,
the best round of each), each step as fit takes it: forward, loss, backward, Adam.

    python bench/compile_speed.py
"""

from __future__ import annotations

import argparse
import time

import torch

import tx
from tx.train import loss_fn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--config", choices=["book", "base"], default="book")
    args = parser.parse_args()
    vocab, B, T = (300, 64, 12) if args.config == "book" else (8000, 16, 24)
    sizes = tx.TransformerConfig.small(vocab, vocab) if args.config == "book" else tx.TransformerConfig.base(vocab)
    torch.manual_seed(0)
    eager = tx.Transformer(sizes).train()
    twin = tx.Transformer(sizes).train()
    twin.load_state_dict(eager.state_dict())
    compiled = torch.compile(twin)
    batch = tx.data.Batch(torch.randint(4, vocab, (B, T)), torch.randint(4, vocab, (B, T + 1)))

    def stepper(model):
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)

        def step() -> None:
            loss = loss_fn(model(batch.src, batch.tgt_in), batch.tgt_out, 0, 0.1)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

        return step

    runs = {"eager": stepper(eager), "torch.compile": stepper(compiled)}
    t0 = time.perf_counter()
    runs["torch.compile"]()
    first = time.perf_counter() - t0
    runs["eager"]()
    best = dict.fromkeys(runs, float("inf"))
    for r in range(args.rounds):
        for name in list(runs) if r % 2 == 0 else list(runs)[::-1]:
            t0 = time.perf_counter()
            for _ in range(args.steps):
                runs[name]()
            best[name] = min(best[name], (time.perf_counter() - t0) / args.steps)
    tokens = int((batch.tgt_out != 0).sum())
    print(f"{args.config} model, batch {B} x {T}, threads={torch.get_num_threads()}; "
          f"the compiled model's first step (compiling): {first:.1f} s")
    for name, seconds in best.items():
        print(f"{name:14s} {seconds * 1e3:8.1f} ms a step, {tokens / seconds:9,.0f} target tokens/s")
    print(f"compiled / eager: {best['eager'] / best['torch.compile']:.2f}x the speed")


if __name__ == "__main__":
    main()
