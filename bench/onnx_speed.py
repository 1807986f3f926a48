"""Greedy translation with tx (torch, key/value cache) against onnxruntime on the exported graphs.

The book's model translates the first N sentences of its test split one at a time (as a web page
does), each runtime in turn, round after round; prints the median per-sentence time of each and
their ratio, after checking that both give the same translations. onnxruntime runs on one
thread, as onnxruntime-web does in the page; torch on the thread count given.

    python bench/onnx_speed.py [--sentences 100] [--rounds 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import torch

import tx
from tx.export import ExportedModel, export


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    ck = tx.checkpoint.load(tx.checkpoint.BOOK_MODEL)
    sentences = [fr for fr, _ in tx.data.load_corpus().test[: args.sentences]]
    folder = tempfile.mkdtemp(prefix="tx-onnx-bench-")
    export(tx.checkpoint.BOOK_MODEL, folder, force=True)
    onnx = ExportedModel(folder)

    def with_tx() -> list[str]:
        return [tx.evaluate.translate(ck.model, [s], ck.src_vocab, ck.tgt_vocab)[0] for s in sentences]

    def with_onnx() -> list[str]:
        return onnx.translate(sentences)

    assert with_tx() == with_onnx(), "the two runtimes disagree"
    times: dict[str, list[float]] = {"tx": [], "onnx": []}
    for _ in range(args.rounds):
        for name, fn in (("tx", with_tx), ("onnx", with_onnx)):
            start = time.process_time()  # CPU time: the machine is shared
            fn()
            times[name].append((time.process_time() - start) / len(sentences) * 1e3)
    tx_ms, onnx_ms = statistics.median(times["tx"]), statistics.median(times["onnx"])
    print(f"{len(sentences)} sentences, one at a time, {args.rounds} rounds, CPU time per sentence (median):")
    print(f"tx (torch, cache, {args.threads} thread(s)): {tx_ms:.2f} ms   onnxruntime (1 thread, no cache): {onnx_ms:.2f} ms   "
          f"tx / onnx = {tx_ms / onnx_ms:.2f}x")


if __name__ == "__main__":
    main()
