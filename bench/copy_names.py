"""Which names and numbers trained checkpoints copy: chapter 12's sentences and six more.

    python bench/copy_names.py runs/a.safetensors runs/b.safetensors

For each checkpoint: its training record (vocabulary, --copy-pairs, steps, held-out cased BLEU
from its metadata) and how many of the sentences' names and numbers its greedy translation
writes as they are, with the translations. The sentences are bench/real_corpus.py's NAMES
(chapter 12's table) and EXTRA, which the chapter does not show.
"""

from __future__ import annotations

import sys
from pathlib import Path

import tx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_corpus import NAMES, copied  # noqa: E402 - the chapter's list and its measure, one copy

EXTRA = [("Zoé a 73 ans.", "73"), ("Je vis à Montréal.", "Montréal"), ("Marc a acheté 3 pommes.", "3"),
         ("Sophie est partie à Berlin.", "Berlin"), ("Il est né en 1990.", "1990"), ("Je suis Tom.", "Tom")]


def main(paths: list[str]) -> None:
    print("| checkpoint | vocabulary | --copy-pairs | --copy-numbers | steps | cased BLEU | chapter 12's 8 copied | 6 more copied |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    examples = []
    for path in paths:
        ck = tx.checkpoint.load(path)
        counts = []
        for sentences in (NAMES, EXTRA):
            english, count = copied(ck, sentences)
            counts.append(count)
            examples += [(Path(path).name, fr, en) for (fr, _), en in zip(sentences, english)]
        info = ck.info
        vocab = "shared" if ck.model.config.share_embeddings else "two"
        print(f"| {Path(path).name} | {vocab} | {info.get('copy_pairs', 0)} | {info.get('copy_numbers', info.get('copy_pairs', 0))} | {info['step']:,} | "
              f"{info['test']['bleu']:.1f} | {counts[0]} | {counts[1]} |")
    for name, fr, en in examples:
        print(f"{name}: {fr} -> {en}")


if __name__ == "__main__":
    main(sys.argv[1:])
