"""The book model's test split decoded, greedy and beam 4, on the CPU and (where there is one) a GPU.

    python bench/device_decode.py

Prints each device's seconds and sentences per second for the 600 test sentences
(``tx.evaluate.translate``, batches of 128), after a warm-up of 32 sentences.
"""

import time

import torch

import tx
from tx import data


def main():
    sentences = [fr for fr, _ in data.load_corpus(seed=0).test]
    for dev in ["cpu"] + (["cuda"] if torch.cuda.is_available() else []):
        book = tx.checkpoint.load(device=dev)
        for beam in (1, 4):
            def run(s):
                out = tx.evaluate.translate(book.model, s, book.src_vocab, book.tgt_vocab, beam_size=beam)
                if dev == "cuda":
                    torch.cuda.synchronize()
                return out

            run(sentences[:32])
            start = time.perf_counter()
            run(sentences)
            seconds = time.perf_counter() - start
            print(f"{dev} beam {beam}: {len(sentences)} sentences in {seconds:.2f} s, "
                  f"{len(sentences) / seconds:.0f} sentences/s, threads={torch.get_num_threads()}")


if __name__ == "__main__":
    main()
