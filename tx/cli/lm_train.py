"""``python -m tx.lm_train --translate``: train chapter 13's decoder-only translator and write its checkpoint.

The sequences, the loop and the step-time match are :mod:`tx.lm_train`'s; this module is
the command around them.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Sequence

import torch

from .. import checkpoint, data, evaluate
from ..language_model import LanguageModel
from ..lm_train import fit_lm, joint_vocab, pair_ids, step_times, translate, translator_config
from ..train import cpu_threads

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Train chapter 13's decoder-only translator on the built-in corpus for the book model's training time.

    The time is matched in CPU work: the book model took S steps; this one takes
    S * (book step time / its own step time) steps, both step times measured in turns at
    the start of the run (:func:`step_times`), so a busy machine does not tilt the comparison.
    """
    parser = argparse.ArgumentParser(prog="python -m tx.lm_train", description=main.__doc__)
    parser.add_argument("--translate", action="store_true", required=True,
                        help="train on '<bos> french <sep> english <eos>' sequences (the only task this command has)")
    parser.add_argument("--out", type=Path, default=checkpoint.DECODER_ONLY_MODEL, help="checkpoint to write")
    parser.add_argument("--steps", type=int, help="optimiser steps (default: the book checkpoint's training time, matched)")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads, as the book checkpoint was trained")
    parser.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    args = parser.parse_args(argv)
    if (args.steps is not None and args.steps < 1) or args.threads < 1:
        parser.error("--steps and --threads must be at least 1.")
    if args.out.exists() and not args.force:
        parser.error(f"{args.out} exists; pass --force to overwrite it.")
    book = checkpoint.read_metadata(checkpoint.BOOK_MODEL)["info"]
    tcfg = book["train"]
    corpus = data.load_corpus(seed=tcfg["seed"], n_pairs=tcfg["pairs"])  # the book model's splits
    vocab = joint_vocab(corpus.train)
    examples = [pair_ids(vocab, fr, en) for fr, en in corpus.train]
    with cpu_threads(args.threads):
        torch.manual_seed(0)
        model = LanguageModel(translator_config(len(vocab)))
        t_lm, t_book = step_times(model, examples, corpus)
        steps = round(tcfg["steps"] * t_book / t_lm) if args.steps is None else args.steps
        history = fit_lm(model, examples, steps=steps, batch_size=tcfg["batch_size"], warmup=tcfg["warmup"],
                         label_smoothing=tcfg["label_smoothing"], seed=0)
        hyps = translate(model, vocab, [fr for fr, _ in corpus.test])
    refs = [vocab.normalise(en) for _, en in corpus.test]
    scores = {"exact_match": evaluate.exact_match(hyps, refs), "bleu": evaluate.bleu(hyps, refs), "n": len(refs)}
    info = {"train": {"steps": steps, "batch_size": tcfg["batch_size"], "warmup": tcfg["warmup"],
                      "label_smoothing": tcfg["label_smoothing"], "seed": 0, "pairs": tcfg["pairs"],
                      "threads": args.threads},
            "step_cpu_seconds": {"decoder_only": t_lm, "book": t_book}, "book_steps": tcfg["steps"],
            "test": scores, "seconds": round(history["seconds"], 1), "parameters": model.n_parameters(),
            "final_train_loss": history["train_loss"][-1],
            "command": "python -m tx.lm_train --translate" + (f" --steps {args.steps}" if args.steps else "")}
    checkpoint.save_language_model(args.out, model, vocab, info)
    print(f"trained {steps} steps ({t_book / t_lm:.2f} x the book model's {tcfg['steps']}: a step costs "
          f"{t_lm / t_book:.2f} x its CPU time) in {history['seconds']:.0f} s; test exact match "
          f"{scores['exact_match']:.1%}, BLEU {scores['bleu']:.1f} on {scores['n']} sentences; wrote {args.out}")
    return info


if __name__ == "__main__":
    main()
