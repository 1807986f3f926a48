"""Tests for tx.viz: each figure draws what its docstring promises, from tensors or arrays.

Axis legend: H heads, Tq query positions, Tk key positions, P positions, D d_model, V vocabulary.
"""

import matplotlib

matplotlib.use("Agg")  # before pyplot: tests run headless

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from tx import viz  # noqa: E402

VOCAB = ["a", "am", "i", "thanks", "student", "<eos>"]


@pytest.fixture(autouse=True)
def _no_show_and_close(monkeypatch):
    """Fail any test whose function calls plt.show(); close every figure afterwards."""

    def _show(*args, **kwargs):
        raise AssertionError("viz functions must not call plt.show()")

    monkeypatch.setattr(plt, "show", _show)
    yield
    plt.close("all")


def _softmax_rows(*shape: int) -> torch.Tensor:
    """Random rows that sum to 1, like attention weights."""
    torch.manual_seed(0)
    return torch.softmax(torch.randn(*shape), dim=-1)


def _labels_visible(ax: Axes, axis: str) -> bool:
    """True if the tick labels of ``axis`` ("x" or "y") are shown."""
    ticks = (ax.xaxis if axis == "x" else ax.yaxis).get_major_ticks()
    return any(t.label1.get_visible() for t in ticks)


# --------------------------------------------------------------------------- attention_heatmap


def test_attention_heatmap_labels_scale_and_colorbar():
    w = _softmax_rows(4, 5).requires_grad_()  # a tensor with grad must be detached, not fail
    q_tokens, k_tokens = ["i", "am", "a", "student"], ["je", "suis", "un", "étudiant", "<eos>"]
    ax = viz.attention_heatmap(w, q_tokens, k_tokens, title="Cross-attention")
    assert isinstance(ax, Axes)
    assert len(ax.images) == 1
    assert ax.images[0].get_clim() == (0.0, 1.0)
    assert ax.images[0].get_cmap().name == "viridis"
    np.testing.assert_allclose(ax.images[0].get_array(), w.detach().numpy())
    assert [t.get_text() for t in ax.get_yticklabels()] == q_tokens
    assert [t.get_text() for t in ax.get_xticklabels()] == k_tokens
    assert all(t.get_rotation() == 90 for t in ax.get_xticklabels())
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("key", "query")
    assert ax.get_title() == "Cross-attention"
    assert len(ax.figure.axes) == 2  # the heatmap and its colour bar
    assert len(ax.texts) == 0  # annotate is off by default


def test_attention_heatmap_annotates_each_cell_with_two_decimals():
    w = np.array([[0.9, 0.1, 0.0], [0.25, 0.5, 0.25], [0.333, 0.333, 0.334]])
    ax = viz.attention_heatmap(w, annotate=True)
    assert [t.get_text() for t in ax.texts] == [
        "0.90", "0.10", "0.00", "0.25", "0.50", "0.25", "0.33", "0.33", "0.33"]
    # Each number sits in its own cell: text at (column, row).
    assert ax.texts[1].get_position() == (1, 0)
    # Light text on the dark low end of viridis, dark text on the bright high end.
    assert ax.texts[2].get_color() == "white" and ax.texts[0].get_color() == "black"


def test_attention_heatmap_uses_the_given_axes():
    _, given = plt.subplots()
    assert viz.attention_heatmap(_softmax_rows(2, 2), ax=given) is given


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"query_tokens": ["a", "b", "c"]},
         "query_tokens has 3 labels but weights have 4 query rows"),
        ({"key_tokens": ["a"]}, "key_tokens has 1 labels but weights have 5 key columns"),
    ],
)
def test_attention_heatmap_rejects_wrong_token_counts(kwargs, message):
    with pytest.raises(ValueError, match=message):
        viz.attention_heatmap(_softmax_rows(4, 5), **kwargs)


def test_attention_heatmap_rejects_several_heads():
    with pytest.raises(ValueError, match=r"\[Tq, Tk\]"):
        viz.attention_heatmap(_softmax_rows(2, 3, 3))


# --------------------------------------------------------------------------- attention_grid


def test_attention_grid_one_panel_per_head_with_outer_labels_only():
    tokens = ["the", "cat", "sat"]
    given = plt.figure(figsize=(7, 4))  # a given figure keeps ncols as asked
    fig = viz.attention_grid(_softmax_rows(6, 3, 3), tokens, tokens, ncols=4, suptitle="Layer 1",
                             fig=given)
    assert fig is given
    heads = [ax for ax in fig.axes if ax.images]
    colorbars = [ax for ax in fig.axes if not ax.images]
    assert [ax.get_title() for ax in heads] == [f"head {h}" for h in range(1, 7)]
    assert all(ax.get_visible() for ax in heads)
    assert len(colorbars) == 1  # one shared scale, not one per head
    assert all(ax.images[0].get_clim() == (0.0, 1.0) for ax in heads)
    assert fig.get_suptitle() == "Layer 1"
    # 2 rows x 4 columns, 6 heads: heads 1-2 have a head below them, heads 3-6 do not.
    assert [_labels_visible(ax, "x") for ax in heads] == [False, False, True, True, True, True]
    assert [_labels_visible(ax, "y") for ax in heads] == [True, False, False, False, True, False]
    assert [t.get_text() for t in heads[4].get_yticklabels()] == tokens


def test_attention_grid_custom_titles_given_figure_and_single_head():
    fig = plt.figure()
    out = viz.attention_grid(_softmax_rows(2, 3, 4), titles=["self", "cross"], fig=fig)
    assert out is fig
    assert [ax.get_title() for ax in fig.axes if ax.images] == ["self", "cross"]

    single = viz.attention_grid(_softmax_rows(3, 4))  # [Tq, Tk] is one head
    assert [ax.get_title() for ax in single.axes if ax.images] == ["head 1"]


def test_attention_grid_rejects_other_ranks_and_bad_titles():
    with pytest.raises(ValueError, match=r"\[H, Tq, Tk\]"):
        viz.attention_grid(_softmax_rows(2, 2, 3, 3))
    with pytest.raises(ValueError, match="titles has 1 entries but weights have 2 heads"):
        viz.attention_grid(_softmax_rows(2, 3, 3), titles=["only one"])


# --------------------------------------------------------------------------- positional encoding


def _sinusoidal(positions: int, d_model: int) -> torch.Tensor:
    """The paper's sinusoidal table [P, D], built here so the test needs no other module."""
    pos = torch.arange(positions, dtype=torch.float32)[:, None]  # (P, 1)
    freq = 10000 ** (-torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)  # (D/2,)
    pe = torch.zeros(positions, d_model)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq)
    return pe


def test_positional_encoding_heatmap_symmetric_signed_scale():
    pe = _sinusoidal(20, 16)
    ax = viz.positional_encoding_heatmap(pe, max_dims=10)
    (im,) = ax.images
    assert im.get_clim() == (-1.0, 1.0)
    assert im.get_cmap().name == "RdBu"
    assert im.get_array().shape == (20, 10)  # max_dims crops the dimensions, not positions
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("embedding dimension", "position")
    assert ax.get_title() == "Positional encoding"
    assert len(ax.figure.axes) == 2  # with a colour bar


def test_encoding_curves_one_line_per_dimension():
    pe = _sinusoidal(30, 8)
    ax = viz.encoding_curves(pe, dims=(0, 3, 6))
    assert len(ax.lines) == 3
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["dim 0", "dim 3", "dim 6"]
    np.testing.assert_allclose(ax.lines[1].get_ydata(), pe[:, 3].numpy())
    with pytest.raises(ValueError, match=r"dims \[8\] out of range"):
        viz.encoding_curves(pe, dims=(1, 8))


# --------------------------------------------------------------------------- vector_boxes


def test_vector_boxes_numbers_labels_and_symmetric_scale():
    v = torch.tensor([[0.5, -2.0, 1.0], [0.0, 1.5, -0.25]])
    ax = viz.vector_boxes(v, row_labels=["q1", "k1"], title="Thinking")
    assert [t.get_text() for t in ax.texts] == ["0.50", "-2.00", "1.00", "0.00", "1.50", "-0.25"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["q1", "k1"]
    assert len(ax.get_xticks()) == 0
    (mesh,) = ax.collections
    assert mesh.get_clim() == (-2.0, 2.0)  # symmetric about 0, set by the largest |value|
    assert mesh.get_cmap().name == "RdBu"
    assert ax.texts[1].get_position() == (1.5, 0.5)  # value [0, 1] in the centre of its box


def test_vector_boxes_format_no_annotation_and_zero_vectors():
    ax = viz.vector_boxes(np.array([1.0, 2.0]), fmt="{:.1f}")  # one [D] vector is one row
    assert [t.get_text() for t in ax.texts] == ["1.0", "2.0"]
    assert len(viz.vector_boxes(np.ones((2, 2)), annotate=False).texts) == 0
    # All zeros must not give a degenerate [0, 0] colour scale.
    assert viz.vector_boxes(np.zeros((1, 3))).collections[0].get_clim() == (-1.0, 1.0)
    with pytest.raises(ValueError, match="row_labels has 1 labels but vectors have 2 rows"):
        viz.vector_boxes(np.ones((2, 2)), row_labels=["q1"])


# --------------------------------------------------------------------------- training curves


def _history(n: int = 40, with_lr: bool = True) -> dict:
    """A fake training log: noisy decaying loss, valid every 10 steps, a warm-up schedule."""
    rng = np.random.default_rng(0)
    steps = list(range(1, n + 1))
    hist = {
        "step": steps,
        "train_loss": [3.0 * np.exp(-s / 15) + 1.0 + 0.3 * rng.standard_normal() for s in steps],
        "valid_step": steps[9::10],
        "valid_loss": [3.0 * np.exp(-s / 15) + 1.1 for s in steps[9::10]],
    }
    if with_lr:
        hist["lr"] = [1e-3 * min(s / 10, (10 / s) ** 0.5) for s in steps]
    return hist


def test_loss_curves_train_smoothed_valid_and_lr_on_twin_axis():
    hist = _history()
    ax = viz.loss_curves(hist)
    assert ax.get_ylabel() == "loss"  # the main Axes is returned, not the lr twin
    raw, smoothed, valid = ax.lines
    np.testing.assert_allclose(raw.get_ydata(), hist["train_loss"])
    assert np.std(np.diff(smoothed.get_ydata())) < np.std(np.diff(raw.get_ydata()))
    assert valid.get_marker() == "o" and valid.get_linestyle() == "None"
    np.testing.assert_allclose(valid.get_xdata(), hist["valid_step"])
    (twin,) = [a for a in ax.figure.axes if a is not ax]
    assert twin.get_ylabel() == "learning rate"
    np.testing.assert_allclose(twin.lines[0].get_ydata(), hist["lr"])
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["train", "train (smoothed)", "valid", "learning rate"]


def test_loss_curves_legend_goes_where_the_caller_says():
    # Chapter 10 puts it under the plot, where it covers no curve (issue 24).
    ax = viz.loss_curves(_history(), legend=dict(loc="upper center", bbox_to_anchor=(0.5, -0.2)))
    assert ax.get_legend()._loc == 9  # "upper center"
    assert viz.loss_curves(_history()).get_legend()._loc == 1  # "upper right" by default


def test_loss_curves_smoothing_keeps_a_constant_loss_constant():
    # Without bias correction an EMA starts near 0 and would bend a flat curve.
    ax = viz.loss_curves({"step": [0, 1, 2, 3], "train_loss": [2.0] * 4})
    np.testing.assert_allclose(ax.lines[1].get_ydata(), [2.0] * 4)
    assert len(ax.lines) == 2 and len(ax.figure.axes) == 1  # no valid data, no lr axis


@pytest.mark.parametrize("missing", ["step", "train_loss", "valid_step"])
def test_loss_curves_names_the_missing_key(missing):
    hist = _history(with_lr=False)
    del hist[missing]
    with pytest.raises(ValueError, match=f"missing the key '{missing}'"):
        viz.loss_curves(hist)


def test_lr_schedule_line_and_peak():
    steps = np.arange(1, 101)
    lrs = 1e-3 * np.minimum(steps / 20, np.sqrt(20 / steps))
    ax = viz.lr_schedule(steps, lrs)
    (line,) = ax.lines
    np.testing.assert_allclose(line.get_ydata(), lrs)
    assert "at step 20" in ax.texts[0].get_text()
    assert ax.get_ylim()[0] == 0.0
    assert ax.get_title() == "Learning-rate schedule"
    with pytest.raises(ValueError, match="equal length"):
        viz.lr_schedule(steps, lrs[:-1])


# --------------------------------------------------------------------------- decoding


def test_probability_bars_vocab_highlight_and_range():
    probs = torch.tensor([0.05, 0.10, 0.60, 0.05, 0.15, 0.05])
    ax = viz.probability_bars(probs, VOCAB, title="step 1", highlight="i")
    bars = ax.patches
    assert len(bars) == 6
    np.testing.assert_allclose([b.get_height() for b in bars], probs.numpy())
    assert [t.get_text() for t in ax.get_xticklabels()] == VOCAB
    assert ax.get_ylim() == (0.0, 1.0)
    colours = [b.get_facecolor() for b in bars]
    assert colours[2] != colours[0] and len(set(colours[:2] + colours[3:])) == 1
    # An index highlights the same bar as its token.
    by_index = viz.probability_bars(probs, VOCAB, highlight=2).patches
    assert [b.get_facecolor() for b in by_index] == colours


def test_probability_bars_top_k_keeps_the_largest_in_order():
    probs = np.array([0.05, 0.10, 0.60, 0.05, 0.15, 0.05])
    ax = viz.probability_bars(probs, VOCAB, top_k=3, highlight="student")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["i", "student", "am"]
    assert [b.get_height() for b in ax.patches] == pytest.approx([0.60, 0.15, 0.10])
    assert ax.patches[1].get_facecolor() != ax.patches[0].get_facecolor()


def test_probability_bars_keep_words_apart_on_a_narrow_panel():
    # Fig. 10.3: six words on half the column ran together ("thanksstudent<eos>") when level.
    fig, (left, right) = viz.subplots(1, 2, row_height=3.2)
    for ax in (left, right):
        viz.probability_bars(np.full(6, 1 / 6), VOCAB, ax=ax, highlight="thanks")
    assert {t.get_rotation() for t in left.get_xticklabels()} == {45.0}
    assert viz.figure_problems(fig) == []
    # With room, the same words stay level.
    wide = viz.probability_bars(np.full(6, 1 / 6), VOCAB)
    assert {t.get_rotation() for t in wide.get_xticklabels()} == {0.0}


def test_probability_bars_label_inside_keeps_a_tall_bar_s_value_in_the_bar():
    probs = np.array([0.9, 0.05, 0.05])
    ax = viz.probability_bars(probs, VOCAB[:3], label_inside=0.8)
    labels = {t.get_text(): t for t in ax.texts if t.get_text()}
    assert set(labels) == {"0.90", "0.05"}
    assert labels["0.90"].get_color() == "white" and labels["0.05"].get_color() != "white"
    default = viz.probability_bars(probs, VOCAB[:3])
    assert all(t.get_color() != "white" for t in default.texts)


def test_probability_bars_rejects_bad_input():
    with pytest.raises(ValueError, match="tokens has 5 labels but probs has 6 entries"):
        viz.probability_bars(np.full(6, 1 / 6), VOCAB[:5])
    with pytest.raises(ValueError, match="'dog' is not one of the tokens"):
        viz.probability_bars(np.full(6, 1 / 6), VOCAB, highlight="dog")
    with pytest.raises(ValueError, match="top_k must be at least 1"):
        viz.probability_bars(np.full(6, 1 / 6), VOCAB, top_k=0)


BOS = 6
TREE_VOCAB = [*VOCAB, "<bos>"]  # ids 0..5 as VOCAB, 6 = <bos>


def _trace() -> list[list[dict]]:
    """Beam width 2 translating to "i am a student": 9 nodes (2 pruned, 2 finished), 8 edges."""

    def node(parent, token, score, finished=False, pruned=False):
        return {"parent": parent, "token": token, "score": score,
                "finished": finished, "pruned": pruned}

    return [
        [node(None, BOS, 0.0)],
        [node(0, 2, -0.1), node(0, 1, -2.5), node(0, 0, -3.9, pruned=True)],
        [node(0, 1, -0.3), node(1, 5, -2.9, finished=True), node(0, 3, -3.4, pruned=True)],
        [node(0, 0, -0.5)],
        [node(0, 4, -0.7)],
        [node(0, 5, -0.8, finished=True)],
    ]


def test_beam_search_tree_one_box_per_node_one_line_per_edge():
    trace = _trace()
    ax = viz.beam_search_tree(trace, TREE_VOCAB)
    n_nodes = sum(len(step) for step in trace)
    assert len(ax.texts) == n_nodes == 10
    assert len(ax.lines) == n_nodes - 1
    assert ax.texts[0].get_text() == "<bos>\n0.00"
    assert ax.texts[1].get_text() == "i\n-0.10"
    # The edge into trace[2][1] ("<eos>") starts at its parent trace[1][1], one step back.
    texts = [t.get_text() for t in ax.texts]
    eos = texts.index("<eos>\n-2.90")
    assert ax.texts[eos].get_position() == (2, 1)
    edge = ax.lines[eos - 1]  # lines are drawn for every node but the root, in the same order
    assert list(edge.get_xdata()) == [1, 2] and list(edge.get_ydata()) == [1, 1]
    # Finished boxes have their own edge colour; pruned ones are greyed.
    finished = ax.texts[eos].get_bbox_patch().get_edgecolor()
    kept = ax.texts[1].get_bbox_patch().get_edgecolor()
    assert finished != kept
    pruned = texts.index("a\n-3.90")
    assert to_rgba(ax.texts[pruned].get_color()) != to_rgba("black")
    assert ax.lines[pruned - 1].get_linestyle() != ax.lines[0].get_linestyle()
    assert ax.get_title() == "Beam search"


def test_beam_search_tree_draws_the_best_hypothesis_on_the_top_row():
    trace = _trace()
    # the finished "<eos>" after "am" (trace[2][1]) is drawn on row 0 of step 2, "am" on row 0 of step 1
    ax = viz.beam_search_tree(trace, TREE_VOCAB, best=[6, 1, 5])
    texts = [t.get_text() for t in ax.texts]
    assert ax.texts[texts.index("<eos>\n-2.90")].get_position() == (2, 0)
    assert ax.texts[texts.index("am\n-2.50")].get_position() == (1, 0)
    assert ax.texts[texts.index("i\n-0.10")].get_position() == (1, 1)
    # every edge still joins a node to its parent's row
    edge = ax.lines[texts.index("<eos>\n-2.90") - 1]
    assert list(edge.get_ydata()) == [0, 0] and edge.get_linewidth() > ax.lines[0].get_linewidth()
    assert "best, on top" in [t.get_text() for t in ax.get_legend().get_texts()]
    with pytest.raises(ValueError, match="not a hypothesis"):
        viz.beam_search_tree(trace, TREE_VOCAB, best=[6, 3, 5])


def test_beam_search_tree_leaves_the_best_row_empty_after_its_eos():
    """After the best hypothesis ends, no later box sits on its row: it would read as going on past <eos>."""
    # best = "<bos> am <eos>" ends at step 2; the search goes on to step 5 with "i am a ..."
    ax = viz.beam_search_tree(_trace(), TREE_VOCAB, best=[6, 1, 5])
    boxes = {t.get_position() for t in ax.texts}
    assert not any(x > 2 and y == 0 for x, y in boxes)
    assert (3, 1) in boxes and ax.get_ylim()[0] >= 1.5  # the later steps one row down, with room


def test_beam_search_tree_greys_a_beam_the_search_stopped_with():
    # A beam of one: "<eos>" ends the search at step 5 while "a" is still alive; that beam is
    # never extended, so it must not look kept.
    trace = _trace()
    trace[5] = [{"parent": 0, "token": 0, "score": -4.0, "finished": False, "pruned": False,
                 "stopped": True}, trace[5][0]]
    ax = viz.beam_search_tree(trace, TREE_VOCAB, best=[6, 2, 1, 0, 4, 5])
    texts = [t.get_text() for t in ax.texts]
    stopped, kept = texts.index("a\n-4.00"), texts.index("a\n-0.50")
    assert to_rgba(ax.texts[stopped].get_color()) != to_rgba("black")
    assert to_rgba(ax.texts[kept].get_color()) == to_rgba("black")
    assert ax.lines[stopped - 1].get_linestyle() != ax.lines[kept - 1].get_linestyle()


def test_beam_search_tree_accepts_a_callable_and_checks_parents():
    ax = viz.beam_search_tree(_trace(), lambda i: TREE_VOCAB[i].upper())
    assert ax.texts[1].get_text() == "I\n-0.10"
    bad = _trace()
    bad[3][0]["parent"] = 5  # step 2 has only 3 hypotheses
    with pytest.raises(ValueError, match=r"trace\[3\]\[0\] has parent 5"):
        viz.beam_search_tree(bad, TREE_VOCAB)


# --------------------------------------------------------------------------- stack_diagram


def test_stack_diagram_boxes_and_memory_arrows():
    ax = viz.stack_diagram(2, 3)
    texts = [t.get_text() for t in ax.texts]
    assert [t for t in texts if t.startswith("Encoder ")] == ["Encoder 1", "Encoder 2"]
    decoders = [t for t in texts if t.startswith("Decoder ")]
    assert decoders == ["Decoder 1", "Decoder 2", "Decoder 3"]
    assert len(ax.patches) == 5  # one box per layer
    # The encoder output feeds every decoder: one blue arrow into each.
    blue = to_rgba("tab:blue")
    into_decoders = [a for a in ax.texts if hasattr(a, "arrow_patch") and a.arrow_patch
                     and to_rgba(a.arrow_patch.get_edgecolor()) == blue]
    assert len(into_decoders) == 3
    with pytest.raises(ValueError, match="at least one encoder"):
        viz.stack_diagram(0, 6)


def test_layer_diagram_wraps_every_sub_layer_in_add_and_norm():
    ax = viz.layer_diagram()
    texts = [t.get_text() for t in ax.texts]
    boxes = [t for t in texts if t in {"Self-Attention", "Masked Self-Attention", "Encoder-Decoder Attention",
                                         "Feed Forward", "Add & Norm"}]
    # encoder: 2 sub-layers, decoder: 3, each followed by its Add & Norm
    assert boxes == ["Self-Attention", "Add & Norm", "Feed Forward", "Add & Norm",
                     "Masked Self-Attention", "Add & Norm", "Encoder-Decoder Attention", "Add & Norm",
                     "Feed Forward", "Add & Norm"]
    green, blue = to_rgba("tab:green"), to_rgba("tab:blue")
    arrows = [a.arrow_patch for a in ax.texts if getattr(a, "arrow_patch", None)]
    assert sum(to_rgba(a.get_edgecolor()) == green for a in arrows) == 5  # one residual per sub-layer
    assert sum(to_rgba(a.get_edgecolor()) == blue for a in arrows) == 1  # into the cross-attention


def test_positional_encoding_heatmap_ticks_whole_positions():
    from tx import positional_encoding

    ax = viz.positional_encoding_heatmap(positional_encoding(7, 16))
    ticks = [t for t in ax.get_yticks() if 0 <= t <= 6]
    assert ticks and all(float(t).is_integer() for t in ticks)
    plt.close("all")


# --------------------------------------------------------------------------- the size rule


def test_book_style_is_applied_on_import():
    plt.rcParams["figure.dpi"] = 72  # as another library might leave it
    viz.use_book_style()
    assert plt.rcParams["figure.dpi"] == viz.DPI == 96
    assert viz.COLUMN_WIDTH * viz.DPI == 672  # a figure's room in the text column at 1280 px
    for key in ("xtick.labelsize", "ytick.labelsize", "legend.fontsize", "font.size"):
        assert float(plt.rcParams[key]) >= viz.MIN_FONT_PT, key


def test_figure_size_refuses_a_figure_wider_than_the_column():
    assert viz.figure_size(3.0) == (viz.COLUMN_WIDTH, 3.0)
    assert viz.figure_size(2.0, width=5.0) == (5.0, 2.0)
    with pytest.raises(ValueError, match="grid of rows"):
        viz.figure_size(3.0, width=13.0)
    with pytest.raises(ValueError, match="height must be positive"):
        viz.figure_size(0.0)


@pytest.mark.parametrize("n, min_width, expected", [
    (1, 2.2, (1, 1)), (3, 2.2, (1, 3)), (4, 2.2, (2, 2)), (4, 3.0, (2, 2)), (5, 2.2, (2, 3)),
    (8, 1.6, (2, 4)), (2, 4.0, (2, 1)),
])
def test_grid_shape_fills_rows_that_fit_the_column(n, min_width, expected):
    rows, cols = viz.grid_shape(n, min_panel_width=min_width)
    assert (rows, cols) == expected
    assert rows * cols >= n and cols * min_width <= viz.COLUMN_WIDTH


def test_grid_shape_rejects_bad_input():
    with pytest.raises(ValueError, match="n_panels"):
        viz.grid_shape(0)
    with pytest.raises(ValueError, match="min_panel_width"):
        viz.grid_shape(3, min_panel_width=9.0)


def test_subplots_sizes_by_rows_and_refuses_figsize():
    fig, axes = viz.subplots(2, 3, row_height=2.0)
    assert axes.shape == (2, 3)
    assert tuple(fig.get_size_inches()) == (viz.COLUMN_WIDTH, 4.0)
    assert fig.get_layout_engine() is not None  # constrained: labels stay inside the figure
    with pytest.raises(ValueError, match="figsize"):
        viz.subplots(1, 2, figsize=(13, 2))
    with pytest.raises(ValueError, match="column"):
        viz.subplots(1, 4, width=10.0)


def test_figure_problems_names_a_wide_figure_and_small_text():
    good, ax = viz.subplots(1, 1)
    ax.plot([0, 1], [0, 1])
    ax.set_title("fine")
    assert viz.figure_problems(good) == []
    wide, ax = plt.subplots(figsize=(13, 1.9))
    ax.text(0.5, 0.5, "tiny", fontsize=6)
    problems = viz.figure_problems(wide)
    assert any("13 in wide" in p for p in problems), problems
    assert any("'tiny' at 6 pt" in p for p in problems), problems


def test_a_column_wide_figure_saves_at_the_column_s_width():
    # The notebook and tx.explorer save with bbox_inches="tight": the margin must not
    # take a 7-inch figure past 672 px, where the page would shrink it.
    import io

    from PIL import Image

    fig, ax = viz.subplots(1, 1)
    ax.plot([0, 1], [0, 1])
    ax.set_title("fills the column")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    assert Image.open(buffer).width <= viz.COLUMN_WIDTH * viz.DPI
    assert viz.figure_problems(fig) == []
    # Text that sticks out of the figure widens the saved image, and is named.
    ax.text(1.05, 0.5, "a long note beside the plot", transform=ax.transAxes)
    fig.set_layout_engine("none")
    assert any("saves" in p and "px wide" in p for p in viz.figure_problems(fig))


def test_figure_problems_names_tick_labels_that_run_together():
    fig, ax = viz.subplots(1, 1, width=2.5)
    ax.set_xticks(range(6), VOCAB)
    assert any("run together" in p and "'thanks' 'student'" in p for p in viz.figure_problems(fig))
    for label in ax.get_xticklabels():
        label.set(rotation=45, ha="right", rotation_mode="anchor")
    assert viz.figure_problems(fig) == []


def _wide_inputs():
    torch.manual_seed(0)
    trace = [[{"parent": None, "token": 0, "score": 0.0, "finished": False}]]
    for t in range(1, 10):
        trace.append([{"parent": 0, "token": t % len(VOCAB), "score": -0.5 * t,
                       "finished": t == 9}, {"parent": 0, "token": 1, "score": -t * 1.0,
                                              "pruned": True}])
    return {
        "attention_heatmap": lambda: viz.attention_heatmap(_softmax_rows(14, 20)),
        "attention_grid": lambda: viz.attention_grid(_softmax_rows(8, 10, 10)),
        "positional_encoding_heatmap": lambda: viz.positional_encoding_heatmap(torch.randn(50, 64)),
        "encoding_curves": lambda: viz.encoding_curves(torch.randn(50, 16)),
        "vector_boxes": lambda: viz.vector_boxes(torch.randn(3, 16)),
        "loss_curves": lambda: viz.loss_curves({"step": [1, 2, 3], "train_loss": [3.0, 2.0, 1.0],
                                                "lr": [0.1, 0.2, 0.3]}),
        "lr_schedule": lambda: viz.lr_schedule(torch.arange(10.0), torch.arange(10.0)),
        "probability_bars": lambda: viz.probability_bars(torch.full((20,), 0.05),
                                                         [f"w{i}" for i in range(20)]),
        "beam_search_tree": lambda: viz.beam_search_tree(trace, VOCAB),
        "stack_diagram": lambda: viz.stack_diagram(6, 6),
        "layer_diagram": lambda: viz.layer_diagram(),
        "probability_grid": lambda: viz.probability_grid(
            [torch.full((20,), 0.05)] * 7, [f"w{i}" for i in range(20)], [f"step {t}" for t in range(7)],
            top_k=5),
        "vector_panels": lambda: viz.vector_panels(
            {"a": torch.randn(3, 16), "b": torch.randn(3, 16)}, ["x", "y", "z"], nrows=2, height=4.0),
        "pair_circles": lambda: viz.pair_circles(torch.randn(50, 512).clamp(-1, 1), zoom=(64,)),
    }


@pytest.mark.parametrize("name", sorted(_wide_inputs()))
def test_every_figure_follows_the_size_rule_even_for_large_inputs(name):
    drawn = _wide_inputs()[name]()
    fig = drawn if isinstance(drawn, Figure) else drawn.figure
    assert viz.figure_problems(fig) == []


def test_attention_grid_wraps_heads_into_rows_that_fit():
    fig = viz.attention_grid(_softmax_rows(8, 10, 10), ncols=8)
    live = [ax for ax in fig.axes if ax.images]
    assert len(live) == 8
    cols = {round(ax.get_position().x0, 3) for ax in live}
    assert 1 < len(cols) < 8  # wrapped: fewer columns than heads, more than one
    assert fig.get_figwidth() <= viz.COLUMN_WIDTH


def test_show_source_of_a_method_starts_at_the_left_margin():
    from tx.multi_head import MultiHeadAttention

    code = viz.show_source(MultiHeadAttention.forward).data
    assert code.startswith("@guarded(check_inputs)\ndef forward(")  # the guard's line, then the method
    assert "class MultiHeadAttention" not in code  # the method only, not the whole class
    whole = viz.show_source(MultiHeadAttention).data
    assert whole.startswith("class MultiHeadAttention") and code.strip() in whole.replace("\n    ", "\n")


# --------------------------------------------------------------------------- helpers the chapters share


def test_attention_heatmap_names_its_axes_and_puts_a_row_s_colour_bar_below():
    row = _softmax_rows(1, 5)
    ax = viz.attention_heatmap(row, ["it"], list("abcde"), xlabel="French token (key)",
                               ylabel="English word (query)", colorbar="bottom")
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("French token (key)", "English word (query)")
    heatmap, bar = ax.figure.axes
    assert bar.get_xlabel() == "weight"  # a horizontal colour bar, labelled under it
    assert bar.get_position().y1 < heatmap.get_position().y0  # below the map
    assert viz.figure_problems(ax.figure) == []
    with pytest.raises(ValueError, match="colorbar must be"):
        viz.attention_heatmap(row, colorbar="top")


def test_markdown_table_lays_rows_out_as_markdown():
    table = viz.markdown_table(["French", "English", "ok"], [("le chat", "the cat", "✓"), ("a|b", 2, "")])
    assert table.data == ("| French | English | ok |\n| --- | --- | --- |\n"
                          "| le chat | the cat | ✓ |\n| a\\|b | 2 |  |")
    aligned = viz.markdown_table(["model", "BLEU"], [("tx", "31.20")], align=["left", "right"],
                                 intro="Measured now:")
    assert aligned.data == "Measured now:\n\n| model | BLEU |\n| --- | ---: |\n| tx | 31.20 |"
    with pytest.raises(ValueError, match="row 0 has 1 values for 2 columns"):
        viz.markdown_table(["a", "b"], [("x",)])
    with pytest.raises(ValueError, match="align needs one of"):
        viz.markdown_table(["a"], [], align=["middle"])


def test_probability_grid_one_panel_per_step_in_rows_of_three():
    dists = [torch.softmax(torch.randn(len(VOCAB)), -1) for _ in range(4)]
    fig = viz.probability_grid(dists, VOCAB, [f"step {t}" for t in range(1, 5)], top_k=3)
    panels = [ax for ax in fig.axes if ax.patches]
    assert len(fig.axes) == 4 == len(panels)  # the last row's two empty places are removed
    assert [ax.get_title() for ax in panels] == ["step 1", "step 2", "step 3", "step 4"]
    assert [ax.get_ylabel() for ax in panels] == ["probability", "", "", "probability"]
    assert fig.get_size_inches() == pytest.approx((viz.COLUMN_WIDTH, 2 * 2.9))
    for ax, p in zip(panels, dists):  # the most probable word, first, is highlighted
        assert ax.get_xticklabels()[0].get_text() == VOCAB[int(p.argmax())]
        assert ax.patches[0].get_facecolor() != ax.patches[1].get_facecolor()
    assert viz.figure_problems(fig) == []
    chosen = viz.probability_grid(dists[:2], VOCAB, ["a", "b"], highlight=[1, 1], tick_rotation=30)
    assert all(t.get_rotation() == 30 for ax in chosen.axes for t in ax.get_xticklabels())
    with pytest.raises(ValueError, match="one title each"):
        viz.probability_grid(dists, VOCAB, ["one title"])


def test_share_scale_puts_panels_on_one_scale_and_recolours_their_numbers():
    fig, axes = viz.subplots(2, 1)
    viz.vector_boxes(torch.tensor([[0.5, -0.2]]), ax=axes[0])
    viz.vector_boxes(torch.tensor([[2.0, -1.0]]), ax=axes[1])
    assert viz.share_scale(axes) == 2.0  # the largest |value| of all the panels
    assert [ax.collections[0].get_clim() for ax in axes] == [(-2.0, 2.0), (-2.0, 2.0)]
    # white on the darkest boxes only, above 0.6 of the shared limit
    assert [t.get_color() for ax in axes for t in ax.texts] == ["black", "black", "white", "black"]
    assert viz.share_scale(axes[:1], limit=0.4) == 0.4
    assert [t.get_color() for t in axes[0].texts] == ["white", "black"]


def test_vector_panels_share_one_scale_and_one_colour_bar():
    panels = {"x": torch.tensor([[1.0, -3.0]]), "y": torch.tensor([[0.5, 0.5]])}
    fig = viz.vector_panels(panels, ["word"], nrows=2, height=3.0, label="value (one scale)")
    boxes = [ax for ax in fig.axes if ax.texts]
    assert [ax.get_title() for ax in boxes] == ["x", "y"]
    assert {ax.collections[0].get_clim() for ax in boxes} == {(-3.0, 3.0)}
    assert len(fig.axes) == 3 and fig.axes[-1].get_ylabel() == "value (one scale)"
    assert fig.get_size_inches() == pytest.approx((viz.COLUMN_WIDTH, 3.0))
    assert viz.figure_problems(fig) == []
    with pytest.raises(ValueError, match="2 panels for a grid of 2 x 2"):
        viz.vector_panels(panels, ["word"], nrows=2, ncols=2)


def test_pair_circles_puts_each_pair_on_its_circle_with_equal_turns():
    pe = _sinusoidal(20, 16)
    fig = viz.pair_circles(pe, pairs=(0, 2, 6), shift=3, starts=(0, 5), zoom=(6,))
    axes = fig.axes
    assert [ax.get_title().split(":")[0] for ax in axes] == ["pair 0", "pair 2", "pair 6"]
    for ax, pair in zip(axes, (0, 2, 6)):
        dots = ax.collections[0].get_offsets()  # (cos, sin) of positions 0..15
        np.testing.assert_allclose(dots, pe[:16, [2 * pair + 1, 2 * pair]].numpy(), atol=1e-6)
        np.testing.assert_allclose((dots ** 2).sum(1), 1.0, atol=1e-5)  # on the unit circle
        arrows = [a for a in ax.texts if a.get_text() == ""]
        labels = [a.get_text() for a in ax.texts if a.get_text()]
        assert len(arrows) == 2 and labels == ["0", "3", "5", "8"]
        assert ax.get_xlabel() == f"PE[pos, {2 * pair + 1}] (cos)"
    assert axes[2].get_xlim() == (-0.1, 1.3)  # the zoomed pair shows its quarter circle
    assert "k = 3" in fig._suptitle.get_text()
    assert viz.figure_problems(fig) == []
    with pytest.raises(ValueError, match="out of range"):
        viz.pair_circles(pe, pairs=(8,))


# --------------------------------------------------------------------------- the chapters


def _chapter_code():
    import json
    from pathlib import Path

    for path in sorted((Path(__file__).resolve().parents[1] / "chapters").glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for i, cell in enumerate(cells):
            if cell["cell_type"] == "code":
                yield f"{path.name} cell {i} ({cell.get('id')})", "".join(cell["source"])


def test_chapters_draw_no_figure_wider_than_the_column_or_text_below_9_pt():
    """A static read of every chapter's code: figsize widths and font sizes by the rule."""
    import re

    wide, small = [], []
    for where, code in _chapter_code():
        for match in re.finditer(r"figsize\s*=\s*\(\s*([0-9.]+)\s*,", code):
            if float(match.group(1)) > viz.COLUMN_WIDTH:
                wide.append(f"{where}: {match.group(0)}...")
        for match in re.finditer(r"fontsize\s*=\s*(\"(?:x+-)?small\"|'(?:x+-)?small'|[0-9.]+)", code):
            value = match.group(1).strip("\"'")
            if "small" in value or float(value) < viz.MIN_FONT_PT:
                small.append(f"{where}: {match.group(0)}")
    assert not wide and not small, (
        f"figures wider than {viz.COLUMN_WIDTH} in (shrunk on the page): {wide}; "
        f"text below {viz.MIN_FONT_PT} pt: {small}. Use tx.viz.subplots / figure_size.")
