"""Explorers: a figure with controls that works live in Jupyter and, precomputed, on the website.

``explore(draw, french=Choice([...]), d_k=Grid([...]))`` returns an :class:`Explorer`. A notebook
shows it in one of two forms, chosen by where it runs:

* In a Jupyter kernel (JupyterLab, VS Code, ...): live ipywidgets, a dropdown per
  :class:`Choice` and a slider per :class:`Grid`, above an ``ipywidgets.Image`` that holds the
  current state's figure as one finished PNG, drawn off screen, and an ``HTML`` widget with the
  text ``draw`` printed. Each change of a control calls ``draw`` again and replaces the image's
  bytes in one message, so the front end never shows a half-drawn figure (an ``Output`` widget
  fed by ``display(fig)`` could keep an unfinished PNG in JupyterLab: issue 29). A ``Grid``
  with ``free=(lo, hi, step)`` offers every value in that range, and a ``Choice`` with
  ``free=True`` a text box that takes any text. Beside the widget view the output holds a
  short ``text/plain`` and the first state's PNG, for viewers without widgets.
* In the book's build (``TX_EXPLORER_STATIC=1``, set by ``_ext/book_site.py`` for the kernels
  that execute the chapters): ``text/html`` with every state the page can show (each
  combination of the controls' values) drawn once by the same ``draw`` and stored as a PNG,
  with native ``<select>`` and ``<input type="range">`` controls.
  A small script shipped with the website shows the frame of the chosen
  state; text that ``draw`` printed belongs to its state and switches with the figure. Only
  the build draws every state: in a learner's kernel that would cost seconds to minutes per
  explorer and swell the saved notebook with frames nobody sees.

``draw(**values)`` takes one keyword per control and returns a matplotlib Figure; an explorer
with more than ``max_states`` states is an error, so a page stays light: narrow the grid.

Axis legend: none; an explorer works on whatever ``draw`` draws.
"""

from __future__ import annotations

import base64
import contextlib
import html
import io
import itertools
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Choice", "Grid", "Explorer", "Frame", "ExplorerError", "explore", "MAX_STATES"]

MAX_STATES = 64  # frames one explorer may put on a page (each a PNG of ~5-40 kB)
STATIC_ENV = "TX_EXPLORER_STATIC"  # set by the book build: no widgets, only the text/html form
_SHOWN: list["Explorer"] = []  # every explorer this kernel has shown, in order (redraw_shown)


class ExplorerError(ValueError):
    """An explorer that cannot be built as asked (too many states, a bad value or draw)."""


def _options(options: Sequence[Any]) -> list[tuple[str, Any]]:
    """(label, value) pairs from values or from (label, value) pairs."""
    pairs = []
    for option in options:
        if isinstance(option, tuple) and len(option) == 2 and isinstance(option[0], str):
            pairs.append(option)
        else:
            pairs.append((str(option), option))
    return pairs


@dataclass(init=False)
class Choice:
    """A control that picks one of a few values: a dropdown in Jupyter, a <select> on the page.

    ``options`` are values, or ``(label, value)`` pairs; ``value`` is the first state shown
    (the first option by default); ``label`` names the control (the keyword by default).
    ``free=True`` (text options only) makes it a text box in Jupyter that suggests the options
    and takes any text, e.g. a French sentence of the reader's own; the page offers the options.
    """

    options: list[tuple[str, Any]]  #: ``(label, value)`` pairs, in the order offered
    value: Any  #: the value shown first
    label: str | None  #: the control's name (None: the keyword it is passed by)
    free: bool  #: in Jupyter, a text box that takes any text

    def __init__(self, options: Sequence[Any], value: Any = None, label: str | None = None,
                 free: bool = False):
        self.options = _options(options)
        if not self.options:
            raise ExplorerError("Choice needs at least one option.")
        self.value = self.options[0][1] if value is None else value
        self.label, self.free = label, free
        _index(self, self.value, "Choice")
        if free and not all(isinstance(v, str) and text == v for text, v in self.options):
            raise ExplorerError("Choice(free=True) takes text options only (no (label, value) pairs).")

    def widget(self, description: str):
        """The live control; its ``value`` goes through :meth:`value_of` to give draw's value."""
        import ipywidgets as widgets

        style = {"description_width": "initial"}
        if self.free:  # redraws on Enter or leaving the box, not at every key
            return widgets.Combobox(options=[v for _, v in self.options], value=self.value,
                                    description=description, ensure_option=False,
                                    continuous_update=False, style=style,
                                    layout=widgets.Layout(width="min(100%, 28em)"))
        # The menu's values are the options' positions, not the values themselves: a Dropdown
        # reads the value None as "nothing selected" and shows an empty menu (chapter 14's
        # "all heads"), and two options with equal values would be one.
        return widgets.Dropdown(options=[(label, i) for i, (label, _) in enumerate(self.options)],
                                value=_index(self, self.value, "Choice"), description=description,
                                style=style)

    def value_of(self, widget_value: Any) -> Any:
        """draw's value for the live control's value: the typed text, or the option at that position."""
        return widget_value if self.free else self.options[widget_value][1]


@dataclass(init=False)
class Grid:
    """A slider over numbers: on the page it snaps to ``values``, the states the page offers.

    In Jupyter the slider moves over ``values`` too, unless ``free=(lo, hi, step)`` asks for a
    slider over every value of that range (``log=True``: a log-scale slider from lo to hi, with
    step in powers of ten). ``fmt`` formats a value for its label, e.g. ``"{:.2f}"``.
    """

    options: list[tuple[str, Any]]  #: ``(label, value)`` pairs, the states the page offers
    value: Any  #: the value shown first
    label: str | None  #: the control's name (None: the keyword it is passed by)
    free: tuple[float, float, float] | None  #: in Jupyter, ``(lo, hi, step)`` of a free slider
    log: bool  #: the free slider is on a log scale

    def __init__(self, values: Sequence[float], value: float | None = None, label: str | None = None,
                 free: tuple[float, float, float] | None = None, log: bool = False, fmt: str = "{}"):
        if not values:
            raise ExplorerError("Grid needs at least one value.")
        if list(values) != sorted(values):
            raise ExplorerError(f"Grid values must be in increasing order, got {list(values)}.")
        self.options = [(fmt.format(v), v) for v in values]
        self.value = values[0] if value is None else value
        self.label, self.free, self.log = label, free, log
        _index(self, self.value, "Grid")

    def widget(self, description: str):
        """The live control; its ``value`` goes through :meth:`value_of` to give draw's value."""
        import ipywidgets as widgets

        style = {"description_width": "initial"}
        if self.free is None:  # positions, as Choice's menu: the labels show, draw gets the value
            return widgets.SelectionSlider(options=[(label, i) for i, (label, _) in enumerate(self.options)],
                                           value=_index(self, self.value, "Grid"),
                                           description=description, style=style)
        lo, hi, step = self.free
        if self.log:
            import math

            return widgets.FloatLogSlider(value=self.value, base=10, min=math.log10(lo), max=math.log10(hi),
                                          step=step, description=description, style=style)
        if all(isinstance(x, int) for x in (lo, hi, step, self.value)):
            return widgets.IntSlider(value=self.value, min=lo, max=hi, step=step,
                                     description=description, style=style)
        return widgets.FloatSlider(value=self.value, min=lo, max=hi, step=step,
                                   description=description, style=style)

    def value_of(self, widget_value: Any) -> Any:
        """draw's value for the live control's value: the slider's number, or the value at that position."""
        return widget_value if self.free is not None else self.options[widget_value][1]


def _index(control: Choice | Grid, value: Any, kind: str) -> int:
    for i, (_, v) in enumerate(control.options):
        if v == value:
            return i
    raise ExplorerError(
        f"{kind} value {value!r} is not one of its options {[v for _, v in control.options]}: "
        "give a value from the list, or add it to the list."
    )


def _label(control: Choice, value: Any) -> str:
    """A Choice value's label; a typed value (free=True) that is no option stands for itself."""
    for label, v in control.options:
        if v == value:
            return label
    return str(value)


@dataclass(frozen=True)
class Frame:
    """One state of an explorer as the page stores it: the figure as PNG, its printed text, its alt."""

    key: str  #: the index of each control's value, joined by "-": "2-0"
    values: dict  #: each control's value in this state, by keyword
    png: bytes  #: the figure, as PNG
    text: str  #: what the state printed
    alt: str  #: the figure's alt text


def _png(fig, dpi: float | None) -> bytes:
    """The figure as a PNG of at most 256 colours: plots are flat colours and antialiased
    edges, so this looks the same and is about a third of the size of a full-colour PNG.

    Cropped as ``savefig(bbox_inches="tight")`` crops, to what is drawn plus
    ``savefig.pad_inches``, but from one drawing: savefig draws a figure twice and measures
    every text a third time to find its box, which made a frame half as slow again
    (bench/README.md, "Fifteenth pass").
    """
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import to_rgba
    from PIL import Image

    # dpi None: matplotlib's savefig.dpi, as for every other figure of the notebook (tx.viz sets it).
    saved = plt.rcParams["savefig.dpi"]
    fig.set_dpi(dpi or (fig.dpi if saved == "figure" else saved))
    fig.canvas.draw()  # the layout engine runs first, then the figure is drawn once
    pixels = np.asarray(fig.canvas.buffer_rgba())
    background = np.round(np.array(to_rgba(fig.get_facecolor())) * 255).astype(np.uint8)
    drawn = (pixels != background).any(axis=2)
    rows, cols = np.flatnonzero(drawn.any(axis=1)), np.flatnonzero(drawn.any(axis=0))
    image = Image.fromarray(pixels).convert("RGB")
    if rows.size:  # a blank figure stays whole
        pad = round(plt.rcParams["savefig.pad_inches"] * fig.dpi)
        height, width = drawn.shape
        image = image.crop((max(cols[0] - pad, 0), max(rows[0] - pad, 0),
                            min(cols[-1] + 1 + pad, width), min(rows[-1] + 1 + pad, height)))
    small = io.BytesIO()
    image.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(small, format="PNG")
    return small.getvalue()


_SLUG = re.compile(r"[^a-z0-9]+")
_SERIAL = itertools.count(1)


class Explorer:
    """``draw`` with its controls; shown in a notebook, it is a live widget and a static page."""

    def __init__(self, draw: Callable[..., Any], controls: dict[str, Choice | Grid], *, alt: str | None = None,
                 max_states: int = MAX_STATES, dpi: float | None = None):
        if not callable(draw):
            raise ExplorerError(f"explore needs a function that draws a figure, got {draw!r}.")
        if not controls:
            raise ExplorerError("explore needs at least one control, e.g. word=Choice(['a', 'b']).")
        for name, control in controls.items():
            if not isinstance(control, (Choice, Grid)):
                raise ExplorerError(
                    f"control {name}={control!r} is not a Choice or a Grid: write "
                    f"{name}=Choice([...]) for a menu or {name}=Grid([...]) for a slider."
                )
        self.draw, self.controls, self.dpi = draw, dict(controls), dpi
        self.alt = alt
        n = self.n_states
        if n > max_states:
            sizes = " x ".join(f"{len(c.options)} {name}" for name, c in self.controls.items())
            raise ExplorerError(
                f"this explorer has {n} states ({sizes}), more than the {max_states} a page may hold: "
                "give its controls fewer values (a coarser Grid, fewer Choice options)."
            )
        self.slug = _SLUG.sub("-", getattr(draw, "__name__", "explorer").lower()).strip("-") or "explorer"

    @property
    def n_states(self) -> int:
        """How many frames the page stores: the product of the controls' option counts."""
        n = 1
        for control in self.controls.values():
            n *= len(control.options)
        return n

    def labels(self) -> dict[str, str]:
        """Each control's visible label."""
        return {name: c.label or name for name, c in self.controls.items()}

    def first(self) -> dict[str, Any]:
        """The values of the first state: what a reader without JavaScript sees."""
        return {name: c.value for name, c in self.controls.items()}

    def key(self, **values: Any) -> str:
        """The frame key of a state: each control's option index, joined by "-"."""
        missing = set(self.controls) - set(values)
        if missing or set(values) - set(self.controls):
            raise ExplorerError(
                f"give a value for exactly the controls {list(self.controls)}, got {list(values)}."
            )
        return "-".join(str(_index(c, values[name], type(c).__name__)) for name, c in self.controls.items())

    def describe(self, values: dict[str, Any]) -> str:
        """The alt text of a state: the ``alt`` template filled in, or each control's label and value.

        In the template a Choice stands for its option's label ("head 1", not 0) and a Grid
        for its number, so ``{tau:.2f}`` works.
        """
        filled = {name: _label(c, values[name]) if isinstance(c, Choice) else values[name]
                  for name, c in self.controls.items()}
        if self.alt is not None:
            return self.alt.format(**filled)
        labels = self.labels()
        return ", ".join(f"{labels[name]} {filled[name]}" for name in self.controls)

    def render(self, **values: Any) -> Frame:
        """Draw one state off screen: its PNG, the text draw printed, its alt text."""
        key = self.key(**values)
        png, text = self._draw(values)
        return Frame(key=key, values=dict(values), png=png, text=text, alt=self.describe(values))

    def _draw(self, values: dict[str, Any]) -> tuple[bytes, str]:
        """``draw(**values)`` off screen, any values (a typed sentence, an off-grid number too):
        the figure as PNG and the text draw printed."""
        import matplotlib.pyplot as plt
        from matplotlib.figure import Figure

        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            fig = self.draw(**values)
        if hasattr(fig, "figure") and not isinstance(fig, Figure):  # an Axes: its figure
            fig = fig.figure
        if not isinstance(fig, Figure):
            raise ExplorerError(
                f"{self.slug}({values}) returned {type(fig).__name__}, not a matplotlib Figure: "
                "end draw with `return fig` (not plt.show())."
            )
        try:
            png = _png(fig, self.dpi)
        finally:
            plt.close(fig)
        return png, printed.getvalue()

    def frames(self) -> list[Frame]:
        """Every state, first state first, then in the order of the controls' options."""
        names = list(self.controls)
        combos = itertools.product(*(self.controls[n].options for n in names))
        states = [dict(zip(names, (v for _, v in combo))) for combo in combos]
        first = self.first()
        states.sort(key=lambda s: s != first)
        return [self.render(**s) for s in states]

    # ------------------------------------------------------------------ the page's form

    def to_html(self) -> str:
        """The static explorer: native controls, one frame per state, the first one shown."""
        uid = f"tx-explorer-{self.slug}-{next(_SERIAL)}"  # unique on a page with two explorers
        frames = self.frames()
        controls = []
        for name, control in self.controls.items():
            cid = f"{uid}-{_SLUG.sub('-', name.lower())}"
            label = html.escape(self.labels()[name])
            index = _index(control, control.value, type(control).__name__)
            if isinstance(control, Choice):
                options = "".join(
                    f'<option value="{i}"{" selected" if i == index else ""}>{html.escape(text)}</option>'
                    for i, (text, _) in enumerate(control.options)
                )
                field = f'<select id="{cid}" data-control="{html.escape(name)}">{options}</select>'
            else:
                labels = html.escape(json.dumps([text for text, _ in control.options]))
                field = (
                    f'<input type="range" id="{cid}" data-control="{html.escape(name)}" min="0" '
                    f'max="{len(control.options) - 1}" step="1" value="{index}" data-labels="{labels}" '
                    f'aria-valuetext="{html.escape(control.options[index][0])}">'
                    f'<output for="{cid}">{html.escape(control.options[index][0])}</output>'
                )
            controls.append(f'<label for="{cid}">{label}</label>{field}')
        parts = [
            f'<div class="tx-explorer" id="{uid}" data-states="{len(frames)}">',
            # Hidden until tx-explorer.js runs: without JavaScript the reader sees the first
            # state as a plain figure, and no control that would do nothing.
            '<div class="tx-explorer-controls" hidden>'
            + "".join(f'<span class="tx-explorer-control">{c}</span>' for c in controls) + "</div>",
        ]
        for i, frame in enumerate(frames):
            data = base64.b64encode(frame.png).decode("ascii")
            text = f'<pre class="tx-explorer-text">{html.escape(frame.text)}</pre>' if frame.text else ""
            parts.append(
                f'<div class="tx-explorer-frame" data-state="{frame.key}"{" hidden" if i else ""}>'
                f'<img src="data:image/png;base64,{data}" alt="{html.escape(frame.alt)}">{text}</div>'
            )
        parts.append("</div>")
        return "\n".join(parts)

    # ------------------------------------------------------------------ the notebook's form

    def widget(self):
        """Live ipywidgets: the controls above the current state's figure and printed text.

        The figure is an ``ipywidgets.Image`` whose bytes are the state's finished PNG, drawn
        off screen as the page's frames are, and replaced whole at each change; the printed
        text is an ``HTML`` widget, replaced whole too. If ``draw`` fails for a state (a typed
        word the model does not know, say), the text says why and the figure is hidden until
        a state draws again: the controls and the cell stay as they were.
        """
        import ipywidgets as widgets

        labels = self.labels()
        boxes = {name: c.widget(labels[name]) for name, c in self.controls.items()}
        image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%", height="auto"))
        text = widgets.HTML()

        def values() -> dict[str, Any]:
            return {name: c.value_of(boxes[name].value) for name, c in self.controls.items()}

        def show(state: dict[str, Any]) -> None:
            png, printed = self._draw(state)
            image.value = png  # (no tooltip: ipywidgets 8.1's ImageView fails to render with one)
            if image.layout.display == "none":  # shown again after a state that failed
                image.layout.display = None
            text.value = f'<pre class="tx-explorer-text">{html.escape(printed)}</pre>' if printed else ""

        def redraw(change=None) -> None:
            state = values()
            try:
                show(state)
            except Exception as error:  # shown beside the controls: a callback's error has no cell
                image.layout.display = "none"
                shown = ", ".join(f"{labels[n]} = {v!r}" for n, v in state.items())
                text.value = (f'<pre class="tx-explorer-error">could not draw {html.escape(shown)}: '
                              f"{html.escape(type(error).__name__)}: {html.escape(str(error))}</pre>")

        show(values())  # the first state: an error here is the cell's error, as for any figure
        for box in boxes.values():
            box.observe(redraw, names="value")
        view = widgets.VBox([widgets.HBox(list(boxes.values())), image, text])
        view.add_class("tx-explorer-live")
        return view

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        labels = self.labels()
        data = {"text/plain": f"Explorer({self.slug}: {', '.join(labels.values())}; {self.n_states} states)"}
        if self not in _SHOWN:
            _SHOWN.append(self)
        if os.environ.get(STATIC_ENV) == "1":  # the book's build: every state, for the page
            data["text/html"] = self.to_html()
            return data
        view = self.widget()
        key = "application/vnd.jupyter.widget-view+json"
        data[key] = view._repr_mimebundle_()[key]
        # For viewers without widgets (a saved notebook on GitHub, nbviewer): the first state.
        data["image/png"] = base64.b64encode(view.children[1].value).decode("ascii")
        return data


def redraw_shown() -> int:
    """Draw the first and the last state of every explorer this kernel has shown, now.

    A learner turns an explorer's controls after Run All, when every later cell has run, and
    a later cell can break an explorer the cells above it built: chapter 14's hidden cell once
    rebound ``top``, the colour scale its ``draw`` reads, and every change after Run All failed
    in JupyterLab, though the build had drawn every frame before that cell ran. The book build
    runs this after a chapter's last cell (``_ext/execute_chapters.py``), so such a chapter
    fails the build. Returns how many explorers it drew; raises ExplorerError naming the one
    that failed.
    """
    for explorer in _SHOWN:
        states = [explorer.first(), {name: c.options[-1][1] for name, c in explorer.controls.items()}]
        for values in states:
            try:
                explorer._draw(values)
            except Exception as error:
                raise ExplorerError(
                    f"explorer {explorer.slug} drew its state {values} when its cell ran, but no longer "
                    f"after the notebook's last cell: {type(error).__name__}: {error}. A cell below "
                    "it changed a name its draw function reads; give that cell's name another name."
                ) from error
    return len(_SHOWN)


def explore(draw: Callable[..., Any], *, alt: str | None = None, max_states: int = MAX_STATES,
            dpi: float | None = None, **controls: Choice | Grid) -> Explorer:
    """An explorer of ``draw(**values)`` over the given controls, shown by displaying it.

    ``alt`` is a template for each frame's alt text, filled with the state's values (a Choice's
    option label, a Grid's number), e.g. ``"attention of {french!r}"``. ``dpi`` defaults to
    matplotlib's ``savefig.dpi``, so a frame is drawn as the notebook draws any other figure.
    """
    return Explorer(draw, controls, alt=alt, max_states=max_states, dpi=dpi)
