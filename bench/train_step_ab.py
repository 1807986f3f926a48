"""One training step of this tx against another commit's tx, in one process: the step fit runs.

The same model (the book's size, dropout 0.1) and batch in both versions; a step is the
forward pass, the label-smoothed loss, backward and Adam, as ``tx.train.fit`` takes it. A tx
with ``tx.checks.guarded`` runs it inside fit's one checked call (``checked_once``), the
baseline with whatever checks its forward made. CPU time of this process, the two versions in
alternating rounds; the median of the rounds' ratios, with its quartiles.

    python bench/train_step_ab.py --baseline 4d401b2
"""

from __future__ import annotations

import contextlib
import statistics
import tempfile
import time
from pathlib import Path

import torch

import tx
from decode_step_ab import ab_arguments, best_of, import_baseline, twin_models


def step_of(model, batch, pad_id: int, loss_fn, in_loop: bool):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)

    def step() -> None:
        with tx.checks.checked_once() if in_loop else contextlib.nullcontext():
            loss = loss_fn(model(batch.src, batch.tgt_in), batch.tgt_out, pad_id, 0.1)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def main() -> None:
    args = ab_arguments(steps=10, rounds=20)
    with tempfile.TemporaryDirectory() as folder:
        txbase = import_baseline(args.baseline, Path(folder))
        vocab, B, T = 300, 64, 12
        new, base = twin_models(txbase, src_vocab_size=vocab, tgt_vocab_size=vocab, d_model=128, n_heads=4,
                                n_layers=2, d_ff=256)
        new, base = new.train(), base.train()
        batch = tx.data.Batch(torch.randint(4, vocab, (B, T)), torch.randint(4, vocab, (B, T + 1)))
        steps = {"base": step_of(base, batch, 0, txbase.train.loss_fn, False),
                 "new": step_of(new, batch, 0, tx.train.loss_fn, True)}
        cpu, ratios = best_of(steps, args.steps, args.rounds, time.process_time)
    q = statistics.quantiles(ratios, n=4)
    print(f"baseline {args.baseline}; threads={torch.get_num_threads()}; batch {B} x {T} tokens, the book's size")
    print(f"one training step, CPU time, best: base {cpu['base'] * 1e3:.2f} ms, new {cpu['new'] * 1e3:.2f} ms; "
          f"new/base by round: median {statistics.median(ratios):.3f} (quartiles {q[0]:.3f} to {q[2]:.3f})")


if __name__ == "__main__":
    main()
