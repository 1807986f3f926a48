"""tx.explorer: the page's frames are what draw makes, the limits hold, the HTML is well formed."""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from tx.explorer import MAX_STATES, STATIC_ENV, Choice, ExplorerError, Grid, explore  # noqa: E402


def line(word: str, n: int):
    """A small figure that depends on both values, and a printed line that belongs to the state."""
    print(f"{word} with {n} points")
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot(range(n), [len(word) * i for i in range(n)])
    ax.set_title(word)
    return fig


def small():
    return explore(line, word=Choice(["le chat", "la pomme", "merci"], value="la pomme", label="French"),
                   n=Grid([2, 5, 9], value=5), alt="a line for {word!r} with {n} points")


class Page(HTMLParser):
    """The explorer's text/html form, parsed: its controls, labels and frames."""

    def __init__(self):
        super().__init__()
        self.labels, self.controls, self.frames, self.options = {}, {}, [], {}
        self._label, self._select, self._frame, self._pre = None, None, None, False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "label":
            self._label = a["for"]
            self.labels[self._label] = ""
        elif tag in ("select", "input"):
            self.controls[a["id"]] = a
            if tag == "select":
                self._select = a["id"]
                self.options[a["id"]] = []
        elif tag == "option":
            self.options[self._select].append(a)
        elif tag == "div" and "tx-explorer-frame" in a.get("class", ""):
            self._frame = {"state": a["data-state"], "hidden": "hidden" in a, "text": ""}
            self.frames.append(self._frame)
        elif tag == "img" and self._frame is not None:
            self._frame["src"], self._frame["alt"] = a["src"], a["alt"]
        elif tag == "pre":
            self._pre = True

    def handle_endtag(self, tag):
        if tag == "label":
            self._label = None
        elif tag == "pre":
            self._pre = False

    def handle_data(self, data):
        if self._label:
            self.labels[self._label] += data
        if self._pre and self._frame is not None:
            self._frame["text"] += data


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    return page


def test_each_frame_is_what_draw_makes_for_its_state():
    ex = small()
    page = parse(ex.to_html())
    frames = {f["state"]: f for f in page.frames}
    # "merci" is option 2 and 9 is value 2: the frame the page shows for the controls at (2, 2).
    live = ex.render(word="merci", n=9)
    assert live.key == "2-2"
    stored = base64.b64decode(frames["2-2"]["src"].removeprefix("data:image/png;base64,"))
    assert stored == live.png
    assert frames["2-2"]["text"] == "merci with 9 points\n"
    assert frames["2-2"]["alt"] == "a line for 'merci' with 9 points"
    # and a different state is a different picture
    assert stored != base64.b64decode(frames["0-0"]["src"].split(",", 1)[1])


def test_one_frame_per_state_and_the_first_state_shown():
    page = parse(small().to_html())
    states = [f["state"] for f in page.frames]
    assert sorted(states) == sorted(f"{i}-{j}" for i in range(3) for j in range(3))
    shown = [f["state"] for f in page.frames if not f["hidden"]]
    assert shown == ["1-1"], "only the first state (la pomme, 5) is visible without JavaScript"
    assert len({f["alt"] for f in page.frames}) == 9, "every frame's alt text names its own state"


def test_controls_have_labels_and_every_value():
    page = parse(small().to_html())
    assert set(page.labels) == set(page.controls), "every control has a <label for=...>"
    assert sorted(page.labels.values()) == ["French", "n"]
    select = next(c for c in page.controls.values() if c.get("data-control") == "word")
    assert [o["value"] for o in page.options[select["id"]]] == ["0", "1", "2"]
    assert [o for o in page.options[select["id"]] if "selected" in o] == [{"value": "1", "selected": None}]
    slider = next(c for c in page.controls.values() if c.get("data-control") == "n")
    assert (slider["type"], slider["min"], slider["max"], slider["value"]) == ("range", "0", "2", "1")
    assert slider["data-labels"] == '["2", "5", "9"]'


def test_labels_and_text_are_escaped():
    def draw(s):
        print("<b>&</b>")
        return plt.figure(figsize=(1, 1))

    html = explore(draw, s=Choice(['"quoted" <tag>'])).to_html()
    assert "<tag>" not in html and "<b>" not in html
    assert parse(html).frames[0]["text"] == "<b>&</b>\n"


def test_too_many_states_is_an_error_that_says_what_to_do():
    with pytest.raises(ExplorerError, match=r"65 states \(13 a x 5 b\).*fewer values"):
        explore(line, a=Choice(list(range(13))), b=Grid([1, 2, 3, 4, 5]))
    assert explore(line, a=Choice(list(range(16))), b=Grid([1, 2, 3, 4])).n_states == MAX_STATES


def test_bad_controls_and_values_are_errors():
    with pytest.raises(ExplorerError, match="not one of its options"):
        Choice(["a", "b"], value="c")
    with pytest.raises(ExplorerError, match="increasing order"):
        Grid([3, 1, 2])
    with pytest.raises(ExplorerError, match="not a Choice or a Grid"):
        explore(line, word=["a", "b"])
    with pytest.raises(ExplorerError, match="exactly the controls"):
        small().render(word="merci")


def test_draw_must_return_a_figure():
    def shows(word):
        plt.figure()

    with pytest.raises(ExplorerError, match="return fig"):
        explore(shows, word=Choice(["a"])).to_html()
    plt.close("all")


def test_an_axes_stands_for_its_figure_and_frames_close_their_figures():
    before = len(plt.get_fignums())

    def axes(word):
        return plt.subplots(figsize=(2, 1))[1]

    assert len(explore(axes, word=Choice(["a", "b"])).frames()) == 2
    assert len(plt.get_fignums()) == before


def test_frames_are_compact():
    ex = explore(lambda n: line("x" * n, 50), n=Grid([1, 2]), dpi=80)
    for frame in ex.frames():
        assert frame.png.startswith(b"\x89PNG") and len(frame.png) < 40_000
        width = int.from_bytes(frame.png[16:20], "big")
        assert width <= 3 * 80 + 10, f"a 3-inch figure at 80 dpi, got {width} px"


def test_the_book_build_gets_every_frame_and_a_kernel_only_the_widget(monkeypatch):
    calls = []

    def draw(word, n):
        calls.append((word, n))
        return line(word, n)

    def explorer():
        return explore(draw, word=Choice(["le chat", "la pomme", "merci"], value="la pomme"),
                       n=Grid([2, 5, 9], value=5))

    monkeypatch.setenv(STATIC_ENV, "1")  # as _ext/book_site.py sets it for the build's kernels
    page = explorer()._repr_mimebundle_()
    assert set(page) == {"text/plain", "text/html"}, "the book build gets no widget view"
    assert page["text/html"].count('class="tx-explorer-frame"') == 9 and len(calls) == 9
    first_frame = parse(page["text/html"]).frames[0]["src"].split(",", 1)[1]

    monkeypatch.delenv(STATIC_ENV)
    calls.clear()
    notebook = explorer()._repr_mimebundle_()
    assert set(notebook) == {"text/plain", "application/vnd.jupyter.widget-view+json", "image/png"}
    assert calls == [("la pomme", 5)], "a kernel draws the state it shows, not every frame"
    view = notebook["application/vnd.jupyter.widget-view+json"]
    assert re.fullmatch(r"[0-9a-f]{32}", view["model_id"])
    # the fallback for viewers without widgets is the first state, the page's first frame
    assert notebook["image/png"] == first_frame
    assert len(notebook["text/plain"]) < 200


def test_the_live_widget_has_one_control_per_value_kind():
    ex = explore(line, word=Choice(["a", "b"]), n=Grid([2, 4, 8], free=(2, 8, 1)))
    box = ex.widget()
    word, n = box.children[0].children
    assert type(word).__name__ == "Dropdown" and word.options == (("a", 0), ("b", 1)) and word.label == "a"
    assert type(n).__name__ == "IntSlider" and (n.min, n.max, n.value) == (2, 8, 2)
    tau = Grid([0.1, 1.0, 10.0], value=1.0, free=(0.1, 10.0, 0.05), log=True).widget("tau")
    assert type(tau).__name__ == "FloatLogSlider" and tau.value == pytest.approx(1.0)
    fixed = Grid([4, 16, 64], value=16)
    slider = fixed.widget("d")
    assert type(slider).__name__ == "SelectionSlider" and slider.label == "16"
    assert fixed.value_of(slider.value) == 16


def test_a_menu_shows_an_option_whose_value_is_none():
    # ipywidgets reads a Dropdown value of None as "no selection" (an empty menu): chapter
    # 14's "all heads" is such an option. The menu holds positions, draw gets the values.
    calls = []

    def draw(head):
        calls.append(head)
        return plt.figure(figsize=(1, 1))

    head = Choice([("all heads", None), ("head 1", 0), ("head 2", 1)])
    box = explore(draw, head=head).widget()
    menu = box.children[0].children[0]
    assert menu.label == "all heads" and menu.index == 0
    menu.index = 2
    assert calls == [None, 1]


def test_the_live_figure_is_the_states_finished_png_and_its_text():
    ex = small()
    box = ex.widget()
    word, n = box.children[0].children
    image, text = box.children[1:]
    assert "tx-explorer-live" in box._dom_classes
    first = ex.render(word="la pomme", n=5)
    assert (image.format, image.value) == ("png", first.png), "the first state, drawn as the page draws it"
    assert "la pomme with 5 points" in text.value
    word.index, n.index = 2, 2
    last = ex.render(word="merci", n=9)
    assert image.value == last.png and image.value != first.png
    assert "merci with 9 points" in text.value
    assert not plt.get_fignums(), "the live view closes the figures it draws"


def test_a_state_that_cannot_be_drawn_says_why_and_keeps_the_controls():
    def draw(french):
        if french == "zut":
            raise KeyError("zut")
        return plt.figure(figsize=(1, 1))

    box = explore(draw, french=Choice(["le chat", "merci"], free=True)).widget()
    typed, image, text = box.children[0].children[0], *box.children[1:]
    typed.value = "zut"
    assert image.layout.display == "none"
    assert "could not draw french = &#x27;zut&#x27;: KeyError" in text.value
    typed.value = "merci"
    assert image.layout.display is None and text.value == "" and bytes(image.value).startswith(b"\x89PNG")
    plt.close("all")


def test_alt_names_a_choice_by_its_label_and_a_grid_by_its_number():
    ex = explore(lambda head, tau: plt.figure(figsize=(1, 1)), alt="{head} at temperature {tau:.1f}",
                 head=Choice([("all heads", "all"), ("head 1", 0)]), tau=Grid([0.5, 2.0]))
    assert ex.describe({"head": 0, "tau": 2.0}) == "head 1 at temperature 2.0"
    plain = explore(lambda head: plt.figure(figsize=(1, 1)), head=Choice([("all heads", "all"), ("head 1", 0)]))
    assert plain.describe({"head": "all"}) == "head all heads"


def test_the_live_widget_redraws_when_a_control_moves():
    calls = []

    def draw(n, word):
        calls.append((n, word))
        return plt.figure(figsize=(1, 1))

    box = explore(draw, n=Grid([1, 2, 3], free=(1, 9, 1)), word=Choice(["a", "b"])).widget()
    slider, menu = box.children[0].children
    slider.value = 7  # a value off the page's grid: the notebook's slider is free
    menu.label = "b"
    assert calls == [(1, "a"), (7, "a"), (7, "b")]
    assert not plt.get_fignums(), "the live view closes the figures it shows"


def test_a_free_choice_is_a_text_box_in_jupyter_that_takes_any_text():
    calls = []

    def draw(french):
        calls.append(french)
        return plt.figure(figsize=(1, 1))

    ex = explore(draw, french=Choice(["le chat noir", "je suis étudiant"], free=True))
    box = ex.widget().children[0].children[0]
    assert type(box).__name__ == "Combobox" and box.options == ("le chat noir", "je suis étudiant")
    box.value = "la maison bleue"  # not an option: the notebook draws it all the same
    assert calls == ["le chat noir", "la maison bleue"]
    assert len(parse(ex.to_html()).frames) == 2, "the page offers the options"
    with pytest.raises(ExplorerError, match="text options only"):
        Choice([("all heads", "all"), ("head 1", 0)], free=True)


def test_redraw_shown_draws_every_shown_explorer_and_names_one_a_later_cell_broke(monkeypatch):
    # A learner turns the controls after Run All: the explorer's draw then reads the names as
    # the last cell left them. The build draws each shown explorer once more after that cell.
    from tx import explorer as module

    monkeypatch.setattr(module, "_SHOWN", [])
    monkeypatch.setenv(STATIC_ENV, "1")
    scale = {"top": 2.0}

    def bars(k):
        fig, ax = plt.subplots(figsize=(2, 2))
        ax.bar([0], [k / scale["top"]])
        return fig

    shown = explore(bars, k=Grid([1, 2, 3]))
    never_shown = explore(bars, k=Grid([4, 5]))
    shown._repr_mimebundle_()
    shown._repr_mimebundle_()  # shown twice, drawn again once
    assert module._SHOWN == [shown] and never_shown not in module._SHOWN
    assert module.redraw_shown() == 1
    scale["top"] = "a name reused by a later cell"
    with pytest.raises(ExplorerError, match=r"explorer bars drew its state \{'k': 1\} when its cell ran, but no "
                                            r"longer after the notebook's last cell: TypeError"):
        module.redraw_shown()
