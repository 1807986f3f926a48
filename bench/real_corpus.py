"""BLEU against training minutes on a real corpus: what `python -m tx.train --tsv` reaches in 1, 2, 5, 10 minutes.

One run trains with the real-corpus presets (the same split, cased BPE vocabularies and
model as the command) for the longest time asked for, and keeps a copy of the weights
when each shorter mark is passed. The learning-rate schedule depends on the step alone,
never on the budget, so the copy at 2 minutes is what a 2-minute run would end with.
Each copy is then measured on the held-out test split (no test source sentence is in
training): cased sacreBLEU and exact match, greedy, and the last one with beam search too.

    python bench/real_corpus.py                     # ../shared/data/tatoeba-eng-fra-75k.tsv
    python bench/real_corpus.py --tsv FILE --marks 1 2 5 10 --beam 4

The minutes are training time (validation included), on however many threads torch uses;
learning the BPE vocabularies and the final measurements come on top.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

import tx
from tx.train import TrainConfig, TrainState, fit, subword_vocabs

DEFAULT_TSV = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "tatoeba-eng-fra-75k.tsv"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tsv", type=Path, default=DEFAULT_TSV)
    parser.add_argument("--marks", type=float, nargs="+", default=[1, 2, 5, 10], help="training minutes to measure at")
    parser.add_argument("--beam", type=int, default=4, help="beam size for the last mark (1: greedy only)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not args.tsv.is_file():
        parser.error(f"no corpus at {args.tsv}; give one with --tsv (Tatoeba's English<TAB>French layout).")
    marks = sorted(args.marks)
    corpus = tx.data.split_corpus(tx.data.load_parallel_tsv(args.tsv), seed=args.seed)
    src_vocab, tgt_vocab = subword_vocabs(corpus)
    torch.manual_seed(args.seed)
    model = tx.Transformer.from_config(tx.TransformerConfig.real(len(src_vocab), len(tgt_vocab)))
    snapshots: dict[float, tuple[int, dict]] = {}

    def keep(state: TrainState) -> None:  # every 20 steps: copy the weights once past each mark
        for mark in marks:
            if mark not in snapshots and state.seconds >= 60 * mark:
                snapshots[mark] = (state.step, {k: v.clone() for k, v in model.state_dict().items()})

    cfg = TrainConfig.real(minutes=marks[-1], save_every=20, seed=args.seed)
    print(f"{len(corpus.train)} training pairs, {len(corpus.test)} test pairs; {torch.get_num_threads()} threads; "
          f"model d_model {model.config.d_model}, {model.config.n_layers}+{model.config.n_layers} layers")
    history = fit(model, corpus.train, corpus.valid, src_vocab, tgt_vocab, cfg, save=keep)
    snapshots.setdefault(marks[-1], (history["step"][-1], model.state_dict()))
    print(f"| training minutes | steps | BLEU ({tgt_vocab.comparison}) | exact match |")
    print("| --- | --- | --- | --- |")
    for mark in marks:
        step, weights = snapshots[mark]
        model.load_state_dict(weights)
        greedy = tx.evaluate.evaluate(model, corpus.test, src_vocab, tgt_vocab)
        print(f"| {mark:g} | {step} | {greedy['bleu']:.1f} | {greedy['exact_match']:.1%} |", flush=True)
    if args.beam > 1:
        began = time.perf_counter()
        beam = tx.evaluate.evaluate(model, corpus.test, src_vocab, tgt_vocab, beam_size=args.beam, length_penalty=0.6)
        print(f"| {marks[-1]:g}, beam {args.beam} | {step} | {beam['bleu']:.1f} | {beam['exact_match']:.1%} |"
              f"  ({time.perf_counter() - began:.0f} s to decode {beam['n']} sentences)")


if __name__ == "__main__":
    main()
