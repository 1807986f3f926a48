"""Tables for a page: rows of values as a Markdown table, which the notebook and the book render.

A chapter computes the rows; this lays them out, so the cell shows the computation, not the
``"| --- |"`` strings.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["markdown_table"]

ALIGN = {"left": "---", "right": "---:", "center": ":---:"}


def _cell(value: Any) -> str:
    # a | inside a cell would end it early
    return str(value).replace("|", "\\|")


def markdown_table(
    header: Sequence[str],
    rows: Iterable[Sequence[Any]],
    intro: str | None = None,
    align: Sequence[str] | None = None,
) -> Any:
    """A Markdown table (IPython's ``Markdown``) with one column per name in ``header``.

    Each row gives one value per column, written with ``str`` (a value that is already a
    string keeps its Markdown: ``*italic*``, ``**bold**``, `` `code` ``). ``intro`` is a
    paragraph shown above the table; ``align`` gives each column's alignment, "left" (the
    default), "right" or "center".
    """
    from IPython.display import Markdown

    if align is None:
        align = ["left"] * len(header)
    if len(align) != len(header) or any(a not in ALIGN for a in align):
        raise ValueError(f"align needs one of {sorted(ALIGN)} per column ({len(header)}), got {align}")
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |",
             "| " + " | ".join(ALIGN[a] for a in align) + " |"]
    for i, row in enumerate(rows):
        row = list(row)
        if len(row) != len(header):
            raise ValueError(f"row {i} has {len(row)} values for {len(header)} columns: {row}")
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    text = "\n".join(lines)
    return Markdown(text if intro is None else f"{intro}\n\n{text}")
