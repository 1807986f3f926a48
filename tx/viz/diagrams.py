"""Architecture diagrams: the stack of encoders and decoders of chapter 1, and what one encoder
layer and one decoder layer hold (chapters 1 and 7)."""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.patches import FancyBboxPatch

from .style import _new_ax

__all__ = ["stack_diagram", "layer_diagram"]


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


_ENCODER = ["Self-Attention", "Add & Norm", "Feed Forward", "Add & Norm"]
_DECODER = ["Masked Self-Attention", "Add & Norm", "Encoder-Decoder Attention", "Add & Norm",
            "Feed Forward", "Add & Norm"]
_COLOURS = {"Add & Norm": "#e8e8e8", "Feed Forward": "#cfe3f5"}  # attention: "#fbe3b8"


def layer_diagram(ax: Axes | None = None) -> Axes:
    """One encoder layer and one decoder layer, inside: each sub-layer, the residual connection
    around it and the Add & Norm after it (post-LN, as the paper), and the encoder's output
    entering the decoder's encoder-decoder attention."""
    box_w, box_h, gap = 2.7, 0.42, 0.22
    enc_x, dec_x = 0.0, 3.9
    top = len(_DECODER) * (box_h + gap) + 0.6
    scale = 0.72  # inches per data unit
    ax = _new_ax(ax, (scale * (dec_x + box_w + 1.0) + 0.2, scale * (top + 1.3) + 0.3))
    arrow = dict(arrowstyle="-|>", color="0.3", linewidth=1.1, shrinkA=0, shrinkB=0)

    def y_of(k: int) -> float:
        return k * (box_h + gap)

    def column(x: float, names: list[str], side: float, title: str, colour: str) -> float:
        """The layer's boxes from the bottom, its residual paths on ``side`` (-1 left, +1 right); its top."""
        height = y_of(len(names)) - gap
        ax.add_patch(FancyBboxPatch((x - 0.45, -0.2), box_w + 0.9, height + 0.4, boxstyle="round,pad=0.02",
                                    facecolor=colour, edgecolor="0.5", linestyle="--", alpha=0.35))
        ax.text(x - 0.4, height + 0.26, title, ha="left", va="bottom", fontsize=10, weight="bold")
        for k, name in enumerate(names):
            ax.add_patch(FancyBboxPatch((x, y_of(k)), box_w, box_h, boxstyle="round,pad=0.02",
                                        facecolor=_COLOURS.get(name, "#fbe3b8"), edgecolor="0.3"))
            ax.text(x + box_w / 2, y_of(k) + box_h / 2, name, ha="center", va="center", fontsize=9)
            if k > 0:
                ax.annotate("", (x + box_w / 2, y_of(k)), (x + box_w / 2, y_of(k - 1) + box_h),
                            arrowprops=arrow)
        # Residual: from below each sub-layer, around it, into the Add & Norm above it.
        edge = x if side < 0 else x + box_w
        far = edge + side * 0.3
        for k in range(0, len(names), 2):
            start = y_of(k) - gap / 2
            end = y_of(k + 1) + box_h / 2
            ax.plot([x + box_w / 2, far, far], [start, start, end], color="tab:green", linewidth=1.3)
            ax.annotate("", (edge, end), (far, end), arrowprops=dict(arrow, color="tab:green"))
        return height

    enc_top = column(enc_x, _ENCODER, -1, "Encoder layer", "#cde6c7")
    dec_top = column(dec_x, _DECODER, +1, "Decoder layer", "#f6d7b0")
    ax.annotate("inputs", (enc_x + box_w / 2, 0), (enc_x + box_w / 2, -0.55), ha="center", va="top",
                arrowprops=arrow)
    ax.annotate("outputs so far", (dec_x + box_w / 2, 0), (dec_x + box_w / 2, -0.55), ha="center",
                va="top", arrowprops=arrow)
    ax.annotate("", (dec_x + box_w / 2, dec_top + 0.75), (dec_x + box_w / 2, dec_top), arrowprops=arrow)
    ax.text(dec_x + box_w / 2 + 0.1, dec_top + 0.6, "to the next layer", ha="left", va="center", fontsize=9)
    # The encoder's output (from the top of the encoder stack) into the encoder-decoder attention.
    cross = y_of(_DECODER.index("Encoder-Decoder Attention")) + box_h / 2
    bus_x = (enc_x + box_w + 0.45 + dec_x) / 2
    memory = dict(color="tab:blue", linewidth=1.4)
    ax.plot([enc_x + box_w / 2, enc_x + box_w / 2, bus_x], [enc_top, enc_top + 0.6, enc_top + 0.6], **memory)
    ax.plot([bus_x, bus_x], [enc_top + 0.6, cross], **memory)
    ax.annotate("", (dec_x, cross), (bus_x, cross), arrowprops=dict(arrow, color="tab:blue"))
    ax.text(bus_x - 0.1, enc_top + 0.68, "encoder output (keys, values)", ha="right", va="bottom",
            fontsize=9, color="tab:blue")
    ax.plot([], [], color="tab:green", label="residual connection")
    ax.plot([], [], color="tab:blue", label="encoder output")
    ax.legend(loc="upper left", fontsize=9, frameon=False, bbox_to_anchor=(0.0, 1.0))
    ax.set_xlim(enc_x - 0.6, dec_x + box_w + 0.6)
    ax.set_ylim(-1.1, top + 0.4)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax
