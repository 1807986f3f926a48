"""Live models in the page: a translator block that runs a checkpoint in the reader's browser.

``tx.live.translator(tx.checkpoint.BOOK_MODEL, examples=[...])``, the last expression of a code
cell, shows one block. On the book's website ``_ext/static/tx-live.js`` turns it into a text box:
the reader's sentence is tokenised in JavaScript (the same ids as tx), translated greedily by
onnxruntime-web from the graphs ``python -m tx.export`` wrote at build time (``make book`` puts
them in ``_static/tx-live/NAME/``), and the encoder-decoder attention of the chosen layer and head
is drawn. Nothing is downloaded until the reader asks for a translation. In Jupyter, where there
is no site, the block shows tx's own translations of the examples and says where the live one is.

Axes: S source length, T target length (the attention map is [T, S]).
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["Translator", "translator"]

_SERIAL = iter(range(1, 1 << 30))


class Translator:
    """A live translator block for one checkpoint; display it (last line of a cell) to show it."""

    def __init__(self, checkpoint: str | os.PathLike, examples: Sequence[str], name: str | None = None):
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
        self.translations = evaluate.translate(ck.model, self.examples, ck.src_vocab, ck.tgt_vocab)
        self.layers, self.heads = ck.model.config.n_layers, ck.model.config.n_heads
        words = getattr(ck.src_vocab, "itos", None)
        self.known = sorted(words[4:]) if words is not None else None  # a word vocabulary's words, specials left out
        self.subwords = len(ck.src_vocab) if words is None else None

    def _known_html(self) -> str:
        if self.known is None:
            return (f"<p>The model reads any text, cut into pieces from a vocabulary of {self.subwords:,} "
                    "subwords; words it never saw are spelled out of smaller pieces.</p>")
        words = ", ".join(html.escape(w) for w in self.known)
        return (f'<details class="tx-live-words"><summary>The {len(self.known)} French words and marks this '
                f"model knows (any other word reads as &lt;unk&gt;)</summary><p>{words}</p></details>")

    def to_html(self) -> str:
        """The block: the live form (hidden until tx-live.js runs) and tx's own translations."""
        uid = f"tx-live-{next(_SERIAL)}"
        options = "".join(f'<option value="{html.escape(e)}"></option>' for e in self.examples)
        layers = "".join(f'<option value="{i}"{" selected" if i == self.layers - 1 else ""}>layer {i + 1}</option>'
                         for i in range(self.layers))
        heads = '<option value="mean" selected>mean of the heads</option>' + "".join(
            f'<option value="{h}">head {h + 1}</option>' for h in range(self.heads))
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


def translator(checkpoint: str | os.PathLike, examples: Sequence[str], name: str | None = None) -> Translator:
    """A live translator block for ``checkpoint`` offering ``examples``; see :class:`Translator`."""
    return Translator(checkpoint, examples, name)
