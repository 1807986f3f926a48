"""The book's figure style and size rule, and the helpers every drawing module of tx.viz shares.

Colour conventions, the same in every chapter: ``viridis`` on [0, 1] for attention weights and
probabilities, ``RdBu`` on a range symmetric about 0 for signed values. The size rule is
stated in :mod:`tx.viz`; ``figure_problems(fig)`` says where a figure breaks it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

__all__ = [
    "COLUMN_WIDTH", "DPI", "MIN_FONT_PT", "BOOK_STYLE", "use_book_style", "figure_size", "grid_shape", "subplots",
    "figure_problems",
]


ATTENTION_CMAP = "viridis"
SIGNED_CMAP = "RdBu"

COLUMN_WIDTH = 7.0  # inches: 672 px at DPI, a figure's room in the text column at 1280 px
DPI = 96  # dots per inch of every figure, in the notebook and on the website (CSS's own 96)
MIN_FONT_PT = 9.0  # the smallest text a figure may hold (12 px at DPI)
# White margin around a figure saved with bbox_inches="tight", as the notebook's inline
# backend and tx.explorer save every figure: no more than constrained layout keeps free at
# each edge (3 pt, 0.0417 in), so a 7-inch figure stays 672 px wide, where matplotlib's
# 0.1 in made it 683 px and the page shrank it, blurring its text.
SAVE_PAD_INCHES = 0.04
MIN_LABEL_GAP_PT = 3.0  # the least space between two tick labels, so words do not run together

# matplotlib defaults for the book: sizes in points, none below MIN_FONT_PT.
BOOK_STYLE: dict[str, Any] = {
    "figure.dpi": DPI,
    "savefig.dpi": DPI,  # what the notebook's inline backend and the website show
    "savefig.pad_inches": SAVE_PAD_INCHES,
    "figure.figsize": (COLUMN_WIDTH, 3.5),
    "font.size": 10.0,
    "axes.titlesize": 11.0,
    "axes.labelsize": 10.0,
    "xtick.labelsize": 9.0,
    "ytick.labelsize": 9.0,
    "legend.fontsize": 9.0,
    "legend.title_fontsize": 9.0,
    "figure.titlesize": 12.0,
}


def use_book_style() -> None:
    """Set matplotlib's defaults to ``BOOK_STYLE`` (done once when tx.viz is imported)."""
    plt.rcParams.update(BOOK_STYLE)


def figure_size(height: float, width: float = COLUMN_WIDTH) -> tuple[float, float]:
    """(width, height) in inches for a new figure, checked against the column width."""
    if not 0 < width <= COLUMN_WIDTH:
        raise ValueError(f"width must be in (0, {COLUMN_WIDTH}] inches (the text column at "
                         f"{DPI} dpi), got {width}; draw several panels as a grid of rows "
                         f"(tx.viz.subplots) instead of a wider strip")
    if not height > 0:
        raise ValueError(f"height must be positive, got {height}")
    return (float(width), float(height))


def grid_shape(n_panels: int, min_panel_width: float = 2.2,
               width: float = COLUMN_WIDTH) -> tuple[int, int]:
    """(rows, columns) for ``n_panels`` panels of at least ``min_panel_width`` inches each.

    As many columns as fit in ``width``, then as many rows as needed: four panels of 3 inches
    in a 7-inch column make a 2 x 2 grid, not a strip of four.
    """
    if n_panels < 1:
        raise ValueError(f"n_panels must be at least 1, got {n_panels}")
    if not 0 < min_panel_width <= width:
        raise ValueError(f"min_panel_width must be in (0, {width}] inches, got {min_panel_width}")
    ncols = min(n_panels, int(width // min_panel_width))
    nrows = math.ceil(n_panels / ncols)
    # Balance the rows: 5 panels in 2 columns is 3 rows either way; 3 columns would leave
    # one row of 2 and the same height, so prefer the fewest columns with that many rows.
    while ncols > 1 and math.ceil(n_panels / (ncols - 1)) == nrows:
        ncols -= 1
    return nrows, ncols


def subplots(
    nrows: int = 1,
    ncols: int = 1,
    row_height: float = 2.6,
    width: float = COLUMN_WIDTH,
    **kwargs: Any,
) -> tuple[Figure, Any]:
    """``plt.subplots`` sized by the book's rule: ``width`` inches (at most the column),
    ``row_height`` inches per row, constrained layout. Returns (figure, axes) as plt does."""
    if nrows < 1 or ncols < 1:
        raise ValueError(f"nrows and ncols must be at least 1, got {nrows} and {ncols}")
    if "figsize" in kwargs:
        raise ValueError("give width= and row_height= instead of figsize= "
                         "(tx.viz.subplots sizes the figure by the book's rule)")
    size = figure_size(nrows * row_height, width)
    kwargs.setdefault("layout", "constrained")
    return plt.subplots(nrows, ncols, figsize=size, **kwargs)


def figure_problems(fig: Figure) -> list[str]:
    """Where ``fig`` breaks the size rule: too wide (as drawn, or as saved with its margin
    and whatever sticks out of it), text smaller than MIN_FONT_PT, or x tick labels that
    run together.

    Only visible text with characters counts (tick labels, titles, legends, annotations).
    An empty list means the figure follows the rule.
    """
    problems = []
    width = fig.get_figwidth()
    if width > COLUMN_WIDTH + 1e-9:
        problems.append(f"figure is {width:g} in wide, more than the {COLUMN_WIDTH:g}-inch "
                        f"column: it would be shrunk on the page")
    if fig.dpi != DPI:
        problems.append(f"figure has dpi {fig.dpi:g}, not {DPI}")
    fig.canvas.draw()  # tick labels exist only once drawn
    saved = (fig.get_tightbbox().width + 2 * plt.rcParams["savefig.pad_inches"]) * DPI
    if width <= COLUMN_WIDTH + 1e-9 and saved > COLUMN_WIDTH * DPI + 0.5:
        problems.append(f"figure saves {saved:.0f} px wide (what sticks out of it, and its "
                        f"margin), more than the column's {COLUMN_WIDTH * DPI:.0f}")
    small = set()
    for text in fig.findobj(lambda a: hasattr(a, "get_fontsize") and hasattr(a, "get_text")):
        if text.get_visible() and str(text.get_text()).strip() and text.get_fontsize() < MIN_FONT_PT:
            small.add(f"{text.get_text()!r} at {text.get_fontsize():g} pt")
    if small:
        problems.append(f"text below {MIN_FONT_PT:g} pt: " + ", ".join(sorted(small)[:8]))
    crowded = [f"{a!r} {b!r}" for ax in fig.axes for a, b in _crowded_xticklabels(ax)]
    if crowded:
        problems.append("x tick labels run together: " + ", ".join(crowded[:4]))
    return problems


# --------------------------------------------------------------------------- helpers of the drawing modules


def _to_numpy(x: Any) -> np.ndarray:
    """Return a float numpy copy of a tensor or array-like (tensors are detached, moved to CPU)."""
    if hasattr(x, "detach"):
        # .float() first: numpy has no bfloat16, and half-precision tensors are common on GPU.
        return x.detach().cpu().float().numpy()
    return np.asarray(x, dtype=float)


def _new_ax(ax: Axes | None, figsize: tuple[float, float]) -> Axes:
    """Return ``ax``, or the Axes of a new constrained-layout figure of the given size,
    narrowed to the column width if it asks for more."""
    if ax is not None:
        return ax
    width, height = figsize
    _, new = plt.subplots(figsize=(min(width, COLUMN_WIDTH), height), layout="constrained")
    return new


def _crowded_xticklabels(ax: Axes) -> list[tuple[str, str]]:
    """Neighbouring x tick labels of a drawn Axes closer than MIN_LABEL_GAP_PT, as text pairs.

    Level labels are compared by the space between their boxes; tilted ones (parallel
    strips) by the distance across the strips, which must hold a line of text.
    """
    labels = sorted((t for t in ax.get_xticklabels() if t.get_visible() and t.get_text().strip()),
                    key=lambda t: t.get_window_extent().x0)
    gap = MIN_LABEL_GAP_PT * ax.figure.dpi / 72
    crowded = []
    for a, b in zip(labels, labels[1:]):
        angle = math.radians(a.get_rotation())
        if abs(math.sin(angle)) < 1e-6:
            box_a, box_b = a.get_window_extent(), b.get_window_extent()
            apart = box_b.x0 - box_a.x1
        else:
            x_a, x_b = (t.get_transform().transform(t.get_position())[0] for t in (a, b))
            line = max(a.get_fontsize(), b.get_fontsize()) * ax.figure.dpi / 72  # px
            apart = abs(x_b - x_a) * abs(math.sin(angle)) - line
        if apart < gap:
            crowded.append((a.get_text(), b.get_text()))
    return crowded


def _tilt_crowded_xticklabels(ax: Axes) -> None:
    """Tilt the x tick labels by 45 degrees if, level, neighbours would run together."""
    fig = ax.figure
    engine = fig.get_layout_engine()
    if engine is None:
        fig.draw_without_rendering()  # places the labels
    else:
        # The layout alone places the axes, at about 60% of a whole draw's cost (an explorer
        # draws every state of its figure for the website); the tick labels then follow the
        # axes' new position as the axis computes its extent.
        renderer = fig.canvas.get_renderer()
        engine.execute(fig)
        ax.xaxis.get_tightbbox(renderer)
    if _crowded_xticklabels(ax):
        for label in ax.get_xticklabels():
            label.set(rotation=45, ha="right", rotation_mode="anchor")


def _check_labels(labels: Sequence[str] | None, n: int, name: str, what: str) -> None:
    """Raise ValueError if ``labels`` is given and its length is not ``n``."""
    if labels is not None and len(labels) != n:
        raise ValueError(f"{name} has {len(labels)} labels but weights have {n} {what}")


def _text_colour(value: float, vmin: float, vmax: float, cmap: str) -> str:
    """Black or white, whichever reads better on the colour ``cmap`` gives ``value``."""
    frac = 0.5 if vmax == vmin else (value - vmin) / (vmax - vmin)
    r, g, b, _ = plt.get_cmap(cmap)(float(np.clip(frac, 0.0, 1.0)))
    luminance = 0.299 * r + 0.587 * g + 0.114 * b  # perceived brightness (ITU-R BT.601)
    return "black" if luminance > 0.5 else "white"


def _token_text(tokens: Sequence[str] | Callable[[int], str], token_id: int) -> str:
    """Map a token id to its string with a list or a callable."""
    return tokens(token_id) if callable(tokens) else str(tokens[token_id])
