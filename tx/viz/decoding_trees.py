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
    label_inside: float | None = None,
) -> Axes:
    """Bar chart of a distribution probs [V] over ``tokens``; ``highlight`` marks one word.

    With ``top_k`` only the k most probable words are drawn, most probable first; a highlighted
    word outside them is not drawn. With ``label_inside``, the value of a bar at least that
    tall is written inside its top, in white, where a label above it would meet the frame.
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
        values = p[order]
        inside = np.zeros(len(order), bool) if label_inside is None else values >= label_inside
        ax.bar_label(bars, labels=["" if i else f"{v:.2f}" for v, i in zip(values, inside)],
                     fontsize=MIN_FONT_PT, padding=2)
        if inside.any():
            # a negative padding puts the text's baseline below the bar's top: inside the bar
            ax.bar_label(bars, labels=[f"{v:.2f}" if i else "" for v, i in zip(values, inside)],
                         fontsize=MIN_FONT_PT, padding=-(MIN_FONT_PT + 4), color="white")
    ax.set_ylim(0.0, 1.0)
    ax.set_ylabel("probability")
    if title is not None:
        # room for the value label of a bar at 1: its 2 pt of padding and a 9 pt line
        ax.set_title(title, pad=16)
    # Words level where there is room; tilted where neighbours would touch, as long words
    # on a half-column panel do ("thanksstudent").
    _tilt_crowded_xticklabels(ax)
    return ax


def _path_of(trace: Sequence[Sequence[Mapping[str, Any]]], best: Sequence[int] | None) -> list[int]:
    """The index, step by step, of the nodes that spell ``best`` (as far as ``trace`` goes); [] without it."""
    if best is None:
        return []
    best = [int(t) for t in best]
    path = [0]
    for t in range(1, min(len(best), len(trace))):
        last = t == len(best) - 1
        matches = [i for i, node in enumerate(trace[t])
                   if node["parent"] == path[-1] and int(node["token"]) == best[t]
                   and not node.get("pruned", False) and bool(node.get("finished", False)) == last]
        if not matches:
            raise ValueError(f"best {best} is not a hypothesis of the trace: no node for its token {t}")
        path.append(matches[0])
    return path


def beam_search_tree(
    trace: Sequence[Sequence[Mapping[str, Any]]],
    tokens: Sequence[str] | Callable[[int], str],
    ax: Axes | None = None,
    title: str = "Beam search",
    best: Sequence[int] | None = None,
) -> Axes:
    """The tree beam search explored: x = step, y = rank, one box "token / score" per hypothesis.

    ``trace[t]`` lists the hypotheses after step t (``trace[0]`` is the single <bos> root), each a
    dict with "parent" (index into ``trace[t - 1]``, None for the root), "token", "score"
    (cumulative log-probability), "finished" and optionally "pruned" (considered, not kept) and
    "stopped" (kept, but the search ended at that step: drawn as pruned, since it was never extended).
    ``best``, the token ids of the hypothesis the search returned first (``<bos>`` included),
    draws that hypothesis's path on the top row, with bold edges, and the rest of each step
    below it in the trace's order; at the steps after its ``<eos>`` the top row stays empty.
    """
    if not trace or len(trace[0]) != 1 or trace[0][0].get("parent") is not None:
        raise ValueError("trace[0] must hold exactly one root hypothesis with parent None")
    for t in range(1, len(trace)):
        for i, node in enumerate(trace[t]):
            parent = node.get("parent")
            if parent is None or not 0 <= parent < len(trace[t - 1]):
                raise ValueError(f"trace[{t}][{i}] has parent {parent!r}, but step {t - 1} has "
                                 f"{len(trace[t - 1])} hypotheses")
    path = _path_of(trace, best)  # path[t]: the index in trace[t] of best's node
    # row[t][i]: where trace[t][i] is drawn; best's node first, the others in order. After
    # best's <eos> (the steps past its path) its row stays empty: nothing extends it there.
    after_best = len(path) if path else len(trace)  # the first step after best's <eos>
    row = [[i + (t >= after_best) for i in range(len(step))] for t, step in enumerate(trace)]
    for t, i in enumerate(path):
        order = [i] + [j for j in range(len(trace[t])) if j != i]
        row[t] = [order.index(j) for j in range(len(trace[t]))]
    width = max(max(r, default=0) for r in row) + 1
    ax = _new_ax(ax, (1.5 + 1.35 * len(trace), 0.8 + 0.8 * width))
    for t, step in enumerate(trace):
        for i, node in enumerate(step):
            pruned = bool(node.get("pruned", False) or node.get("stopped", False))
            on_path = t < len(path) and path[t] == i
            if t > 0:
                # zorder 1: edges run under the opaque boxes, so they meet box edges cleanly.
                ax.plot([t - 1, t], [row[t - 1][node["parent"]], row[t][i]], zorder=1,
                        color="0.75" if pruned else ("black" if on_path else "0.35"),
                        linestyle=":" if pruned else "-", linewidth=3.0 if on_path else 1.2)
            edge = "tab:green" if node.get("finished") else ("0.7" if pruned else "0.25")
            ax.text(t, row[t][i], f"{_token_text(tokens, node['token'])}\n{node['score']:.2f}",
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
    handles = [Patch(facecolor="white", edgecolor="tab:green", linewidth=2, label="finished (<eos>)"),
               Line2D([], [], color="0.75", linestyle=":", label="pruned")]
    if path:
        handles.append(Line2D([], [], color="black", linewidth=3.0, label="best, on top"))
    ax.legend(handles=handles, loc="lower left", frameon=False, bbox_to_anchor=(0.0, 1.0),
              ncols=len(handles))
    ax.set_title(title, pad=22)
    return ax
