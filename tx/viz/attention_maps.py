"""Attention weights as heatmaps: one head [Tq, Tk], or every head of a layer [H, Tq, Tk] as a grid.

Axes: H heads, Tq query positions (rows), Tk key positions (columns).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.image import AxesImage

from .style import ATTENTION_CMAP, COLUMN_WIDTH, _check_labels, _new_ax, _text_colour, _to_numpy

__all__ = ["attention_heatmap", "attention_grid"]


def _draw_attention(
    ax: Axes,
    w: np.ndarray,
    query_tokens: Sequence[str] | None,
    key_tokens: Sequence[str] | None,
    annotate: bool,
    cmap: str,
) -> AxesImage:
    """Draw one [Tq, Tk] weight matrix on ``ax`` with tick labels; return the AxesImage."""
    n_q, n_k = w.shape
    # Weights are probabilities, so a fixed [0, 1] scale makes heads and layers comparable.
    im = ax.imshow(w, cmap=cmap, vmin=0.0, vmax=1.0, interpolation="nearest")
    ax.set_yticks(range(n_q))
    ax.set_xticks(range(n_k))
    if query_tokens is not None:
        ax.set_yticklabels([str(t) for t in query_tokens])
    if key_tokens is not None:
        ax.set_xticklabels([str(t) for t in key_tokens])
    ax.tick_params(axis="x", labelrotation=90)
    ax.set_xlabel("key")
    ax.set_ylabel("query")
    if annotate:
        for i in range(n_q):
            for j in range(n_k):
                ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center", fontsize=9,
                        color=_text_colour(w[i, j], 0.0, 1.0, cmap))
    return im


def attention_heatmap(
    weights: Any,
    query_tokens: Sequence[str] | None = None,
    key_tokens: Sequence[str] | None = None,
    ax: Axes | None = None,
    title: str | None = None,
    annotate: bool = False,
    cmap: str = ATTENTION_CMAP,
    label: str = "weight",
    xlabel: str = "key",
    ylabel: str = "query",
    colorbar: str = "right",
) -> Axes:
    """Heatmap of one head's attention weights [Tq, Tk]: rows are queries, columns keys.

    ``label`` names the colour bar: "weight" for attention weights; a mask drawn on the same
    grid says what its 1 and 0 mean. ``xlabel`` and ``ylabel`` say what the keys and queries
    are ("French token (key)"). ``colorbar="bottom"`` puts the colour bar under the map, where
    a map of one row leaves room for it.
    """
    if colorbar not in ("right", "bottom"):
        raise ValueError(f'colorbar must be "right" or "bottom", got {colorbar!r}')
    w = _to_numpy(weights)
    if w.ndim != 2:
        raise ValueError(f"weights must be [Tq, Tk] (one head), got shape {tuple(w.shape)}")
    n_q, n_k = w.shape
    _check_labels(query_tokens, n_q, "query_tokens", "query rows")
    _check_labels(key_tokens, n_k, "key_tokens", "key columns")
    ax = _new_ax(ax, (max(3.8, 1.6 + 0.45 * n_k), max(3.2, 1.2 + 0.45 * n_q)))
    im = _draw_attention(ax, w, query_tokens, key_tokens, annotate, cmap)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if colorbar == "right":
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label=label)
    else:
        ax.figure.colorbar(im, ax=ax, location="bottom", shrink=0.6, aspect=40, label=label)
    ax.set_title(title if title is not None else "Attention weights")
    return ax


def attention_grid(
    weights: Any,
    query_tokens: Sequence[str] | None = None,
    key_tokens: Sequence[str] | None = None,
    ncols: int = 4,
    titles: Sequence[str] | None = None,
    fig: Figure | None = None,
    suptitle: str | None = None,
) -> Figure:
    """One heatmap per head of weights [H, Tq, Tk] (or [Tq, Tk]), sharing one [0, 1] colour bar.

    ``ncols`` is the most columns; on a new figure there are fewer when that many panels would
    not fit the column width, and the heads wrap onto more rows.
    """
    w = _to_numpy(weights)
    if w.ndim == 2:
        w = w[None]  # (1, Tq, Tk)
    if w.ndim != 3:
        raise ValueError(f"weights must be [H, Tq, Tk] or [Tq, Tk], got shape {tuple(w.shape)}")
    n_heads, n_q, n_k = w.shape
    _check_labels(query_tokens, n_q, "query_tokens", "query rows")
    _check_labels(key_tokens, n_k, "key_tokens", "key columns")
    if titles is not None and len(titles) != n_heads:
        raise ValueError(f"titles has {len(titles)} entries but weights have {n_heads} heads")
    if ncols < 1:
        raise ValueError(f"ncols must be at least 1, got {ncols}")
    cell = 0.18 * max(n_q, n_k) + 0.9  # inches a panel needs: a 9-pt label per row, ticks
    ncols = min(ncols, n_heads)
    if fig is None:
        # No more columns than fit the text column: more heads make more rows, not a strip.
        ncols = max(1, min(ncols, int((COLUMN_WIDTH - 1.2) // cell)))
    nrows = math.ceil(n_heads / ncols)
    if fig is None:
        width = min(COLUMN_WIDTH, ncols * cell + 1.2)
        fig = plt.figure(figsize=(width, nrows * cell + 0.6), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    im, live = None, []
    for h, ax in enumerate(axes.flat):
        if h >= n_heads:
            ax.remove()  # an empty cell in the last row would read as a missing head
            continue
        live.append(ax)
        im = _draw_attention(ax, w[h], query_tokens, key_tokens, False, ATTENTION_CMAP)
        ax.set_title(titles[h] if titles is not None else f"head {h + 1}")
        col = h % ncols
        # Outer axes only: the bottom axis of each column, and the first column.
        if h + ncols < n_heads:
            ax.tick_params(axis="x", labelbottom=False)
            ax.set_xlabel("")
        if col > 0:
            ax.tick_params(axis="y", labelleft=False)
            ax.set_ylabel("")
    fig.colorbar(im, ax=live, label="weight", shrink=0.9)
    if suptitle is not None:
        fig.suptitle(suptitle)
    return fig
