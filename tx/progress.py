"""The progress of a training run: a bar in Jupyter and in a terminal, a few plain lines in a log file.

``tx.train.fit`` and ``tx.vision.fit_classifier`` draw their progress with :func:`progress_bar`.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any

__all__ = ["progress_bar", "LogProgress"]


def progress_bar(total: int, enabled: bool, initial: int = 0, minutes: float | None = None):
    """One bar that redraws itself: a widget in Jupyter, one line in a terminal; a few lines in a log file.

    A text bar written to a file (``python -m tx.train ... 2> log``) would leave one line
    per redraw, thousands in all; there a line every tenth of the run (of its steps, or of
    its time budget) is printed instead.
    """
    if not enabled or "ipykernel" in sys.modules or sys.stderr.isatty():
        from tqdm.auto import tqdm

        return tqdm(total=total, initial=initial, desc="training", unit="step", disable=not enabled, mininterval=0.5)
    return LogProgress(total, initial, minutes)


class LogProgress:
    """The part of tqdm's interface fit uses, printing a plain line every tenth of the run."""

    def __init__(self, total: int, initial: int = 0, minutes: float | None = None, lines: int = 10) -> None:
        self.total, self.n, self.every = total, initial, max(1, total // lines)
        self.seconds = math.inf if minutes is None else 60 * minutes / lines
        self.postfix, self.began, self.start, self.last = "", time.perf_counter(), initial, time.perf_counter()

    def update(self, n: int = 1) -> None:
        self.n += n
        if self.n % self.every == 0 or time.perf_counter() - self.last >= self.seconds:
            self._print()

    def set_postfix(self, **values: Any) -> None:
        self.postfix = ", ".join(f"{k}={v}" for k, v in values.items())

    def close(self) -> None:
        if self.n % self.every:
            self._print()

    def _print(self) -> None:
        took = time.perf_counter() - self.began
        rate = (self.n - self.start) / took if took > 0 else 0.0
        self.last = time.perf_counter()
        print(f"training: step {self.n}/{self.total}, {took:.0f} s, {rate:.1f} steps/s, {self.postfix}",
              file=sys.stderr, flush=True)
