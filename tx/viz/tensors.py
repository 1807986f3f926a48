"""Pictures of tensors: a positional-encoding table [P, D], its curves, and small vectors [N, D] as boxes.

Axes: P positions, D d_model (embedding dimension), N number of small vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes

from .style import COLUMN_WIDTH, SIGNED_CMAP, _new_ax, _text_colour, _to_numpy

__all__ = ["positional_encoding_heatmap", "encoding_curves", "vector_boxes"]


def positional_encoding_heatmap(
    pe: Any,
    ax: Axes | None = None,
    title: str = "Positional encoding",
    max_dims: int | None = None,
) -> Axes:
    """Heatmap of a positional-encoding table pe [P, D]: x = dimension, y = position."""
    table = _to_numpy(pe)
    if table.ndim != 2:
        raise ValueError(f"pe must be [positions, d_model], got shape {tuple(table.shape)}")
    if max_dims is not None:
        table = table[:, :max_dims]  # (P, min(D, max_dims))
    ax = _new_ax(ax, (COLUMN_WIDTH, 4.0))
    # aspect="auto": tables are often 100 x 512, which at equal aspect is a thin sliver.
    im = ax.imshow(table, cmap=SIGNED_CMAP, vmin=-1.0, vmax=1.0, aspect="auto",
                   interpolation="nearest")
    ax.figure.colorbar(im, ax=ax, label="value")
    ax.set_xlabel("embedding dimension")
    ax.set_ylabel("position")
    ax.yaxis.set_major_locator(plt.MaxNLocator(integer=True))  # positions are whole numbers
    ax.set_title(title)
    return ax


def encoding_curves(
    pe: Any,
    dims: Sequence[int] = (4, 5, 6, 7),
    ax: Axes | None = None,
) -> Axes:
    """pe[:, d] against position for a few dimensions d of pe [P, D]: a dot at each whole
    position (the only places a word can be), joined by lines."""
    table = _to_numpy(pe)
    if table.ndim != 2:
        raise ValueError(f"pe must be [positions, d_model], got shape {tuple(table.shape)}")
    bad = [d for d in dims if not 0 <= d < table.shape[1]]
    if bad:
        raise ValueError(f"dims {bad} out of range for d_model = {table.shape[1]}")
    ax = _new_ax(ax, (COLUMN_WIDTH, 3.5))
    positions = np.arange(table.shape[0])
    for d in dims:
        # dots: a fast pair's wave is sampled a few times a turn, and the line alone zig-zags
        ax.plot(positions, table[:, d], marker=".", markersize=4, linewidth=1, label=f"dim {d}")
    ax.set_xlabel("position")
    ax.set_ylabel("encoding value")
    ax.set_ylim(-1.1, 1.1)
    ax.set_title("Positional encoding, a few dimensions")
    # Outside the plot: sinusoids fill the whole box, so any inside corner would hide a curve.
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return ax


# --------------------------------------------------------------------------- small vectors


def vector_boxes(
    vectors: Any,
    row_labels: Sequence[str] | None = None,
    ax: Axes | None = None,
    title: str | None = None,
    cmap: str = SIGNED_CMAP,
    annotate: bool = True,
    fmt: str = "{:.2f}",
) -> Axes:
    """Small vectors [N, D] (or one [D]) as rows of coloured boxes with their values written in."""
    v = _to_numpy(vectors)
    if v.ndim == 1:
        v = v[None]  # (1, D)
    if v.ndim != 2:
        raise ValueError(f"vectors must be [n, d] or [d], got shape {tuple(v.shape)}")
    n, d = v.shape
    if row_labels is not None and len(row_labels) != n:
        raise ValueError(f"row_labels has {len(row_labels)} labels but vectors have {n} rows")
    ax = _new_ax(ax, (0.9 + 0.62 * d, 0.5 + 0.45 * n + (0.3 if title else 0.0)))
    # Symmetric about 0 so the sign reads from the hue alone (red below 0, blue above).
    limit = float(np.abs(v).max()) or 1.0
    ax.pcolormesh(v, cmap=cmap, vmin=-limit, vmax=limit,
                  edgecolors="white", linewidth=2)
    ax.set_aspect("equal")
    ax.invert_yaxis()  # row 0 on top, as the vectors are listed
    ax.set_xticks([])
    ax.set_yticks(np.arange(n) + 0.5)
    ax.set_yticklabels([str(s) for s in row_labels] if row_labels is not None else range(n))
    ax.tick_params(axis="y", length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    if annotate:
        for i in range(n):
            for j in range(d):
                ax.text(j + 0.5, i + 0.5, fmt.format(v[i, j]), ha="center", va="center",
                        fontsize=9, color=_text_colour(v[i, j], -limit, limit, cmap))
    if title is not None:
        ax.set_title(title)
    return ax
