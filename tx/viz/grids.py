"""Several panels of one kind side by side: next-word distributions step by step, and small
vectors [N, D] compared on one colour scale.

Axes: V vocabulary size, N number of small vectors, D their size.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .decoding_trees import probability_bars
from .style import _to_numpy, figure_size
from .tensors import vector_boxes

__all__ = ["probability_grid", "share_scale", "vector_panels"]


def probability_grid(
    dists: Sequence[Any],
    tokens: Sequence[str],
    titles: Sequence[str],
    highlight: Sequence[int] | None = None,
    top_k: int | None = None,
    label_inside: float | None = None,
    ncols: int = 3,
    row_height: float = 2.9,
    tick_rotation: float | None = None,
) -> Figure:
    """One ``probability_bars`` panel per distribution [V] of ``dists``, ``ncols`` a row.

    ``highlight`` marks one word per panel (by default each panel's most probable word);
    ``top_k`` and ``label_inside`` are probability_bars'. Only the first column keeps its
    "probability" label, and a last row's empty places are left blank, not drawn as empty
    panels. ``tick_rotation`` tilts every panel's words by that many degrees.
    """
    n = len(dists)
    if n < 1 or len(titles) != n:
        raise ValueError(f"need at least one distribution and one title each, got {n} and {len(titles)}")
    if highlight is not None and len(highlight) != n:
        raise ValueError(f"highlight has {len(highlight)} entries for {n} distributions")
    if ncols < 1:
        raise ValueError(f"ncols must be at least 1, got {ncols}")
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=figure_size(row_height * nrows),
                             layout="constrained", squeeze=False)
    for i, ax in enumerate(axes.flat):
        if i >= n:
            ax.remove()  # an empty panel would read as a missing step
            continue
        p = dists[i]
        probability_bars(p, tokens, ax=ax, top_k=top_k, label_inside=label_inside, title=titles[i],
                         highlight=int(np.argmax(_to_numpy(p))) if highlight is None else highlight[i])
        if tick_rotation is not None:
            plt.setp(ax.get_xticklabels(), rotation=tick_rotation, ha="right")
        if i % ncols:
            ax.set_ylabel("")
    return fig


def share_scale(axes: Sequence[Axes], limit: float | None = None) -> float:
    """Put ``vector_boxes`` panels on one colour scale, [-limit, limit], so that a shade means
    the same number in every panel; return ``limit`` (by default the largest absolute value shown).

    The numbers in the boxes are recoloured for the new scale: white on the darkest boxes
    (absolute value above 0.6 limit), black on the others.
    """
    axes = list(axes)
    meshes = [ax.collections[0] for ax in axes]
    if limit is None:
        limit = max(mesh.norm.vmax for mesh in meshes)
    for ax, mesh in zip(axes, meshes):
        mesh.set_clim(-limit, limit)
        for text in ax.texts:
            text.set_color("white" if abs(float(text.get_text())) > 0.6 * limit else "black")
    return limit


def vector_panels(
    panels: Mapping[str, Any],
    row_labels: Sequence[str],
    nrows: int,
    ncols: int = 1,
    height: float = 6.0,
    label: str = "value",
) -> Figure:
    """Small vectors [N, D] per panel, titled by ``panels``' keys, on one colour scale with one
    colour bar named ``label``: panels the text adds or compares. ``height`` in inches."""
    if len(panels) != nrows * ncols:
        raise ValueError(f"{len(panels)} panels for a grid of {nrows} x {ncols}")
    fig, axes = plt.subplots(nrows, ncols, figsize=figure_size(height), layout="constrained")
    axes = np.atleast_1d(axes)
    for ax, (title, values) in zip(axes.flat, panels.items()):
        vector_boxes(values, row_labels, ax=ax, title=title)
    share_scale(axes.flat)
    fig.colorbar(axes.flat[0].collections[0], ax=axes, shrink=0.8, label=label)
    return fig
