"""Does retraining with the book's recipe reproduce the committed checkpoint bit for bit?

Trains the book's model as `python -m tx.train` does (corpus seed 0, torch.manual_seed(0),
default TrainConfig) with a given number of CPU threads, then compares the weights with
tx/checkpoints/fr_en_small.safetensors and evaluates on the test split.

    PYTHONPATH=$PWD .venv/bin/python bench/train_reproduce.py --threads 1 2
"""

from __future__ import annotations

import argparse
import json
import time

import torch

import tx


def retrain(threads: int) -> dict:
    torch.set_num_threads(threads)
    corpus = tx.data.load_corpus(seed=0)
    ck = tx.checkpoint.load()
    torch.manual_seed(0)
    model = tx.Transformer.from_config(tx.TransformerConfig.small(len(corpus.src_vocab), len(corpus.tgt_vocab)))
    start = time.perf_counter()
    history = tx.train.fit(model, corpus.train, corpus.valid, corpus.src_vocab, corpus.tgt_vocab,
                           tx.train.TrainConfig(), progress=False)
    seconds = time.perf_counter() - start
    max_diff = max((a - b).abs().max().item() for a, b in zip(model.state_dict().values(), ck.model.state_dict().values()))
    scores = tx.evaluate.evaluate(model, corpus.test, corpus.src_vocab, corpus.tgt_vocab)
    return {"threads": threads, "seconds": round(seconds, 1), "max_weight_diff": max_diff,
            "final_valid_loss": history["valid_loss"][-1], "test": scores,
            "checkpoint_test": ck.info["test"], "checkpoint_final_valid_loss": ck.info["final_valid_loss"]}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1])
    for n in parser.parse_args().threads:
        print(json.dumps(retrain(n)), flush=True)
