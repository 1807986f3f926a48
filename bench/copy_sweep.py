"""Which copying recipe to retrain chapter 12's checkpoint with: several `python -m tx.train --tsv`
runs of a fixed number of steps, side by side, then bench/copy_names.py on all of them.

    python bench/copy_sweep.py --steps 3900 --jobs 8 --out runs/sweep   # on a GPU: minutes

A CPU run of the book's 10-minute budget makes about 3,900 steps with a vocabulary a language
(today's 2-core machine) and 23% fewer with --shared-vocab (a larger output layer), so the
shared runs get that many fewer steps: each run is what 10 CPU minutes would reach, but on a
GPU all of them take a few minutes. The "cv names" run swaps names for made-up ones of
consonant-vowel syllables only (tx.copying before this sweep) to see what the richer
syllables add.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

SHARED_STEP_COST = 1.23  # a --shared-vocab step over a two-vocabulary step, measured side by side (bench/README)

# name: (arguments, shared vocabulary?, made-up names of consonant-vowel syllables only?)
RUNS = {
    "two_c0": ([], False, False),
    "two_c4_cv": (["--copy-pairs", "4"], False, True),
    "two_c4": (["--copy-pairs", "4"], False, False),
    "two_c4_n40": (["--copy-pairs", "4", "--copy-numbers", "40"], False, False),
    "two_c2_n40": (["--copy-pairs", "2", "--copy-numbers", "40"], False, False),
    "two_c8_n40": (["--copy-pairs", "8", "--copy-numbers", "40"], False, False),
    "shared_c4_n40": (["--copy-pairs", "4", "--copy-numbers", "40", "--shared-vocab", "--vocab-size", "8000"],
                      True, False),
    "shared4k_c4_n40": (["--copy-pairs", "4", "--copy-numbers", "40", "--shared-vocab", "--vocab-size", "4000"],
                        True, False),
    "two_c4_n40_seed1": (["--copy-pairs", "4", "--copy-numbers", "40", "--seed", "1"], False, False),
    "two_c4_n20": (["--copy-pairs", "4", "--copy-numbers", "20"], False, False),
    "two_c6_n60": (["--copy-pairs", "6", "--copy-numbers", "60"], False, False),
    "shared_c0": (["--shared-vocab", "--vocab-size", "8000"], True, False),
    "shared_c2_n40": (["--copy-pairs", "2", "--copy-numbers", "40", "--shared-vocab", "--vocab-size", "8000"],
                      True, False),
    "shared_c8_n40": (["--copy-pairs", "8", "--copy-numbers", "40", "--shared-vocab", "--vocab-size", "8000"],
                      True, False),
    "shared_c4_n40_seed1": (["--copy-pairs", "4", "--copy-numbers", "40", "--shared-vocab", "--vocab-size", "8000",
                             "--seed", "1"], True, False),
    "shared6k_c4_n40": (["--copy-pairs", "4", "--copy-numbers", "40", "--shared-vocab", "--vocab-size", "6000"],
                        True, False),
}

CV_NAMES = """
import random, sys, tx.copying as c
syllables = [a + b for a in "bdfgklmnprstvz" for b in "aeiou"]
def cv(word, rng):
    if word.isdigit():
        digits = rng.randint(1, 4)
        return str(rng.randrange(10 ** (digits - 1) if digits > 1 else 0, 10 ** digits))
    return "".join(rng.choice(syllables) for _ in range(rng.randint(2, 3))).capitalize()
c._replacement = cv
from tx.cli.train import main
main(sys.argv[1:])
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tsv", type=Path, default=Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
                        / "tatoeba-eng-fra-75k.tsv")
    parser.add_argument("--steps", type=int, default=3900, help="steps of a two-vocabulary run")
    parser.add_argument("--jobs", type=int, default=len(RUNS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--minutes", type=float, default=60, help="each run stops here if its steps are not done")
    parser.add_argument("--out", type=Path, default=Path("runs/sweep"))
    parser.add_argument("--only", nargs="+", choices=list(RUNS))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    names = args.only or list(RUNS)
    waiting, running, start = list(names), {}, time.time()
    while waiting or running:
        while waiting and len(running) < args.jobs:
            name = waiting.pop(0)
            extra, shared, cv = RUNS[name]
            steps = round(args.steps / SHARED_STEP_COST) if shared else args.steps
            cmd = ["--tsv", str(args.tsv), "--out", str(args.out / f"{name}.safetensors"), "--force",
                   "--steps", str(steps), "--minutes", str(args.minutes), "--threads", str(args.threads), *extra]
            cmd = [sys.executable, "-c", CV_NAMES, *cmd] if cv else [sys.executable, "-m", "tx.train", *cmd]
            log = open(args.out / f"{name}.log", "w")
            running[name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        for name, proc in list(running.items()):
            if proc.poll() is not None:
                print(f"{time.time() - start:6.0f} s  {name}: exit {proc.returncode}", flush=True)
                del running[name]
        time.sleep(2)
    done = [str(args.out / f"{n}.safetensors") for n in names if (args.out / f"{n}.safetensors").exists()]
    here = Path(__file__).resolve()
    subprocess.run([sys.executable, str(here.with_name("copy_names.py")), *done], check=True,
                   env=os.environ | {"PYTHONPATH": str(here.parents[1])})


if __name__ == "__main__":
    main()
