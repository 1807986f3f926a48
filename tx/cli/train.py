"""``python -m tx.train``: train the book's model, or a subword model of a real corpus, and write a checkpoint.

The training itself is chapter 10's :func:`tx.train.fit`; this module is the command around
it: its arguments, checked before the first step (a bad one exits with status 2 and a
message that names it), the built-in corpus or a ``--tsv`` file, the resumable state of a
``--tsv`` run (:mod:`tx.train_state`), and the checkpoint with its test-set figures.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path
from typing import Any, Sequence

import torch

from .. import checkpoint, copying, data, evaluate, parallel, train
from .. import device  # CUDA when there is a GPU, else the CPU
from ..checkpoint import check_writable
from ..config import TransformerConfig
from ..grammar import RUNNING_EXAMPLES
from ..model import Transformer
from ..train import TrainConfig, cpu_threads
from ..train_state import TrainState, load_state, save_state, state_path

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Train the book's model on the built-in corpus (or, with --tsv, a cased subword model of a real corpus,
    within a time budget), report test-set figures, write a checkpoint.

    Every argument, the corpus and the output path are checked before the first step; a bad
    one stops the command with exit status 2 and a message that names it. Under
    ``torchrun --nproc_per_node N -m tx.train ...`` N processes train one model together
    (DistributedDataParallel; ``--batch-size`` is then the global batch, split over them).
    """
    parser = argparse.ArgumentParser(prog="python -m tx.train", description=main.__doc__)
    parser.add_argument("--out", type=Path, default=Path("runs/fr_en_small.safetensors"), help="checkpoint to write")
    parser.add_argument("--steps", type=int, help=f"optimiser steps (default {TrainConfig.steps}; with --tsv, "
                        f"{TrainConfig.real().steps}, the time budget deciding)")
    parser.add_argument("--batch-size", type=int, help=f"sentence pairs a step (default {TrainConfig.batch_size}; "
                        f"with --tsv, {TrainConfig.real().batch_size})")
    parser.add_argument("--seed", type=int, default=0, help="seeds the corpus, the weights and the batches")
    parser.add_argument("--pairs", type=int, default=12000, help="sentence pairs in the built-in corpus")
    parser.add_argument("--tsv", type=Path, help="train on this tab-separated corpus instead (Tatoeba layout)")
    parser.add_argument("--norm-first", action="store_true", help="pre-LN instead of the paper's post-LN")
    parser.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    parser.add_argument("--threads", type=int, default=2,
                        help="CPU threads; sums split over threads round differently, and 2 wrote the book's checkpoint")
    parser.add_argument("--precision", choices=list(parallel.PRECISIONS), default="fp32",
                        help="bf16 or fp16 (CUDA only): train under torch.autocast; the checkpoint stays fp32")
    parser.add_argument("--compile", action="store_true",
                        help="train through torch.compile (the first steps pay for compiling; see bench/README.md)")
    _add_real_corpus_args(parser)
    args = parser.parse_args(argv)
    world = parallel.init_from_env()  # under torchrun: one of WORLD_SIZE processes, gloo on CPU, nccl on GPUs
    try:
        return (_main_tsv if args.tsv is not None else _main_builtin)(parser, args, world)
    finally:
        parallel.finish()


def _add_real_corpus_args(parser: argparse.ArgumentParser) -> None:
    """The options of training on a real corpus (``--tsv``), beside the built-in corpus's."""
    parser.add_argument("--minutes", type=float, help="stop after this many minutes of training (default with "
                        f"--tsv: {TrainConfig.real().minutes:g}; the steps still cap it)")
    parser.add_argument("--resume", action="store_true", help="--tsv: continue the run whose checkpoint is --out")
    parser.add_argument("--vocab-size", type=int, default=4000, help="--tsv: BPE pieces per language (default 4000), "
                        "or in all with --shared-vocab")
    parser.add_argument("--copy-pairs", type=int, default=0, help="--tsv: add this many copies of each training "
                        "pair that holds a name or number on both sides, each with it swapped for another "
                        "(tx.copying), so the model learns to copy them")
    parser.add_argument("--copy-numbers", type=int, help="--tsv: copies of each pair that holds a number on both "
                        "sides instead (default: as --copy-pairs); numbers are far rarer than names")
    parser.add_argument("--shared-vocab", action="store_true", help="--tsv: one BPE vocabulary for both languages, "
                        "with byte fallback, and the embeddings and output layer tied (the paper's section 3.4)")
    parser.add_argument("--credit", default="", help="--tsv: the corpus's source and licence, kept in the checkpoint")


def _check_args(args: argparse.Namespace) -> TrainConfig:
    """The command line's numbers and output path, checked before any corpus is read; returns the TrainConfig."""
    preset = TrainConfig.real() if args.tsv is not None else TrainConfig()
    args.steps = preset.steps if args.steps is None else args.steps
    args.batch_size = preset.batch_size if args.batch_size is None else args.batch_size
    for flag, value in (("--steps", args.steps), ("--batch-size", args.batch_size), ("--threads", args.threads)):
        if value < 1:
            raise ValueError(f"{flag} must be at least 1, got {value}.")
    minutes = preset.minutes if getattr(args, "minutes", None) is None else args.minutes
    if minutes is not None and not minutes > 0:
        raise ValueError(f"--minutes must be more than 0, got {minutes}.")
    if args.tsv is None and args.pairs < len(RUNNING_EXAMPLES):
        raise ValueError(f"--pairs must be at least {len(RUNNING_EXAMPLES)} (the book's running examples), got {args.pairs}.")
    if args.tsv is not None and args.tsv.is_dir():
        raise IsADirectoryError(f"--tsv {args.tsv}: is a folder, not a corpus file.")
    if args.tsv is not None and not args.tsv.is_file():
        raise FileNotFoundError(f"--tsv {args.tsv}: no such file.")
    resume = getattr(args, "resume", False)
    if resume and args.tsv is None:
        raise ValueError("--resume continues a --tsv run; the built-in corpus trains in a minute, train it anew.")
    if args.out.exists() and not args.out.is_dir() and not args.force and not resume:
        raise FileExistsError(f"{args.out} exists; pass --force to overwrite it, --resume to continue its run, "
                              "or choose another --out")
    if resume and not args.out.is_file():
        raise FileNotFoundError(f"--resume: no checkpoint at {args.out} to continue; train without --resume first.")
    check_writable(args.out)
    precision = getattr(args, "precision", "fp32")
    parallel.check_precision(precision, device())
    world = parallel.world()
    if args.batch_size % world.size:
        raise ValueError(f"--batch-size {args.batch_size} is the global batch of all {world.size} processes and "
                         f"must split evenly over them; give a multiple of {world.size}.")
    return preset.__class__(**{**vars(preset), "steps": args.steps, "batch_size": args.batch_size,
                               "seed": args.seed, "minutes": minutes, "precision": precision,
                               "compile": getattr(args, "compile", False)})


def _load(args: argparse.Namespace, max_len: int | None = None) -> data.ParallelCorpus:
    """The corpus, checked: sentences that fit the model's positions, and pairs enough for every split."""
    max_len = TransformerConfig.small(4, 4).max_len if max_len is None else max_len
    if args.tsv is None:
        try:
            corpus = data.load_corpus(seed=args.seed, n_pairs=args.pairs)
        except ValueError as e:
            raise ValueError(f"--pairs {args.pairs}: {e}") from None
    else:
        pairs = data.load_parallel_tsv(args.tsv, max_tokens=max_len - 1)
        corpus = data.split_corpus(pairs, seed=args.seed)
    for split in ("train", "valid", "test"):
        if not getattr(corpus, split):
            n = sum(len(getattr(corpus, s)) for s in ("train", "valid", "test"))
            raise ValueError(
                f"the corpus of {n} pairs leaves the {split} split empty (5% of the distinct sources are held "
                "out for validation and 5% for testing); give more pairs, at least 11 with distinct source sentences."
            )
        data.check_lengths(getattr(corpus, split), max_len, split)
    return corpus


def _main_builtin(parser: argparse.ArgumentParser, args: argparse.Namespace, world: parallel.World) -> dict[str, Any]:
    """The built-in corpus: the book's small model, trained by ``steps``."""
    try:
        tcfg = _check_args(args)
        corpus = _load(args)
    except (ValueError, TypeError, OSError) as e:
        parser.error(str(e))
    torch.manual_seed(args.seed)
    cfg = TransformerConfig.small(len(corpus.src_vocab), len(corpus.tgt_vocab), norm_first=args.norm_first)
    with cpu_threads(args.threads):  # on CPU the same thread count gives the same weights, bit for bit
        model = Transformer.from_config(cfg).to(device())
        try:
            history = train.fit(model, corpus.train, corpus.valid, corpus.src_vocab, corpus.tgt_vocab, tcfg)
        except FloatingPointError as e:
            raise SystemExit(f"python -m tx.train: error: {e} No checkpoint was written; {args.out} is unchanged.") from None
        if world.rank != 0:  # the other processes hold the same weights; rank 0 tests and writes them
            return {}
        scores = evaluate.evaluate(model, corpus.test, corpus.src_vocab, corpus.tgt_vocab)
        info = {"train": vars(tcfg) | {"pairs": args.pairs, "tsv": str(args.tsv) if args.tsv else None},
                "test": scores, "seconds": round(history["seconds"], 1), "final_valid_loss": history["valid_loss"][-1],
                "compared": corpus.tgt_vocab.comparison, "world_size": world.size}
        checkpoint.save(args.out, model, corpus.src_vocab, corpus.tgt_vocab, info=info)
    print(f"trained {history['step'][-1]} steps in {history['seconds']:.0f} s; test exact match "
          f"{scores['exact_match']:.1%}, BLEU {scores['bleu']:.1f} on {scores['n']} sentences "
          f"({corpus.tgt_vocab.comparison}); wrote {args.out}")
    return info


def _main_tsv(parser: argparse.ArgumentParser, args: argparse.Namespace, world: parallel.World) -> dict[str, Any]:
    """``--tsv``: BPE vocabularies of the training split, the real-corpus presets, a time budget, resumable."""
    try:
        tcfg = _check_args(args)
        if args.vocab_size < 5:
            raise ValueError(f"--vocab-size must be at least 5 (four specials and a piece), got {args.vocab_size}.")
        if args.copy_pairs < 0:
            raise ValueError(f"--copy-pairs must be 0 or more (copies of each pair with a name or number), "
                             f"got {args.copy_pairs}.")
        if args.copy_numbers is not None and args.copy_numbers < 0:
            raise ValueError(f"--copy-numbers must be 0 or more (copies of each pair with a number), "
                             f"got {args.copy_numbers}.")
        copy_numbers = args.copy_pairs if args.copy_numbers is None else args.copy_numbers
        corpus = _load(args, TransformerConfig.real(4, 4).max_len)
        digest = _sha256(args.tsv)
        resume, model, credit = None, None, args.credit
        if args.resume:
            ck = checkpoint.load(args.out, device())
            resume = load_state(state_path(args.out))
            _check_same_run(ck.info, args, digest, resume)
            if tcfg.minutes is not None and resume.seconds >= 60 * tcfg.minutes:
                raise ValueError(f"--resume: the run has trained {resume.seconds / 60:.1f} minutes, its whole "
                                 f"--minutes {tcfg.minutes:g}; give a larger --minutes to train it longer.")
            if resume.step >= tcfg.steps:
                raise ValueError(f"--resume: the run has done {resume.step} steps, its whole --steps {tcfg.steps}; "
                                 "give a larger --steps to train it longer.")
            model, src_vocab, tgt_vocab = ck.model, ck.src_vocab, ck.tgt_vocab
            credit = credit or ck.info.get("credit", "")
        else:  # learned once, by rank 0, so every process has the same pieces
            src_vocab, tgt_vocab = parallel.broadcast_object(data.subword_vocabs(corpus, args.vocab_size, args.shared_vocab)
                                                          if world.rank == 0 else None)
    except (ValueError, TypeError, OSError) as e:
        parser.error(str(e))
    if model is None:
        torch.manual_seed(args.seed)
        cfg = TransformerConfig.real(len(src_vocab), len(tgt_vocab), norm_first=args.norm_first,
                                     share_embeddings=src_vocab is tgt_vocab)
        model = Transformer.from_config(cfg).to(device())
    run = {"tsv": args.tsv.name, "tsv_sha256": digest, "credit": credit, "seed": args.seed, "world_size": world.size,
           "vocab": (f"BPE (Hugging Face tokenizers), cased, {len(src_vocab)} pieces shared by both languages, "
                     "byte fallback, tied embeddings" if src_vocab is tgt_vocab else
                     f"BPE (Hugging Face tokenizers), cased, {len(src_vocab)} + {len(tgt_vocab)} pieces"),
           "train": {k: v for k, v in vars(tcfg).items()}, "pairs": {s: len(getattr(corpus, s)) for s in ("train", "valid", "test")},
           "copy_pairs": args.copy_pairs, "copy_numbers": copy_numbers, "threads": args.threads}

    def save(state: TrainState) -> None:
        checkpoint.save(args.out, model, src_vocab, tgt_vocab, info=run | {"step": state.step,
                        "train_seconds": round(state.seconds, 1), "complete": False})
        save_state(state_path(args.out), state)

    try:
        # the vocabularies above come from the corpus's own pairs; the copies only add examples to learn from
        fits = copying.fits_model(src_vocab, tgt_vocab, model.config.max_len)
        pairs = (copying.with_copies(corpus.train, args.copy_pairs, args.seed, fits, copy_numbers)
                 if args.copy_pairs or copy_numbers else corpus.train)
        history = train.fit(model, pairs, corpus.valid, src_vocab, tgt_vocab, tcfg, resume=resume, save=save)
    except FloatingPointError as e:
        raise SystemExit(f"python -m tx.train: error: {e} The last checkpoint in {args.out} is kept; --resume continues it.") from None
    if world.rank != 0:
        return {}
    scores = evaluate.evaluate(model, corpus.test, src_vocab, tgt_vocab)
    info = run | {"step": history["step"][-1] if history["step"] else resume.step, "complete": True,
                  "train_seconds": round(history["seconds"], 1), "final_valid_loss": history["valid_loss"][-1],
                  "test": scores, "compared": tgt_vocab.comparison}
    checkpoint.save(args.out, model, src_vocab, tgt_vocab, info=info)
    print(f"trained {info['step']} steps in {history['seconds'] / 60:.1f} min; on {scores['n']} held-out sentences "
          f"({tgt_vocab.comparison}): BLEU {scores['bleu']:.1f}, exact match {scores['exact_match']:.1%}; wrote {args.out}")
    return info


def _check_same_run(info: dict[str, Any], args: argparse.Namespace, digest: str, state: TrainState) -> None:
    """--resume continues one run: the same corpus file, the same seed, and weights saved with that state."""
    if info.get("tsv_sha256") != digest:
        raise ValueError(f"--resume: {args.out} was trained on another corpus than {args.tsv} (its contents differ); "
                         "resume with the same file, or train anew with --force.")
    if info.get("seed") != args.seed:
        raise ValueError(f"--resume: {args.out} was trained with --seed {info.get('seed')}, not {args.seed}.")
    if info.get("step") != state.step:
        raise ValueError(f"--resume: {args.out} holds step {info.get('step')} but its training state step {state.step}; "
                         "the two files are from different moments. Train anew with --force.")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


if __name__ == "__main__":
    main()
