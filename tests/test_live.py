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


TOKENIZERS_JS = Path(__file__).resolve().parents[1] / "_build" / "npm" / "node_modules" / "@huggingface" / "tokenizers"
CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "tatoeba-eng-fra-75k.tsv"


@pytest.mark.skipif(shutil.which("node") is None or not TOKENIZERS_JS.is_dir(),
                    reason="Node.js or tokenizers.js is missing (make vendor installs it)")
def test_the_page_subword_tokenizer_gives_tx_subwords_ids_and_text(tmp_path):
    """tokenizers.js, which the page uses for the real model, encodes and decodes as tx.subwords."""
    ck = tx.checkpoint.load(REAL_MODEL)
    pairs = [line.split("\t")[:2] for line in CORPUS.read_text(encoding="utf-8").splitlines()[:2000]] if CORPUS.is_file() else []
    french = [p[1] for p in pairs if len(p) == 2] + ["  Tom   est\tlà !", "L’homme", "e\u0301te\u0301", "Zoé, ça va ?", "日本", "«Oui»"]
    english = [p[0] for p in pairs if len(p) == 2] + ["Tom is tired.", "Where's Mary?", "I don't know."]
    for side, vocab in (("src", ck.src_vocab), ("tgt", ck.tgt_vocab)):
        (tmp_path / f"{side}.json").write_text(json.dumps(vocab.to_dict()["tokenizer"]), encoding="utf-8")
    ids = [ck.tgt_vocab.encode(e, add_bos=False) for e in english]  # ... <eos>: decode stops there
    script = ("const {BpeVocab} = require(process.argv[1]);"
              "const {Tokenizer} = require(process.argv[2] + '/dist/tokenizers.cjs');"
              "const fs = require('fs'), read = p => JSON.parse(fs.readFileSync(p, 'utf8'));"
              "const [src, tgt] = [process.argv[3], process.argv[4]].map(p => new BpeVocab(Tokenizer, read(p)));"
              "const input = JSON.parse(fs.readFileSync(0, 'utf8')), m = {eos_id: 2, bos_id: 1, pad_id: 0};"
              "process.stdout.write(JSON.stringify({enc: input.french.map(t => src.encode(t)),"
              " dec: input.ids.map(i => tgt.decode(i, m)), pieces: input.ids.map(i => tgt.tokens(i))}));")
    done = subprocess.run(["node", "-e", script, str(LIVE_JS), str(TOKENIZERS_JS), str(tmp_path / "src.json"),
                           str(tmp_path / "tgt.json")], input=json.dumps({"french": french, "ids": ids}),
                          capture_output=True, text=True, check=True)
    got = json.loads(done.stdout)
    assert got["enc"] == [ck.src_vocab.encode(t, add_bos=False, add_eos=False) for t in french]
    assert got["dec"] == [ck.tgt_vocab.decode(i) for i in ids]
    assert got["pieces"] == [ck.tgt_vocab.tokens(i) for i in ids]
