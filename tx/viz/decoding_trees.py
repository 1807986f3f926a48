"""Decoding: next-word probabilities as bars, and the beams of a beam search as a tree.

Axes: V vocabulary size.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .style import MIN_FONT_PT, _new_ax, _tilt_crowded_xticklabels, _to_numpy, _token_text

__all__ = ["probability_bars", "beam_search_tree"]


def probability_bars(
    probs: Any,
    tokens: Sequence[str],
    ax: Axes | None = None,
    title: str | None = None,
    highlight: int | str | None = None,
    top_k: int | None = None,
) -> Axes:
    """Bar chart of a distribution probs [V] over ``tokens``; ``highlight`` marks one word.

    With ``top_k`` only the k most probable words are drawn, most probable first; a highlighted
    word outside them is not drawn.
    """
    p = _to_numpy(probs)
    if p.ndim != 1:
        raise ValueError(f"probs must be [V], got shape {tuple(p.shape)}")
    if len(tokens) != len(p):
        raise ValueError(f"tokens has {len(tokens)} labels but probs has {len(p)} entries")
    if isinstance(highlight, str):
        if highlight not in tokens:
            raise ValueError(f"highlight {highlight!r} is not one of the tokens")
        highlight = list(tokens).index(highlight)
    elif highlight is not None and not 0 <= highlight < len(p):
        raise ValueError(f"highlight index {highlight} out of range for {len(p)} tokens")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    order = np.arange(len(p))
    if top_k is not None:
        order = np.argsort(-p, kind="stable")[:top_k]  # (k,) most probable first
    ax = _new_ax(ax, (max(4.0, 0.65 * len(order) + 1.5), 3.5))
    colours = ["C1" if i == highlight else "C0" for i in order]
    bars = ax.bar(range(len(order)), p[order], color=colours)
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels([str(tokens[i]) for i in order])
    if len(order) <= 12:  # values above bars are legible only for a handful of words
        ax.bar_label(bars, fmt="%.2f", fontsize=MIN_FONT_PT, padding=2)
    ax.set_ylim(0.0, 1.0)
    ax.set_ylabel("probability")
    if title is not None:
        # room for the value label of a bar at 1: its 2 pt of padding and a 9 pt line
        ax.set_title(title, pad=16)
    # Words level where there is room; tilted where neighbours would touch, as long words
    # on a half-column panel do ("thanksstudent").
    _tilt_crowded_xticklabels(ax)
    return ax


def beam_search_tree(
    trace: Sequence[Sequence[Mapping[str, Any]]],
    tokens: Sequence[str] | Callable[[int], str],
    ax: Axes | None = None,
    title: str = "Beam search",
) -> Axes:
    """The tree beam search explored: x = step, y = rank, one box "token / score" per hypothesis.

    ``trace[t]`` lists the hypotheses after step t (``trace[0]`` is the single <bos> root), each a
    dict with "parent" (index into ``trace[t - 1]``, None for the root), "token", "score"
    (cumulative log-probability), "finished" and optionally "pruned" (considered, not kept).
    """
    if not trace or len(trace[0]) != 1 or trace[0][0].get("parent") is not None:
        raise ValueError("trace[0] must hold exactly one root hypothesis with parent None")
    for t in range(1, len(trace)):
        for i, node in enumerate(trace[t]):
            parent = node.get("parent")
            if parent is None or not 0 <= parent < len(trace[t - 1]):
                raise ValueError(f"trace[{t}][{i}] has parent {parent!r}, but step {t - 1} has "
                                 f"{len(trace[t - 1])} hypotheses")
    width = max(len(step) for step in trace)
    ax = _new_ax(ax, (1.5 + 1.35 * len(trace), 0.8 + 0.8 * width))
    for t, step in enumerate(trace):
        for i, node in enumerate(step):
            pruned = bool(node.get("pruned", False))
            if t > 0:
                # zorder 1: edges run under the opaque boxes, so they meet box edges cleanly.
                ax.plot([t - 1, t], [node["parent"], i], zorder=1,
                        color="0.75" if pruned else "0.35",
                        linestyle=":" if pruned else "-", linewidth=1.2)
            edge = "tab:green" if node.get("finished") else ("0.7" if pruned else "0.25")
            ax.text(t, i, f"{_token_text(tokens, node['token'])}\n{node['score']:.2f}",
                    ha="center", va="center", fontsize=9, zorder=2,
                    color="0.6" if pruned else "black",
                    bbox=dict(boxstyle="round,pad=0.3", facecolor="0.95" if pruned else "white",
                              edgecolor=edge, linewidth=2.0 if node.get("finished") else 1.0))
    ax.set_xlim(-0.5, len(trace) - 0.5)
    ax.set_ylim(width - 0.5, -0.5)  # rank 0 (the best) on top
    ax.set_xticks(range(len(trace)))
    ax.set_xlabel("step")
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    # Proxy handles, not drawn artists, so ax.lines holds exactly one line per edge.
    ax.legend(handles=[Patch(facecolor="white", edgecolor="tab:green", linewidth=2,
                             label="finished (<eos>)"),
                       Line2D([], [], color="0.75", linestyle=":", label="pruned")],
              loc="lower left", frameon=False, bbox_to_anchor=(0.0, 1.0),
              ncols=2)
    ax.set_title(title, pad=22)
    return ax
