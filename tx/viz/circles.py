"""A positional encoding's sine/cosine pairs as points on circles, where a shift is a turn.

Axes: P positions, D d_model (embedding dimension).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from .style import figure_size, _to_numpy

__all__ = ["pair_circles"]


def pair_circles(
    pe: Any,
    pairs: Sequence[int] = (0, 16, 64),
    shift: int = 3,
    starts: Sequence[int] = (0, 5),
    n_positions: int = 16,
    zoom: Sequence[int] = (),
    height: float = 3.5,
) -> Figure:
    """One panel per pair i of pe [P, D]: positions 0 to ``n_positions - 1`` as points
    (cos, sin) = (pe[pos, 2i + 1], pe[pos, 2i]) on the unit circle, coloured from dark to
    light, with an arrow for a shift by ``shift`` positions from each of ``starts``.

    The arrows turn by the same angle, shift * omega_i (omega_i = 1 / 10000^(2i / D)),
    wherever they start. A pair in ``zoom`` turns so little that its dots crowd a quarter
    of the circle: its panel shows that quarter, its arrows just outside the arc and its
    labels inside.
    """
    table = _to_numpy(pe)
    if table.ndim != 2:
        raise ValueError(f"pe must be [positions, d_model], got shape {tuple(table.shape)}")
    d_model = table.shape[1]
    bad = [p for p in pairs if not 0 <= 2 * p + 1 < d_model]
    if bad:
        raise ValueError(f"pairs {bad} out of range for d_model = {d_model}")
    if max(starts) + shift >= n_positions or n_positions > table.shape[0]:
        raise ValueError(f"positions {list(starts)} + {shift} must be below n_positions = "
                         f"{n_positions}, at most the table's {table.shape[0]}")
    labelled = sorted({s for start in starts for s in (start, start + shift)})
    fig, axes = plt.subplots(1, len(pairs), figsize=figure_size(height), layout="constrained",
                             squeeze=False)
    for ax, pair in zip(axes[0], pairs):
        zoomed = pair in zoom
        # the frame's edge, the arrows' radius, the labels' push away from the circle (pt)
        edge, arrow_r, push = (1.3, 1.12, -12) if zoomed else (1.55, 1.0, 12)
        omega = 1 / 10000 ** (2 * pair / d_model)
        points = table[:n_positions, 2 * pair: 2 * pair + 2]  # (P, 2): (sin, cos)
        ax.add_patch(plt.Circle((0, 0), 1, fill=False, color="0.8"))
        ax.scatter(points[:, 1], points[:, 0], c=range(n_positions), cmap="viridis", zorder=3)
        for start in starts:
            ax.annotate("", xy=arrow_r * points[start + shift][::-1],  # (cos, sin)
                        xytext=arrow_r * points[start][::-1],
                        arrowprops=dict(arrowstyle="->", color="tab:red", linewidth=1.5))
        for pos in labelled:
            y, x = points[pos].tolist()
            ax.annotate(str(pos), (x, y), xytext=(push * x, push * y), textcoords="offset points",
                        ha="center", va="center")
        ticks = (0, 0.5, 1) if zoomed else (-1, 0, 1)
        ax.set(  # room for the labels inside the frame, clear of the title
            xlim=(-0.1 if zoomed else -edge, edge),
            ylim=(-0.1 if zoomed else -edge, edge),
            xticks=ticks,
            yticks=ticks,
            aspect="equal",
            xlabel=f"PE[pos, {2 * pair + 1}] (cos)",
            ylabel=f"PE[pos, {2 * pair}] (sin)",
            title=f"pair {pair}: ω = {omega:.3f}\nk ω = {shift * omega:.2f} rad",
        )
    fig.suptitle(f"positions 0 (dark) to {n_positions - 1} (light) on each pair's circle;\n"
                 f"every red arrow is the same shift, k = {shift}")
    return fig
