"""Training speed: tx.Transformer against an nn.Embedding + torch.nn.Transformer + nn.Linear model.

Both get the same configuration, data, optimiser and dropout; runs are interleaved so
that drift in the machine's speed hits both alike. Prints target tokens per second
and, last, the ratio tx / torch.

    python bench/train_speed.py --config book
    python bench/train_speed.py --config base
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import torch
from torch import nn

import tx

CONFIGS = {
    "book": dict(vocab=300, d_model=128, n_heads=4, n_layers=2, d_ff=256, batch=64, src_len=9, tgt_len=10),
    "base": dict(vocab=8000, d_model=512, n_heads=8, n_layers=6, d_ff=2048, batch=16, src_len=24, tgt_len=24),
}


class TorchReference(nn.Module):
    """nn.Embedding (scaled, plus sinusoids) + torch.nn.Transformer + nn.Linear, batch first."""

    def __init__(self, vocab, d_model, n_heads, n_layers, d_ff, dropout=0.1, max_len=256):
        super().__init__()
        self.src_embed, self.tgt_embed = nn.Embedding(vocab, d_model), nn.Embedding(vocab, d_model)
        self.register_buffer("pe", tx.positional_encoding(max_len, d_model))
        self.drop = nn.Dropout(dropout)
        self.core = nn.Transformer(d_model, n_heads, n_layers, n_layers, d_ff, dropout, batch_first=True)
        self.generator = nn.Linear(d_model, vocab)
        self.scale = math.sqrt(d_model)

    def forward(self, src, tgt):
        s = self.drop(self.src_embed(src) * self.scale + self.pe[: src.size(1)])
        t = self.drop(self.tgt_embed(tgt) * self.scale + self.pe[: tgt.size(1)])
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.size(1), dtype=torch.bool)
        out = self.core(s, t, tgt_mask=causal, src_key_padding_mask=src == 0, memory_key_padding_mask=src == 0)
        return self.generator(out)


def make_models(c):
    torch.manual_seed(0)
    ours = tx.Transformer(src_vocab_size=c["vocab"], tgt_vocab_size=c["vocab"], d_model=c["d_model"], n_heads=c["n_heads"],
                          n_layers=c["n_layers"], d_ff=c["d_ff"], dropout=0.1)
    ref = TorchReference(c["vocab"], c["d_model"], c["n_heads"], c["n_layers"], c["d_ff"], 0.1)
    return {"tx": ours, "torch": ref}


def step_fn(model, src, tgt):
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)

    def step():
        logits = model(src, tgt[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt[:, 1:].reshape(-1), ignore_index=0)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def interleaved_rates(steps: dict, tokens: int, rounds: int, per_round: int) -> dict[str, list[float]]:
    """Tokens a second of each step function, round by round: every round times each in turn,
    ``per_round`` steps of ``tokens`` / ``per_round`` target tokens, after three warm-up steps each."""
    for s in steps.values():  # warm-up
        for _ in range(3):
            s()
    rates = {name: [] for name in steps}
    for _ in range(rounds):
        for name, s in steps.items():
            t0 = time.perf_counter()
            for _ in range(per_round):
                s()
            rates[name].append(tokens / (time.perf_counter() - t0))
    return rates


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", choices=CONFIGS, default="book")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20, help="steps per timed round")
    args = parser.parse_args()
    c = CONFIGS[args.config]
    g = torch.Generator().manual_seed(0)
    src = torch.randint(4, c["vocab"], (c["batch"], c["src_len"]), generator=g)
    tgt = torch.randint(4, c["vocab"], (c["batch"], c["tgt_len"] + 1), generator=g)
    models = make_models(c)
    steps = {name: step_fn(m.train(), src, tgt) for name, m in models.items()}
    tokens = c["batch"] * c["tgt_len"] * args.steps
    rates = interleaved_rates(steps, tokens, args.rounds, args.steps)
    print(f"config {args.config}: {c} threads={torch.get_num_threads()}")
    for name, r in rates.items():
        print(f"{name:6s} {statistics.median(r):10.0f} target tokens/s (median of {args.rounds})")
    # Each round times both back to back, so its ratio is measured under one machine state;
    # the median of those ratios is steadier than a ratio of medians.
    ratio = statistics.median(a / b for a, b in zip(rates["tx"], rates["torch"]))
    print(f"ratio tx/torch: {ratio:.2f} (median of the rounds' ratios)")


if __name__ == "__main__":
    main()
