"""Mixed-precision training speed: tx.train's step in fp32 against bf16 autocast (fp16 too, on CUDA).

The same model, data and Adam; each step is the one ``tx.train.fit`` takes
(``tx.train.batch_loss`` under ``--precision``, backward, clip, Adam, with the GradScaler
fp16 needs). Precisions are timed in interleaved rounds, so drift in the machine's speed
hits all alike. Prints target tokens per second and, last, the ratio bf16 / fp32.

    python bench/precision_speed.py --config book
    python bench/precision_speed.py --config base --rounds 3 --steps 5
    python bench/precision_speed.py --config base --batch 256   # a GPU's batch
"""

from __future__ import annotations

import argparse
import statistics

import torch
from torch import nn

import tx
from tx import data, scale
from tx.train import batch_loss, make_optimizer

from train_speed import interleaved_rates  # bench/ is on the path when a script here runs

CONFIGS = {
    "book": dict(vocab=300, d_model=128, n_heads=4, n_layers=2, d_ff=256, batch=64, src_len=9, tgt_len=10),
    "base": dict(vocab=8000, d_model=512, n_heads=8, n_layers=6, d_ff=2048, batch=16, src_len=24, tgt_len=24),
}


def step_fn(precision: str, c: dict, batch: data.Batch, dev: torch.device):
    """One training step of a fresh seeded model in ``precision``, as tx.train.fit takes it."""
    torch.manual_seed(0)
    model = tx.Transformer(src_vocab_size=c["vocab"], tgt_vocab_size=c["vocab"], d_model=c["d_model"], n_heads=c["n_heads"],
                           n_layers=c["n_layers"], d_ff=c["d_ff"], dropout=0.1).to(dev)
    opt, scaler = make_optimizer(model), scale.grad_scaler(precision, dev)
    for group in opt.param_groups:
        group["lr"] = 1e-4

    def step():
        loss = batch_loss(model, batch, 0, 0.1, precision)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        if dev.type == "cuda":
            torch.cuda.synchronize()

    return step


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", choices=CONFIGS, default="book")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20, help="steps per timed round")
    parser.add_argument("--batch", type=int, help="sentence pairs a step (default: the config's)")
    args = parser.parse_args()
    c, dev = CONFIGS[args.config], tx.device()
    if args.batch:
        c = {**c, "batch": args.batch}
    g = torch.Generator().manual_seed(0)
    src = torch.randint(4, c["vocab"], (c["batch"], c["src_len"]), generator=g)
    tgt = torch.randint(4, c["vocab"], (c["batch"], c["tgt_len"] + 1), generator=g)
    batch = data.Batch(src, tgt).to(dev)
    precisions = ["fp32", "bf16"] + (["fp16"] if dev.type == "cuda" else [])
    steps = {p: step_fn(p, c, batch, dev) for p in precisions}
    tokens = batch.n_tokens * args.steps
    rates = interleaved_rates(steps, tokens, args.rounds, args.steps)
    print(f"config {args.config}: {c} device={dev} threads={torch.get_num_threads()}")
    for p, r in rates.items():
        print(f"{p:5s} {statistics.median(r):10.0f} target tokens/s (median of {args.rounds})")
    ratio = statistics.median(b / a for a, b in zip(rates["fp32"], rates["bf16"]))
    print(f"ratio bf16/fp32: {ratio:.2f} (median of the rounds' ratios)")


if __name__ == "__main__":
    main()
