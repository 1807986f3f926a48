"""tx.live: the translator block's HTML, and the page's JavaScript tokeniser against tx.data's.

The block's behaviour in a browser (translations, attention, keyboard, requests) is tested on
the built site by tests/site/test_live.py.
"""

import json
import shutil
import subprocess
import unicodedata
from pathlib import Path

import pytest

import tx
from tx.checkpoint import BOOK_MODEL, REAL_MODEL
from tx.data import tokenize

LIVE_JS = Path(__file__).resolve().parents[1] / "_ext" / "static" / "tx-live.js"


def test_the_block_carries_what_the_page_script_and_the_tests_read():
    examples = ["je suis étudiant", "le chat noir"]
    block = tx.live.translator(BOOK_MODEL, examples=examples)
    page = block.to_html()
    assert 'data-live-model="translate"' in page and 'data-model="fr_en_small"' in page
    assert page.count("data-live-output") == 1
    assert '<form class="tx-live-form" hidden>' in page  # no control that does nothing without the script
    ck = tx.checkpoint.load(BOOK_MODEL)
    assert block.translations == tx.evaluate.translate(ck.model, examples, ck.src_vocab, ck.tgt_vocab)
    assert "<i>je suis étudiant</i> → i am a student" in page  # what Jupyter shows
    assert f"The {len(ck.src_vocab) - 4} French words" in page and ", étudiant," in page
    assert page.count('<option value="') == len(examples) + ck.model.config.n_layers + ck.model.config.n_heads + 1
    bundle = block._repr_mimebundle_()
    assert "je suis étudiant -> i am a student" in bundle["text/plain"]


def test_a_subword_model_names_its_vocabulary_instead_of_listing_words():
    block = tx.live.translator(REAL_MODEL, examples=["Tom est fatigué."])
    assert 'data-model="fr_en_real"' in block.to_html() and "subwords" in block.to_html()
    assert block.known is None and "Tom" in block.translations[0]


@pytest.mark.parametrize("examples", [[], "je suis", [""], [3]])
def test_examples_must_be_sentences(examples):
    with pytest.raises(ValueError, match="list of French sentences"):
        tx.live.translator(BOOK_MODEL, examples=examples)


def test_a_missing_checkpoint_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        tx.live.translator(tmp_path / "nope.safetensors", examples=["merci"])


def _js_tokens(texts: list[str]) -> list[list[str]]:
    script = ("const {tokenize} = require(process.argv[1]);"
              "const texts = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "process.stdout.write(JSON.stringify(texts.map(tokenize)));")
    done = subprocess.run(["node", "-e", script, str(LIVE_JS)], input=json.dumps(texts),
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed (make vendor needs it too)")
def test_the_page_tokeniser_splits_every_character_as_tx_does():
    """Every assigned code point below U+30000 (Python's Unicode), inside and beside words and elisions."""
    points = [c for c in range(0x20, 0x30000) if not 0xD800 <= c < 0xE000 and unicodedata.category(chr(c)) != "Cn"]
    texts = [f"a{chr(c)}b {chr(c)}'{chr(c)}" for c in points]
    texts += ["Je suis étudiant.", "L’homme n'est pas là !", "aujourd'hui, 3e x² ½", "ΟΔΟΣ Σ", "İstanbul",
              "e\u0301te\u0301", "\ufeffbom", "tab\there\x1cx\x85y", "  ", "", *(fr for fr, _ in tx.data.load_corpus().test)]
    got = _js_tokens(texts)
    wrong = [(t, tokenize(t), g) for t, g in zip(texts, got) if tokenize(t) != g]
    assert len(got) == len(texts) and not wrong, wrong[:5]
