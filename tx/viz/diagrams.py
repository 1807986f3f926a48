"""Architecture diagrams: the stack of encoders and decoders of chapter 1."""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.patches import FancyBboxPatch

from .style import _new_ax

__all__ = ["stack_diagram"]


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
