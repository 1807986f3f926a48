"""Training curves: the loss of a run (train, smoothed, and validation) and a learning-rate schedule."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes

from .style import _new_ax, _to_numpy

__all__ = ["loss_curves", "lr_schedule"]


def _smooth(values: np.ndarray, weight: float = 0.9) -> np.ndarray:
    """Exponential moving average, bias-corrected so the first points are not pulled to 0."""
    out = np.empty_like(values, dtype=float)
    avg = 0.0
    for i, x in enumerate(values):
        avg = weight * avg + (1.0 - weight) * x
        out[i] = avg / (1.0 - weight ** (i + 1))
    return out


def loss_curves(
    history: Mapping[str, Sequence[float]],
    ax: Axes | None = None,
    title: str = "Loss",
    legend: Mapping[str, Any] | None = None,
) -> Axes:
    """Train loss (raw and smoothed), valid loss (markers) and, if logged, lr against step.

    ``legend`` holds keyword arguments for ``ax.legend`` (``loc``, ``bbox_to_anchor``, ...),
    for a caller who knows where its curves leave room; the default is the upper right.
    """
    for key in ("step", "train_loss"):
        if key not in history:
            raise ValueError(f"history is missing the key {key!r}")
    steps = np.asarray(history["step"])
    train = np.asarray(history["train_loss"], dtype=float)
    if len(steps) != len(train):
        raise ValueError(f"history has {len(steps)} steps but {len(train)} train_loss values")
    has_valid = "valid_step" in history or "valid_loss" in history
    if has_valid:
        for key in ("valid_step", "valid_loss"):
            if key not in history:
                raise ValueError(f"history is missing the key {key!r} (needed with valid data)")
        if len(history["valid_step"]) != len(history["valid_loss"]):
            raise ValueError("history['valid_step'] and history['valid_loss'] differ in length")
    ax = _new_ax(ax, (7.0, 4.0))
    ax.plot(steps, train, color="C0", linewidth=0.8, alpha=0.35, label="train")
    ax.plot(steps, _smooth(train), color="C0", linewidth=2.0, label="train (smoothed)")
    if has_valid:
        ax.plot(history["valid_step"], history["valid_loss"], "o", color="C1", label="valid")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if "lr" in history:
        if len(history["lr"]) != len(steps):
            raise ValueError(f"history has {len(steps)} steps but {len(history['lr'])} lr values")
        lr_ax = ax.twinx()
        lr_ax.plot(steps, history["lr"], color="C2", linewidth=1.2, linestyle="--",
                   label="learning rate")
        lr_ax.set_ylabel("learning rate", color="C2")
        lr_ax.tick_params(axis="y", colors="C2")
        lr_ax.set_ylim(bottom=0)
        lr_handles, lr_labels = lr_ax.get_legend_handles_labels()
        handles, labels = handles + lr_handles, labels + lr_labels
    # One legend for both y axes, on the main Axes so callers find it where they expect.
    ax.legend(handles, labels, **({"loc": "upper right"} | dict(legend or {})))
    return ax


def lr_schedule(
    steps: Any,
    lrs: Any,
    ax: Axes | None = None,
    title: str = "Learning-rate schedule",
) -> Axes:
    """Learning rate against step, with the peak marked."""
    s, lr = _to_numpy(steps), _to_numpy(lrs)
    if s.shape != lr.shape or s.ndim != 1:
        raise ValueError(f"steps and lrs must be 1-d of equal length, got shapes {s.shape} "
                         f"and {lr.shape}")
    ax = _new_ax(ax, (7.0, 3.5))
    ax.plot(s, lr, color="C0")
    peak = int(np.argmax(lr))
    # Warm-up schedules are read by where the peak is, so say it rather than make readers guess.
    ax.scatter([s[peak]], [lr[peak]], color="C1", zorder=3)
    # right of the peak and just above its height: the decay that follows is all below it
    ax.annotate(f"peak {lr[peak]:.2e} at step {s[peak]:g}", (s[peak], lr[peak]),
                xytext=(8, 3), textcoords="offset points", va="bottom", fontsize=9)
    ax.set_xlabel("step")
    ax.set_ylabel("learning rate")
    ax.set_ylim(bottom=0, top=lr.max() * 1.1 if lr.max() > 0 else 1.0)
    ax.ticklabel_format(axis="y", style="sci", scilimits=(-2, 3))
    ax.set_title(title)
    ax.grid(alpha=0.3)
    return ax
