"""Figures the chapters draw from real tensors: attention, encodings, training and decoding.

Axis legend (as in the rest of ``tx``):
    H   heads
    Tq  query positions (rows of an attention matrix)
    Tk  key positions (columns of an attention matrix)
    P   positions of a positional-encoding table
    D   d_model (embedding dimension)
    V   vocabulary size
    N   number of small vectors drawn as boxes

Every function accepts torch tensors or numpy arrays, draws on the ``ax`` (or ``fig``) it is
given or on a new one, returns the Axes (the Figure for grids) and never calls ``plt.show()``,
so a notebook cell shows the figure once and a test can inspect it.

Colour conventions, the same in every chapter: ``viridis`` on [0, 1] for attention weights and
probabilities, ``RdBu`` on a range symmetric about 0 for signed values.

The size rule, the same for every figure of the book (chapters/README.md states it for authors):

* at most ``COLUMN_WIDTH`` = 7 inches wide, drawn at ``DPI`` = 96, so at most 672 px: the
  width of a figure in the text column of a page read at 1280 px, where the figure is then
  shown at its own size, never shrunk;
* no text smaller than ``MIN_FONT_PT`` = 9 pt (12 px at 96 dpi);
* several panels as a grid of rows (``subplots`` and ``grid_shape``), not as a wide strip;
* a colour bar wherever colour encodes a value, and one shared colour scale where the text
  compares panels.

Importing this module applies ``BOOK_STYLE`` (``use_book_style``) to matplotlib's defaults, so
any figure a chapter draws after its first ``tx.viz`` call follows the dpi and font sizes;
``figure_problems(fig)`` says where a figure breaks the rule.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.patches import FancyBboxPatch, Patch

__all__ = [
    "COLUMN_WIDTH",
    "DPI",
    "MIN_FONT_PT",
    "BOOK_STYLE",
    "use_book_style",
    "figure_size",
    "grid_shape",
    "subplots",
    "figure_problems",
    "show_source",
    "attention_heatmap",
    "attention_grid",
    "positional_encoding_heatmap",
    "encoding_curves",
    "vector_boxes",
    "loss_curves",
    "lr_schedule",
    "probability_bars",
    "beam_search_tree",
    "stack_diagram",
]

ATTENTION_CMAP = "viridis"
SIGNED_CMAP = "RdBu"

COLUMN_WIDTH = 7.0  # inches: 672 px at DPI, a figure's room in the text column at 1280 px
DPI = 96  # dots per inch of every figure, in the notebook and on the website (CSS's own 96)
MIN_FONT_PT = 9.0  # the smallest text a figure may hold (12 px at DPI)

# matplotlib defaults for the book: sizes in points, none below MIN_FONT_PT.
BOOK_STYLE: dict[str, Any] = {
    "figure.dpi": DPI,
    "savefig.dpi": DPI,  # what the notebook's inline backend and the website show
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


# --------------------------------------------------------------------------- the size rule


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
    """Where ``fig`` breaks the size rule: too wide, or text smaller than MIN_FONT_PT.

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
    small = set()
    for text in fig.findobj(lambda a: hasattr(a, "get_fontsize") and hasattr(a, "get_text")):
        if text.get_visible() and str(text.get_text()).strip() and text.get_fontsize() < MIN_FONT_PT:
            small.add(f"{text.get_text()!r} at {text.get_fontsize():g} pt")
    if small:
        problems.append(f"text below {MIN_FONT_PT:g} pt: " + ", ".join(sorted(small)[:8]))
    return problems


# --------------------------------------------------------------------------- helpers


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


# --------------------------------------------------------------------------- attention


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
) -> Axes:
    """Heatmap of one head's attention weights [Tq, Tk]: rows are queries, columns keys."""
    w = _to_numpy(weights)
    if w.ndim != 2:
        raise ValueError(f"weights must be [Tq, Tk] (one head), got shape {tuple(w.shape)}")
    n_q, n_k = w.shape
    _check_labels(query_tokens, n_q, "query_tokens", "query rows")
    _check_labels(key_tokens, n_k, "key_tokens", "key columns")
    ax = _new_ax(ax, (max(3.8, 1.6 + 0.45 * n_k), max(3.2, 1.2 + 0.45 * n_q)))
    im = _draw_attention(ax, w, query_tokens, key_tokens, annotate, cmap)
    ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="weight")
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


# --------------------------------------------------------------------------- positional encoding


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
    """Lines of pe[:, d] against position for a few dimensions d of pe [P, D]."""
    table = _to_numpy(pe)
    if table.ndim != 2:
        raise ValueError(f"pe must be [positions, d_model], got shape {tuple(table.shape)}")
    bad = [d for d in dims if not 0 <= d < table.shape[1]]
    if bad:
        raise ValueError(f"dims {bad} out of range for d_model = {table.shape[1]}")
    ax = _new_ax(ax, (COLUMN_WIDTH, 3.5))
    positions = np.arange(table.shape[0])
    for d in dims:
        ax.plot(positions, table[:, d], label=f"dim {d}")
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
    mesh = ax.pcolormesh(v, cmap=cmap, vmin=-limit, vmax=limit,
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


# --------------------------------------------------------------------------- training


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
) -> Axes:
    """Train loss (raw and smoothed), valid loss (markers) and, if logged, lr against step."""
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
    ax.legend(handles, labels, loc="upper right")
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
    ax.annotate(f"peak {lr[peak]:.2e} at step {s[peak]:g}", (s[peak], lr[peak]),
                xytext=(8, -4), textcoords="offset points", va="top", fontsize=9)
    ax.set_xlabel("step")
    ax.set_ylabel("learning rate")
    ax.set_ylim(bottom=0, top=lr.max() * 1.1 if lr.max() > 0 else 1.0)
    ax.ticklabel_format(axis="y", style="sci", scilimits=(-2, 3))
    ax.set_title(title)
    ax.grid(alpha=0.3)
    return ax


# --------------------------------------------------------------------------- decoding


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
    ax.set_xticklabels([str(tokens[i]) for i in order],
                       rotation=45 if len(order) > 8 else 0,
                       ha="right" if len(order) > 8 else "center")
    if len(order) <= 12:  # values above bars are legible only for a handful of words
        ax.bar_label(bars, fmt="%.2f", fontsize=MIN_FONT_PT, padding=2)
    ax.set_ylim(0.0, 1.0)
    ax.set_ylabel("probability")
    if title is not None:
        ax.set_title(title, pad=12)  # room for the value label of a bar near 1
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


# --------------------------------------------------------------------------- architecture


def stack_diagram(n_encoders: int = 6, n_decoders: int = 6, ax: Axes | None = None) -> Axes:
    """Boxes and arrows: a stack of encoders whose output feeds every decoder in a stack."""
    if n_encoders < 1 or n_decoders < 1:
        raise ValueError(f"need at least one encoder and one decoder, got "
                         f"{n_encoders} and {n_decoders}")
    box_w, box_h, gap = 1.6, 0.5, 0.25  # data units; the figure is sized to match below
    enc_x, dec_x = 0.0, 2.8
    top = max(n_encoders, n_decoders) * (box_h + gap) - gap + 0.9  # room for "next word"
    scale = 0.8  # inches per data unit
    ax = _new_ax(ax, (scale * (dec_x + box_w + 0.6) + 0.2, scale * (top + 0.9) + 0.4))
    arrow = dict(arrowstyle="-|>", color="0.3", linewidth=1.2, shrinkA=0, shrinkB=0)

    def box(x: float, y: float, label: str, colour: str) -> None:
        ax.add_patch(FancyBboxPatch((x, y), box_w, box_h, boxstyle="round,pad=0.02",
                                    facecolor=colour, edgecolor="0.3"))
        ax.text(x + box_w / 2, y + box_h / 2, label, ha="center", va="center", fontsize=10)

    def y_of(k: int) -> float:
        return k * (box_h + gap)

    for k in range(n_encoders):
        box(enc_x, y_of(k), f"Encoder {k + 1}", "#cde6c7")
        if k > 0:
            ax.annotate("", (enc_x + box_w / 2, y_of(k)),
                        (enc_x + box_w / 2, y_of(k - 1) + box_h), arrowprops=arrow)
    for k in range(n_decoders):
        box(dec_x, y_of(k), f"Decoder {k + 1}", "#f6d7b0")
        if k > 0:
            ax.annotate("", (dec_x + box_w / 2, y_of(k)),
                        (dec_x + box_w / 2, y_of(k - 1) + box_h), arrowprops=arrow)
    # Inputs enter at the bottom; the top decoder's output leaves at the top.
    ax.annotate("inputs", (enc_x + box_w / 2, 0), (enc_x + box_w / 2, -0.45), ha="center",
                va="top", arrowprops=arrow)
    ax.annotate("outputs so far", (dec_x + box_w / 2, 0), (dec_x + box_w / 2, -0.45),
                ha="center", va="top", arrowprops=arrow)
    top_dec = y_of(n_decoders - 1) + box_h
    ax.annotate("", (dec_x + box_w / 2, top_dec + 0.4), (dec_x + box_w / 2, top_dec),
                arrowprops=arrow)
    ax.text(dec_x + box_w / 2, top_dec + 0.45, "next word", ha="center", va="bottom")
    # The top encoder's output (the "memory") runs up and right, then into every decoder.
    bus_x = (enc_x + box_w + dec_x) / 2
    top_enc = y_of(n_encoders - 1) + box_h
    bus_top = max(top_enc, y_of(n_decoders - 1) + box_h / 2) + 0.2
    memory = dict(color="tab:blue", linewidth=1.5)
    ax.plot([enc_x + box_w / 2, enc_x + box_w / 2, bus_x], [top_enc, bus_top, bus_top], **memory)
    ax.plot([bus_x, bus_x], [bus_top, y_of(0) + box_h / 2], **memory)
    for k in range(n_decoders):
        ax.annotate("", (dec_x, y_of(k) + box_h / 2), (bus_x, y_of(k) + box_h / 2),
                    arrowprops=dict(arrow, color="tab:blue"))
    ax.text((enc_x + box_w / 2 + bus_x) / 2, bus_top + 0.08, "encoder output", ha="center",
            va="bottom", fontsize=9, color="tab:blue")
    ax.set_xlim(enc_x - 0.3, dec_x + box_w + 0.3)
    ax.set_ylim(-0.9, top)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"{n_encoders} encoders, {n_decoders} decoders")
    return ax


use_book_style()


def show_source(obj: Any) -> Any:
    """tx's own source code for ``obj`` as a highlighted block: a page shows the code the tests run.

    ``obj`` may be a method (``tx.MultiHeadAttention.forward``), to show only the part a chapter
    teaches; its class indentation is removed.
    """
    import inspect
    import textwrap

    from IPython.display import Code

    return Code(textwrap.dedent(inspect.getsource(obj)), language="python")
