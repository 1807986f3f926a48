"""Chapter 14's Vision Transformer on scikit-learn's digits: test accuracy and CPU time, seed by seed.

The chapter trains one seed (0) and asserts over 90% on the 360 held-out test digits;
this shows how much that figure moves with the seed of the weights, the dropout and the
batches, beside the logistic-regression baseline (which has no seed). CPU time is
``time.process_time`` of one thread, so a busy machine inflates it less than wall time.

    python bench/vit_digits.py --seeds 0 1 2 3 4
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import tx
from tx.train import TrainConfig
from tx.vision import VisionConfig, VisionTransformer, accuracy, fit_classifier, load_digits_split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()
    from sklearn.linear_model import LogisticRegression

    digits = load_digits_split(seed=0)
    train, test = digits["train"], digits["test"]
    baseline = LogisticRegression(max_iter=2000).fit(train.images.flatten(1).numpy(), train.labels.numpy())
    print(f"logistic regression: test accuracy {baseline.score(test.images.flatten(1).numpy(), test.labels.numpy()):.4f}")
    results = []
    for seed in args.seeds:
        torch.manual_seed(seed)
        model = VisionTransformer(VisionConfig.digits())
        config = TrainConfig(steps=args.steps, batch_size=64, warmup=200, lr_factor=1.0, label_smoothing=0.1,
                             eval_every=args.steps, seed=seed)  # the chapter's settings
        began = time.process_time()
        with tx.train.cpu_threads(1):
            fit_classifier(model, train, digits["valid"], config, progress=False)
        cpu = time.process_time() - began
        results.append(accuracy(model, test))
        print(f"seed {seed}: test accuracy {results[-1]:.4f} ({round((1 - results[-1]) * len(test.labels))} wrong), "
              f"{cpu:.1f} CPU-s for {args.steps} steps", flush=True)
    print(f"ViT over {len(results)} seeds: mean {statistics.mean(results):.4f}, min {min(results):.4f}, "
          f"max {max(results):.4f}")


if __name__ == "__main__":
    main()
