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

Importing this package applies ``BOOK_STYLE`` (``use_book_style``) to matplotlib's defaults, so
any figure a chapter draws after its first ``tx.viz`` call follows the dpi and font sizes;
``figure_problems(fig)`` says where a figure breaks the rule.

One module per kind of figure, every name re-exported here (chapters call ``tx.viz.X``):
:mod:`tx.viz.style` (the size rule and shared helpers), :mod:`tx.viz.attention_maps`,
:mod:`tx.viz.tensors` (positional encodings, small vectors), :mod:`tx.viz.training_curves`,
:mod:`tx.viz.decoding_trees` (probabilities, beam search), :mod:`tx.viz.grids` (several panels
of one kind: distributions step by step, vectors on one colour scale), :mod:`tx.viz.circles`
(a positional encoding's pairs on circles), :mod:`tx.viz.diagrams`, :mod:`tx.viz.tables`
(Markdown tables) and :mod:`tx.viz.source` (``show_source``).
"""

from __future__ import annotations

from .attention_maps import attention_grid, attention_heatmap
from .circles import pair_circles
from .decoding_trees import beam_search_tree, probability_bars
from .diagrams import layer_diagram, stack_diagram
from .grids import probability_grid, share_scale, vector_panels
from .source import show_source
from .style import (
    BOOK_STYLE, COLUMN_WIDTH, DPI, MIN_FONT_PT, figure_problems, figure_size, grid_shape, subplots, use_book_style,
)
# Kept as tx.viz.X, as every name was when tx.viz was one module; no chapter uses them.
from .style import ATTENTION_CMAP, SIGNED_CMAP  # noqa: F401
from .tables import markdown_table
from .tensors import encoding_curves, positional_encoding_heatmap, vector_boxes
from .training_curves import loss_curves, lr_schedule

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
    "vector_panels",
    "share_scale",
    "pair_circles",
    "loss_curves",
    "lr_schedule",
    "probability_bars",
    "probability_grid",
    "beam_search_tree",
    "stack_diagram",
    "layer_diagram",
    "markdown_table",
]

use_book_style()
