"""Translate with a trained checkpoint from the command line, one translation a line.

::

    python -m tx.translate CHECKPOINT [SENTENCE ...]
        [--beam K] [--runtime torch|onnx]

With no sentence on the command line it reads standard input, one sentence a line, and
writes one line for each, in the same order (an empty line stays empty). The checkpoint is
any that ``python -m tx.train`` writes: the book's model (word vocabulary, lowercase) or a
real-corpus model (subwords, cased). What is typed for a subword model is first tidied as
people type (:func:`tx.subwords.tidy_typed`: capitals, curly quotes, spaces, the final full
stop), as the book's live blocks do. ``--runtime onnx`` exports the checkpoint with
:mod:`tx.export` into a temporary folder and decodes greedily through onnxruntime, the graphs a
web page runs: the same translations as tx's own.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> list[str]:
    """Parse the command line, translate, print one line a sentence; returns the translations."""
    from . import checkpoint, evaluate
    from .subwords import SubwordVocab, tidy_typed

    parser = argparse.ArgumentParser(prog="python -m tx.translate", description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=Path, help="a .safetensors checkpoint written by python -m tx.train")
    parser.add_argument("sentences", nargs="*", help="sentences to translate (none: read standard input)")
    parser.add_argument("--beam", type=int, default=1, metavar="K", help="beam size; 1 (the default) decodes greedily")
    parser.add_argument("--length-penalty", type=float, default=0.6,
                        help="beam search divides a hypothesis's log-probability by length**this (default 0.6)")
    parser.add_argument("--runtime", choices=("torch", "onnx"), default="torch",
                        help="decode with tx itself (default) or with onnxruntime on the exported graphs (greedy only)")
    args = parser.parse_intermixed_args(argv)  # options before, between or after the sentences
    if args.beam < 1:
        parser.error(f"--beam must be at least 1, got {args.beam}.")
    if args.runtime == "onnx" and args.beam > 1:
        parser.error("--runtime onnx decodes greedily only; drop --beam, or use --runtime torch for beam search.")
    try:
        ck = checkpoint.load(args.checkpoint)
    except (ValueError, TypeError, OSError) as e:
        parser.error(str(e))
    if ck.src_vocab is None or ck.tgt_vocab is None:
        parser.error(f"{args.checkpoint} holds a model without its vocabularies, so it cannot read or write words; "
                     "use a checkpoint written by python -m tx.train.")
    sentences = list(args.sentences) if args.sentences else [line.rstrip("\r\n") for line in sys.stdin]
    todo = [s for s in sentences if s.strip()]
    if isinstance(ck.src_vocab, SubwordVocab):  # a word vocabulary's tokenizer does its own
        todo = [tidy_typed(s) for s in todo]
    if args.runtime == "onnx":
        return _print(sentences, _onnx(args.checkpoint, todo, parser))
    try:
        done = iter(evaluate.translate(ck.model, todo, ck.src_vocab, ck.tgt_vocab, beam_size=args.beam,
                                       length_penalty=args.length_penalty if args.beam > 1 else 0.0)) if todo else iter([])
    except (ValueError, TypeError) as e:
        parser.error(str(e))
    return _print(sentences, done)


def _print(sentences: list[str], done) -> list[str]:
    """One line per sentence: the next translation, or an empty line for an empty sentence."""
    out = [next(done) if s.strip() else "" for s in sentences]
    for line in out:
        print(line)
    return out


def _onnx(path: Path, todo: list[str], parser: argparse.ArgumentParser):
    """Greedy translations of ``todo`` by onnxruntime, from a fresh export of the checkpoint."""
    from .export import ExportedModel, export

    with tempfile.TemporaryDirectory(prefix="tx-onnx-") as folder:
        try:
            export(path, folder)
            return iter(ExportedModel(folder).translate(todo))
        except ImportError as e:
            parser.error(f"--runtime onnx needs onnx and onnxruntime ({e}); pip install -r requirements.txt.")


if __name__ == "__main__":
    main()
