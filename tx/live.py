"""Live models in the page: a translator, a text generator and a digit classifier, run in the reader's browser.

``tx.live.translator(tx.checkpoint.BOOK_MODEL, examples=[...])``, the last expression of a code
cell, shows one block. On the book's website it becomes a text box: the reader's sentence is
tokenised in the browser (the same ids as tx) and translated there by onnxruntime-web, from
the graphs ``python -m tx.export`` writes, greedily or, from a menu, by beam search as
:func:`tx.decoding.beam_search` does it with the paper's setting (4 beams, GNMT's penalty, alpha 0.6),
for at most the source's length + :data:`tx.decoding.LENGTH_MARGIN` tokens
(:func:`tx.decoding.output_limit`), and the encoder-decoder attention of the chosen layer and
head is drawn. The page shows the tokens the model read and names the words it has never seen
(each read as ``<unk>``), so that a translation invented for them is not taken for one; under an
English of fewer than half the pieces of a source of more than 20 it says that the model, trained
on short sentences, may have stopped early. Before anything is downloaded the block says how many
megabytes its first use fetches, and nothing is downloaded until the reader asks for a
translation. In Jupyter, where there is no site, the block shows tx's own translations of the
examples (decoded with the same limit) and says where the live one is.

Two more blocks run a model trained in the notebook itself, exported for the page only while
the book's website is built (anywhere else nothing is written):
``tx.live.generator(lm, vocab, examples=[...])`` continues the reader's prompt with a
language model, showing the prompt's words apart from the words the model wrote (those it has never
seen marked, never echoed as ``<unk>``, and ``<unk>`` never written: :func:`continuation`), and draws
the causal self-attention of the words it wrote over the words before them; and
``tx.live.classifier(vit, images)`` classifies a digit the reader draws, reduced as scikit-learn's
digits were made (:func:`stroke_bitmap`, then :func:`digit_grid`), with its three likeliest
classes, the 8x8 image it read, and [CLS]'s attention drawn over it. How the website wires
the blocks is on the :doc:`Book internals </api_internals>` page.

Axes: S source length, T target length (the attention map is [T, S]); L layers, H heads,
N patches.
"""

from __future__ import annotations

import html
import os
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .decoding import LENGTH_MARGIN

if TYPE_CHECKING:  # for the annotations: torch is imported where a block needs it, not on import
    import torch

__all__ = ["Translator", "translator", "Generator", "generator", "continuation", "Classifier", "classifier",
           "stroke_bitmap", "digit_grid", "DIGIT_STROKE", "DIGIT_WIDTH", "LIVE_DIR_ENV"]

LIVE_DIR_ENV = "TX_LIVE_DIR"  # set by the book's build: the folder whose tx-live/NAME/ the site serves

_SERIAL = iter(range(1, 1 << 30))


def _kinds(known: list[str]) -> str:
    """"words and marks" where a word vocabulary holds punctuation, else "words" (the grammar's has none)."""
    return "words" if all(w.replace("'", "").isalpha() or w[:1] + w[-1:] == "<>" for w in known) else "words and marks"


def _layer_options(layers: int) -> str:
    """A layer menu's options, the last layer chosen."""
    return "".join(f'<option value="{i}"{" selected" if i == layers - 1 else ""}>layer {i + 1}</option>'
                   for i in range(layers))


def _head_options(heads: int) -> str:
    """A head menu's options, the mean of the heads chosen."""
    return '<option value="mean" selected>mean of the heads</option>' + "".join(
        f'<option value="{h}">head {h + 1}</option>' for h in range(heads))


class Translator:
    """A live translator block for one checkpoint; display it (last line of a cell) to show it."""

    def __init__(self, checkpoint: str | os.PathLike, examples: Sequence[str], name: str | None = None,
                 shapes: Sequence[tuple[str, str, str]] = ()):
        from . import checkpoint as ckpt
        from . import evaluate

        if isinstance(examples, str) or not examples or not all(isinstance(e, str) and e.strip() for e in examples):
            raise ValueError("examples must be a non-empty list of French sentences, e.g. ['je suis étudiant'].")
        path = Path(checkpoint)
        ck = ckpt.load(path)
        if ck.src_vocab is None or ck.tgt_vocab is None:
            raise ValueError(f"{path} holds a model without its vocabularies; use a checkpoint written by python -m tx.train.")
        self.name = name or path.stem  # the folder under _static/tx-live/ that the build exports it to
        self.examples = list(examples)
        self.shapes = list(shapes)  # (shape, French, English): the kinds of sentence it learnt
        # as the page decodes: at most the source's length + LENGTH_MARGIN tokens (tx.export's manifest says so)
        self.translations = evaluate.translate(ck.model, self.examples, ck.src_vocab, ck.tgt_vocab,
                                               length_margin=LENGTH_MARGIN)
        self.layers, self.heads = ck.model.config.n_layers, ck.model.config.n_heads
        words = getattr(ck.src_vocab, "itos", None)
        self.known = sorted(words[4:]) if words is not None else None  # a word vocabulary's words, specials left out
        self.subwords = len(ck.src_vocab) if words is None else None

    def _known_html(self) -> str:
        if self.known is None:
            return (f"<p>The model reads any text, cut into pieces from a vocabulary of {self.subwords:,} "
                    "subwords; words it never saw are spelled out of smaller pieces.</p>")
        words = ", ".join(html.escape(w) for w in self.known)
        known = (f'<details class="tx-live-words"><summary>The {len(self.known)} French {_kinds(self.known)} this '
                 f"model knows (any other word reads as &lt;unk&gt;)</summary><p>{words}</p></details>")
        if not self.shapes:
            return known
        shapes = "".join(f"<li>{html.escape(shape)}: <i>{html.escape(fr)}</i> ({html.escape(en)})</li>"
                         for shape, fr, en in self.shapes)
        return known + (f'<details class="tx-live-words"><summary>The {len(self.shapes)} kinds of sentence it '
                        "learnt (others, even of known words, may come out wrong)</summary>"
                        f"<ul>{shapes}</ul></details>")

    def to_html(self) -> str:
        """The block: the live form (hidden until tx-live.js runs) and tx's own translations."""
        uid = f"tx-live-{next(_SERIAL)}"
        options = "".join(f'<option value="{html.escape(e)}"></option>' for e in self.examples)
        layers, heads = _layer_options(self.layers), _head_options(self.heads)
        static = "".join(f"<li><i>{html.escape(fr)}</i> → {html.escape(en)}</li>"
                         for fr, en in zip(self.examples, self.translations))
        return f"""<div class="tx-live" id="{uid}" data-live-model="translate" data-model="{html.escape(self.name)}">
<form class="tx-live-form" hidden>
<label for="{uid}-text">French sentence</label>
<input type="text" id="{uid}-text" name="text" list="{uid}-examples" value="{html.escape(self.examples[0])}" autocomplete="off" spellcheck="false">
<datalist id="{uid}-examples">{options}</datalist>
<button type="submit">Translate</button>
<span class="tx-live-control"><label for="{uid}-layer">Layer</label><select id="{uid}-layer" name="layer">{layers}</select></span>
<span class="tx-live-control"><label for="{uid}-head">Head</label><select id="{uid}-head" name="head">{heads}</select></span>
</form>
<p class="tx-live-result" hidden>English: <output for="{uid}-text" data-live-output aria-live="polite"></output></p>
<p class="tx-live-status" role="status"></p>
<div class="tx-live-map"></div>
<div class="tx-live-static"><p>On the book's website this block translates any sentence you type, in your browser.
Here, tx's own translations of its examples:</p><ul>{static}</ul></div>
{self._known_html()}
</div>"""

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        lines = [f"{fr} -> {en}" for fr, en in zip(self.examples, self.translations)]
        text = "Live translator (on the book's website). tx's translations:\n" + "\n".join(lines)
        return {"text/plain": text, "text/html": self.to_html()}


def translator(checkpoint: str | os.PathLike, examples: Sequence[str], name: str | None = None,
               shapes: Sequence[tuple[str, str, str]] = ()) -> Translator:
    """A live translator block for ``checkpoint`` offering ``examples``, listing the kinds of sentence
    it learnt (``shapes``: shape, French, English; :func:`tx.grammar.sentence_shapes`); see
    :class:`Translator`."""
    return Translator(checkpoint, examples, name, shapes)


def _live_dir(name: str) -> Path | None:
    """Where the build wants model ``name`` exported (``$TX_LIVE_DIR/tx-live/NAME``), or None outside a build."""
    root = os.environ.get(LIVE_DIR_ENV)
    return Path(root) / "tx-live" / name if root else None


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not name.replace("_", "").isalnum():
        raise ValueError(f"name must be letters, digits and underscores (a folder of the site), got {name!r}.")
    return name


def continuation(vocab, prompt: str, ids) -> tuple[list[tuple[str, bool]], str]:
    """What a generator block shows for ``prompt`` continued as ``ids`` [<bos>, prompt, written...].

    Returns the prompt's words as the reader typed them (tokenised), each with whether the model
    knows it, and the text the model wrote after them (up to <eos>). A word the model does not know
    is shown as typed and marked, never as ``<unk>``: the model only read it as ``<unk>``.
    """
    from .data import tokenize
    from .tokens import as_id_list

    ids, words = as_id_list(ids), tokenize(prompt)
    return [(w, w in vocab) for w in words], vocab.decode(ids[1 + len(words):])


def _joined(prompt_text: str, written: str) -> str:
    """The space between the prompt and the words written, as tx.data.detokenize spaces them."""
    return "" if not written or prompt_text.endswith("'") or written[:1] in ".,!?;" else " "


def _never_unknown(model, unk_id: int):
    """``model`` with <unk>'s logit at -inf: <unk> stands for words the model cannot read, never one to write."""
    import torch

    class NeverUnknown(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lm, self.config = model, model.config

        def new_cache(self, *args, **kwargs):
            return self.lm.new_cache(*args, **kwargs)

        def forward(self, tokens, cache=None):
            logits = self.lm(tokens, cache)  # [B, T, V]
            logits[..., unk_id] = float("-inf")
            return logits

    return NeverUnknown().train(model.training)


class Generator:
    """A live block that continues the reader's prompt with an in-memory language model; display it to show it."""

    def __init__(self, model, vocab, examples: Sequence[str], name: str = "lm", max_new_tokens: int = 14):
        import torch

        from .checks import check_int
        from .data import detokenize
        from .export import export_language_model
        from .generation import generate
        from .language_model import LanguageModel

        if not isinstance(model, LanguageModel):
            raise TypeError(f"model must be a tx.LanguageModel, got {type(model).__name__}.")
        if isinstance(examples, str) or not examples or not all(isinstance(e, str) and e.strip() for e in examples):
            raise ValueError("examples must be a non-empty list of English prompts, e.g. ['she is'].")
        check_int("max_new_tokens", max_new_tokens, low=1)
        self.name, self.examples, self.max_new_tokens = _check_name(name), list(examples), max_new_tokens
        self.continuations, self.parts = [], []
        writer = _never_unknown(model, vocab.unk_id)  # as the page: <unk> is never written
        for prompt in self.examples:  # one at a time, unpadded, as the page runs them
            ids = torch.tensor([vocab.encode(prompt, add_eos=False)])  # [1, P]: <bos> words
            out = generate(writer, ids, max_new_tokens, temperature=0, eos_id=vocab.eos_id)
            read, written = continuation(vocab, prompt, out[0])
            self.parts.append((read, written))
            typed = detokenize([w for w, _ in read])
            self.continuations.append(typed + _joined(typed, written) + written)
        self.known = sorted(vocab.itos[4:])  # specials left out
        self.layers, self.heads = model.config.n_layers, model.config.n_heads
        folder = _live_dir(self.name)
        self.exported = export_language_model(model, vocab, folder, self.name) if folder else []

    def to_html(self) -> str:
        """The block: the live form (hidden until tx-live.js runs) and tx's own greedy continuations."""
        uid = f"tx-live-{next(_SERIAL)}"
        options = "".join(f'<option value="{html.escape(e)}"></option>' for e in self.examples)
        settings = "".join(f'<option value="{v}">{label}</option>' for v, label in SAMPLING)
        layers, heads = _layer_options(self.layers), _head_options(self.heads)
        static = "".join(f"<li>{_continuation_html(read, written)}</li>" for read, written in self.parts)
        words = ", ".join(html.escape(w) for w in self.known)
        kinds = _kinds(self.known)
        return f"""<div class="tx-live" id="{uid}" data-live-model="generate" data-model="{html.escape(self.name)}" data-max-new-tokens="{self.max_new_tokens}">
<form class="tx-live-form" hidden>
<label for="{uid}-text">English prompt</label>
<input type="text" id="{uid}-text" name="text" list="{uid}-examples" value="{html.escape(self.examples[0])}" autocomplete="off" spellcheck="false">
<datalist id="{uid}-examples">{options}</datalist>
<button type="submit">Continue</button>
<span class="tx-live-control"><label for="{uid}-sampling">Choice</label><select id="{uid}-sampling" name="sampling">{settings}</select></span>
<span class="tx-live-control"><label for="{uid}-seed">Seed</label><input type="number" id="{uid}-seed" name="seed" value="0" min="0" step="1"></span>
<span class="tx-live-control"><label for="{uid}-layer">Layer</label><select id="{uid}-layer" name="layer">{layers}</select></span>
<span class="tx-live-control"><label for="{uid}-head">Head</label><select id="{uid}-head" name="head">{heads}</select></span>
</form>
<p class="tx-live-result" hidden>The model writes: <output for="{uid}-text" data-live-output aria-live="polite"></output></p>
<p class="tx-live-status" role="status"></p>
<div class="tx-live-map"></div>
<div class="tx-live-static"><p>On the book's website this block continues any prompt you type, in your browser.
Here, tx's own greedy continuations of its examples, the words the model wrote in bold:</p><ul>{static}</ul></div>
<details class="tx-live-words"><summary>The {len(self.known)} English {kinds} this model knows (any other word reads as &lt;unk&gt;)</summary><p>{words}</p></details>
</div>"""

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        lines = [f"{p} -> {w}" for p, (_, w) in zip(self.examples, self.parts)]
        text = "Live language model (on the book's website). tx's greedy continuations:\n" + "\n".join(lines)
        return {"text/plain": text, "text/html": self.to_html()}


def _continuation_html(read: list[tuple[str, bool]], written: str) -> str:
    """The prompt's words (those the model does not know marked, as the page marks them), then the words written, bold."""
    from .data import detokenize

    typed = detokenize([w for w, _ in read])
    words = [html.escape(w) if known else f'<mark class="tx-live-token tx-live-unk" title="never seen: read as '
             f'&lt;unk&gt;">{html.escape(w)}</mark>' for w, known in read]
    # the spaces of detokenize, kept around the marks
    shown, previous = "", None
    for (w, _), h in zip(read, words):
        shown += ("" if previous is None else _joined(previous, w)) + h
        previous = w
    return (f'<span class="tx-live-prompt" style="font-weight: normal">{shown}</span>{_joined(typed, written)}'
            f'<b class="tx-live-written">{html.escape(written)}</b>')


SAMPLING = [("greedy", "greedy"), ("t0.5", "temperature 0.5"), ("t2", "temperature 2"), ("k3", "top-k 3")]


def generator(model, vocab, examples: Sequence[str], name: str = "lm", max_new_tokens: int = 14) -> Generator:
    """A live block continuing prompts with ``model`` (a tx.LanguageModel over ``vocab``); see :class:`Generator`."""
    return Generator(model, vocab, examples, name, max_new_tokens)


def digit_grid(bitmap) -> "torch.Tensor":
    """A 32x32 bitmap of ink (True = ink) -> [8, 8] counts 0..16: scikit-learn's digits' preprocessing.

    The digits were scanned as 32x32 black-and-white bitmaps and divided into 4x4 blocks; each
    pixel of the 8x8 image counts the ink pixels of its block. The page's drawing is reduced to
    such a bitmap (:func:`stroke_bitmap`) and counted the same way.
    """
    import torch

    from .checks import check_tensor

    bitmap = torch.as_tensor(bitmap)
    check_tensor("bitmap", bitmap, dims=2)
    if tuple(bitmap.shape) != (32, 32):
        raise ValueError(f"bitmap must be 32x32 pixels, as the digits were scanned, got {tuple(bitmap.shape)}.")
    return (bitmap != 0).long().reshape(8, 4, 8, 4).sum(dim=(1, 3))  # [8, 4, 8, 4] -> [8, 8]


DIGIT_STROKE = 5.0  #: the pen's width in pixels of the 32x32 bitmap: about a third of the pixels ink, as in the data
DIGIT_WIDTH = 20.0  #: the widest a digit is drawn, in pixels of the 32; every digit is 32 high


def _fitted(strokes: Sequence[Sequence[Sequence[float]]]) -> list[list[tuple[float, float]]]:
    """Strokes (lists of [x, y] points, any units) moved into the 32x32 box as the data's digits sit in it."""
    points = [(float(x), float(y)) for stroke in strokes for x, y in stroke]
    xs, ys = [x for x, _ in points], [y for _, y in points]
    cx, cy, bw, bh = (min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2, max(xs) - min(xs), max(ys) - min(ys)
    # the ink (centre line and pen) 32 pixels high; as wide as that makes it, at most DIGIT_WIDTH
    sy = (32 - DIGIT_STROKE) / bh if bh > 0 else None
    sx = (DIGIT_WIDTH - DIGIT_STROKE) / bw if bw > 0 else None
    if sy is not None and sx is not None:
        sx = min(sx, sy)
    elif sy is None:
        sy = sx if sx is not None else 1.0  # a flat stroke keeps its shape; a dot is a dot
        sx = sy
    else:
        sx = sy  # a vertical stroke (a 1): the height decides
    return [[(16 + (x - cx) * sx, 16 + (y - cy) * sy) for x, y in stroke] for stroke in strokes]


def stroke_bitmap(strokes: Sequence[Sequence[Sequence[float]]]) -> "torch.Tensor":
    """Pen strokes (each a list of [x, y] points, y down) -> a 32x32 bitmap of ink, as the digits were normalised.

    Every one of scikit-learn's digits reaches the top and the bottom row of its 8x8 image; nearly
    all leave the first column empty, and most the last: each was scaled to 32 pixels high and
    at most about 20 wide, centred, and its strokes are thick (about a third of the pixels are ink). So the strokes' box is scaled to fill
    the height (the width by the same factor, squeezed to :data:`DIGIT_WIDTH` if wider), centred,
    and drawn with a pen :data:`DIGIT_STROKE` pixels wide whatever the size of the drawing: a pixel
    is ink when its centre lies within half the pen's width of a stroke. tx-live.js does the same
    arithmetic, so the page's bitmap is this one.
    """
    import torch

    if isinstance(strokes, (str, bytes)) or not strokes or not all(len(s) for s in strokes):
        raise ValueError("strokes must be a non-empty list of strokes, each a non-empty list of [x, y] points.")
    segments = []
    for stroke in _fitted(strokes):
        segments += list(zip(stroke, stroke[1:])) if len(stroke) > 1 else [(stroke[0], stroke[0])]
    reach = (DIGIT_STROKE / 2) * (DIGIT_STROKE / 2)
    bitmap = torch.zeros(32, 32, dtype=torch.bool)
    for r in range(32):
        for c in range(32):
            px, py = c + 0.5, r + 0.5
            for (ax, ay), (bx, by) in segments:
                dx, dy = bx - ax, by - ay
                length = dx * dx + dy * dy
                t = 0.0 if length == 0 else max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / length))
                qx, qy = ax + t * dx - px, ay + t * dy - py
                if qx * qx + qy * qy <= reach:
                    bitmap[r, c] = True
                    break
    return bitmap


class Classifier:
    """A live block that classifies a digit the reader draws, with a VisionTransformer trained on the 8x8 digits."""

    def __init__(self, model, examples, name: str = "vit"):
        import torch

        from .checks import check_tensor
        from .export import export_vision
        from .vision import VisionTransformer

        if not isinstance(model, VisionTransformer):
            raise TypeError(f"model must be a tx.vision.VisionTransformer, got {type(model).__name__}.")
        c = model.config
        if (c.image_size, c.channels) != (8, 1):
            raise ValueError(f"the page draws 8x8 grey digits; this model reads {c.image_size}x{c.image_size} images "
                             f"with {c.channels} channel(s). Use a model trained on tx.vision.load_digits_split().")
        check_tensor("examples", examples, dims=4, floating=True)
        if tuple(examples.shape[1:]) != (1, 8, 8) or not len(examples):
            raise ValueError(f"examples must be digits [n, 1, 8, 8] in [0, 1], got shape {tuple(examples.shape)}.")
        grids = torch.round(examples[:, 0] * 16).long()  # [n, 8, 8]: the data's 0..16 levels
        images = grids[:, None].float() / 16  # [n, 1, 8, 8], as load_digits_split scales them
        was_training = model.training
        model.eval()
        with torch.no_grad():
            logits = model(images)  # [n, Y]
        model.train(was_training)
        self.name, self.grids = _check_name(name), grids
        self.classes = logits.argmax(-1).tolist()
        self.probabilities = logits.softmax(-1).max(-1).values.tolist()
        self.attention = model.cls_attention(images)  # [n, L, H, N]
        self.layers, self.heads, self.patch = c.n_layers, c.n_heads, c.patch_size
        folder = _live_dir(self.name)
        self.exported = export_vision(model, folder, self.name) if folder else []

    def reference(self) -> list[dict]:
        """tx's results for the examples, as the page's test reads them: grid, class, [CLS] attention [L, H, N]."""
        return [{"grid": g.tolist(), "class": k, "cls_attention": a.tolist()}
                for g, k, a in zip(self.grids, self.classes, self.attention)]

    def to_html(self) -> str:
        """The block: a canvas to draw on, example digits, layer and head menus; and tx's own answers."""
        uid = f"tx-live-{next(_SERIAL)}"
        layers, heads = _layer_options(self.layers), _head_options(self.heads)
        buttons = "".join(f'<button type="button" name="example" value="{i}">example {i + 1}</button>'
                          for i in range(len(self.classes)))
        static = "".join(f"<li>example {i + 1}: read as a {k} (probability {p:.2f})</li>"
                         for i, (k, p) in enumerate(zip(self.classes, self.probabilities)))
        reference = html.escape(json.dumps(self.reference(), separators=(",", ":")))
        return f"""<div class="tx-live" id="{uid}" data-live-model="classify" data-model="{html.escape(self.name)}" data-patch="{self.patch}" data-live-reference="{reference}">
<form class="tx-live-form" hidden>
<p class="tx-live-hint">Draw a digit in the square with the mouse, a finger or a pen, then press Classify.</p>
<div class="tx-live-draw"><canvas width="192" height="192" class="tx-live-canvas" aria-label="Drawing area for a digit: draw with a pointer, or load an example with the buttons below"></canvas>
<div class="tx-live-map" aria-live="polite"></div></div>
<span class="tx-live-control">{buttons}<button type="button" name="clear">Clear</button></span>
<button type="submit">Classify</button>
<span class="tx-live-control"><label for="{uid}-layer">Layer</label><select id="{uid}-layer" name="layer">{layers}</select></span>
<span class="tx-live-control"><label for="{uid}-head">Head</label><select id="{uid}-head" name="head">{heads}</select></span>
</form>
<p class="tx-live-result" hidden>The model reads a <output data-live-output aria-live="polite"></output></p>
<p class="tx-live-status" role="status"></p>
<div class="tx-live-static"><p>On the book's website you can draw a digit here and this model classifies it in your browser:
it shows its three likeliest digits, the 8x8 image it read, and [CLS]'s attention over the patches. Here, tx's answers
for its examples:</p><ul>{static}</ul></div>
</div>"""

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        lines = [f"example {i + 1}: {k}" for i, k in enumerate(self.classes)]
        return {"text/plain": "Live digit classifier (on the book's website). tx's classes:\n" + "\n".join(lines),
                "text/html": self.to_html()}


def classifier(model, examples, name: str = "vit") -> Classifier:
    """A live block classifying drawn digits with ``model``, offering ``examples`` [n, 1, 8, 8]; see :class:`Classifier`."""
    return Classifier(model, examples, name)
