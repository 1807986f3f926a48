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


def _node(script: str, payload):
    """Run ``script`` in Node with the page's tx-live.js as ``process.argv[1]`` and ``payload`` as JSON
    on its standard input; what it writes to standard output, read as JSON."""
    done = subprocess.run(["node", "-e", script, str(LIVE_JS)], input=json.dumps(payload),
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def _js_tokens(texts: list[str]) -> list[list[str]]:
    script = ("const {tokenize} = require(process.argv[1]);"
              "const texts = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "process.stdout.write(JSON.stringify(texts.map(tokenize)));")
    return _node(script, texts)


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


# ---------------------------------------------------------------- blocks of models trained in a chapter
from tx.live import LIVE_DIR_ENV, digit_grid  # noqa: E402
from tx.vision import VisionConfig, VisionTransformer  # noqa: E402


@pytest.fixture(scope="module")
def small_lm():
    english = [en for _, en in tx.data.load_corpus(seed=0).train]
    vocab = tx.data.Vocab.build(english)
    import torch

    torch.manual_seed(0)
    return tx.LanguageModel(tx.LanguageModelConfig.small(len(vocab), d_model=32, n_heads=2, d_ff=64)), vocab


def test_the_generator_block_shows_tx_s_greedy_continuations_and_writes_nothing_outside_a_build(small_lm, tmp_path, monkeypatch):
    import torch

    model, vocab = small_lm
    monkeypatch.delenv(LIVE_DIR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    block = tx.live.generator(model, vocab, examples=["she is", "the"], name="lm_test", max_new_tokens=5)
    expected = tx.generate(model, torch.tensor([vocab.encode("she is", add_eos=False)]), 5, temperature=0,
                           eos_id=vocab.eos_id)
    assert block.continuations[0] == vocab.decode(expected[0]) and block.continuations[0].startswith("she is")
    page = block.to_html()
    assert 'data-live-model="generate"' in page and 'data-model="lm_test"' in page and 'data-max-new-tokens="5"' in page
    assert page.count("data-live-output") == 1 and '<form class="tx-live-form" hidden>' in page
    assert f"The {len(vocab) - 4} English words" in page and "she is -> " in block._repr_mimebundle_()["text/plain"]
    assert block.exported == [] and not any(tmp_path.iterdir())


def test_in_the_book_s_build_the_blocks_export_their_model_where_the_site_serves_it(small_lm, tmp_path, monkeypatch):
    import torch

    model, vocab = small_lm
    monkeypatch.setenv(LIVE_DIR_ENV, str(tmp_path))
    tx.live.generator(model, vocab, examples=["she is"], name="lm_test", max_new_tokens=3)
    torch.manual_seed(0)
    block = tx.live.classifier(VisionTransformer(VisionConfig.digits()), torch.rand(2, 1, 8, 8), name="vit_test")
    assert {p.name for p in (tmp_path / "tx-live" / "lm_test").iterdir()} == {"model.onnx", "vocab.json", "manifest.json"}
    assert {p.name for p in (tmp_path / "tx-live" / "vit_test").iterdir()} == {"model.onnx", "manifest.json"}
    assert len(block.exported) == 2


def test_the_classifier_block_carries_tx_s_answers_on_the_data_s_grey_levels():
    import html as html_lib

    import torch

    torch.manual_seed(0)
    model = VisionTransformer(VisionConfig.digits())
    images = tx.vision.load_digits_split()["test"].images[:3]  # [3, 1, 8, 8], levels k / 16
    block = tx.live.classifier(model, images, name="vit_test")
    assert torch.equal(block.grids, (images[:, 0] * 16).round().long())
    model.eval()
    assert block.classes == model(images).argmax(-1).tolist()
    page = block.to_html()
    assert 'data-live-model="classify"' in page and "<canvas" in page and page.count('name="example"') == 3
    ref = json.loads(html_lib.unescape(page.split('data-live-reference="')[1].split('"')[0]))
    assert ref[1]["grid"] == block.grids[1].tolist() and ref[1]["class"] == block.classes[1]
    torch.testing.assert_close(torch.tensor(ref[2]["cls_attention"]), model.cls_attention(images)[2])


def test_live_blocks_refuse_bad_input_clearly(small_lm):
    import torch

    model, vocab = small_lm
    with pytest.raises(ValueError, match="list of English prompts"):
        tx.live.generator(model, vocab, examples="she is")
    with pytest.raises(TypeError, match="tx.LanguageModel"):
        tx.live.generator(VisionTransformer(), vocab, examples=["she is"])
    with pytest.raises(ValueError, match="letters, digits and underscores"):
        tx.live.generator(model, vocab, examples=["she"], name="../x")
    with pytest.raises(ValueError, match=r"digits \[n, 1, 8, 8\]"):
        tx.live.classifier(VisionTransformer(), torch.rand(2, 8, 8, 1))
    with pytest.raises(ValueError, match="8x8 grey digits"):
        tx.live.classifier(VisionTransformer(image_size=16, patch_size=4), torch.rand(2, 1, 8, 8))
    with pytest.raises(ValueError, match="32x32"):
        digit_grid(torch.ones(28, 28))


def test_digit_grid_counts_the_ink_of_each_4x4_block():
    import torch

    assert digit_grid(torch.ones(32, 32, dtype=torch.bool)).eq(16).all()
    one = torch.zeros(32, 32)
    one[5, 30] = 1  # row block 1, column block 7
    grid = digit_grid(one)
    assert grid[1, 7] == 1 and grid.sum() == 1
    bitmap = torch.rand(32, 32, generator=torch.Generator().manual_seed(0)) > 0.6
    assert digit_grid(bitmap).sum() == bitmap.sum() and digit_grid(bitmap).max() <= 16


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed (make vendor needs it too)")
def test_the_page_reduces_a_bitmap_and_samples_as_documented():
    import torch

    bitmaps = [(torch.rand(32, 32, generator=torch.Generator().manual_seed(s)) > 0.5).int().tolist() for s in range(5)]
    script = ("const {digitGrid, mulberry32, sample} = require(process.argv[1]);"
              "const bitmaps = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "const draw = seed => { const r = mulberry32(seed); return [0, 1, 2, 3, 4, 5].map(() => sample([0, 1, 2, -Infinity], 1, 0, r)); };"
              "const topk = [...Array(200)].map((_, i) => sample([5, 4.9, 0, 4.8], 1, 2, mulberry32(i)));"
              "process.stdout.write(JSON.stringify({grids: bitmaps.map(digitGrid), a: draw(7), b: draw(7), c: draw(8), topk}));")
    got = _node(script, bitmaps)
    assert got["grids"] == [digit_grid(torch.tensor(b)).tolist() for b in bitmaps]
    assert got["a"] == got["b"] != got["c"]  # one seed, one sentence
    assert 3 not in got["a"] + got["c"]  # a -inf logit (<pad>) is never drawn
    assert set(got["topk"]) == {0, 1}  # top-k 2 keeps the two largest


class _TableModel:
    """A stand-in model for tx.beam_search whose logits are read from a table [steps, V, V]:
    row (position of the token, token) -> the next token's logits; the page's beamSearch reads the same table."""

    def __init__(self, table, bos_id: int, pad_id: int = 0):
        import torch

        self.table, self.training = torch.tensor(table), False
        steps, V, _ = self.table.shape
        self.config = tx.TransformerConfig(src_vocab_size=V, tgt_vocab_size=V, max_len=steps + 1, pad_id=pad_id)

    def eval(self):
        return self

    def train(self, mode: bool = True):
        return self

    def encode(self, src):
        return src.float()[..., None]  # [B, S, 1]: beam_search only copies it per beam

    def new_cache(self, max_len: int):
        return _Position()

    def decode(self, memory, src, tgt, cache):
        cache.length += 1
        return self.table[cache.length - 1][tgt[:, -1]][:, None]  # [B, 1, V]


class _Position:
    """What tx.beam_search needs of a cache here: the position reached (every beam has the same)."""

    def __init__(self):
        self.length = 0

    def reorder(self, rows):
        pass


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed (make vendor needs it too)")
def test_the_page_beam_search_finds_tx_s_hypothesis_and_score():
    """Random tables, beams of 1, 2 and 4, both penalties: the same tokens and score as tx.beam_search."""
    import torch

    V, steps, bos, eos = 6, 7, 1, 2
    settings = [(k, alpha, form) for k in (1, 2, 4) for alpha, form in ((0.0, "power"), (1.0, "power"), (0.6, "gnmt"))]
    tables = [(torch.randn(steps, V, V, generator=torch.Generator().manual_seed(s)) * 1.5).tolist() for s in range(40)]
    cases, expected, differ = [], [], 0
    for table in tables:
        model = _TableModel(table, bos)
        for k, alpha, form in settings:
            for max_len in (3, steps):
                (tokens, score), = tx.beam_search(model, torch.tensor([[3, 4]]), k, max_len, bos, eos, alpha,
                                                  penalty_form=form)[0]
                cases.append({"table": table, "options": {"size": k, "maxLen": max_len, "bos": bos, "eos": eos,
                                                          "alpha": alpha, "form": form}})
                expected.append((tokens.tolist(), score))
                greedy = tx.greedy_decode(model, torch.tensor([[3, 4]]), max_len, bos, eos)[0].tolist()
                differ += tokens.tolist() != greedy
    script = ("const {beamSearch} = require(process.argv[1]);"
              "const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "Promise.all(cases.map(c => beamSearch(async prefixes => prefixes.map(p =>"
              "  Float32Array.from(c.table[p.length - 1][p[p.length - 1]])), c.options)))"
              ".then(found => process.stdout.write(JSON.stringify(found.map(h => [h.tokens, h.score]))));")
    got = _node(script, cases)
    wrong = [(c["options"], e, g) for c, e, g in zip(cases, expected, got) if g[0] != e[0] or abs(g[1] - e[1]) > 1e-5]
    assert len(got) == len(cases) and not wrong, wrong[:3]
    # the tables exercise what tells a beam from greedy decoding: a sentence greedy decoding does not find
    assert differ > 20, differ


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed (make vendor needs it too)")
def test_the_page_tidies_typed_text_as_tx_subwords_does():
    """tidyTyped against tx.subwords.tidy_typed: every assigned code point below U+3000 (the alphabets,
    punctuation and spaces) doubled, and beside capitals at a sentence's end, and sentences as readers
    type them."""
    from tx.subwords import tidy_typed

    points = [c for c in range(0x20, 0x3000) if not 0xD800 <= c < 0xE000 and unicodedata.category(chr(c)) != "Cn"]
    texts = [f"{chr(c)}{chr(c)}" for c in points] + [f"AB {chr(c)}" for c in points]
    texts += ["JE SUIS EN RETARD !", "ÇA VA", "ΟΔΟΣ ΣΟΦΟΣ", "İSTANBUL", "STRASSE ß", "  Il a  25 ans", "C’est « bien »",
              "Il dit\u202f: «\u00a0Non\u00a0»", "e\u0301te\u0301", "Je vis à Paris, en France.", "OK", "", "  ",
              *(fr for fr, _ in tx.data.load_corpus().test)]
    script = ("const {tidyTyped} = require(process.argv[1]);"
              "const texts = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "process.stdout.write(JSON.stringify(texts.map(tidyTyped)));")
    got = _node(script, texts)
    # Where Node's Unicode (ICU) gives a letter a case form that Python's older Unicode does not
    # (Unicode 16 gave ƛ and ɤ capitals), the two decide "all capitals" differently. No such
    # letter is in French's alphabet (Latin-1 and Latin Extended-A); the rest must agree.
    cases = _node("const cs = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
                  "process.stdout.write(JSON.stringify(cs.map(c => [c.toLowerCase(), c.toUpperCase()])));",
                  [chr(c) for c in points])
    moved = {chr(c) for c, (lo, up) in zip(points, cases) if (lo, up) != (chr(c).lower(), chr(c).upper())}
    assert not {c for c in moved if ord(c) < 0x180}, sorted(moved)[:10]
    wrong = [(t, tidy_typed(t), g) for t, g in zip(texts, got) if tidy_typed(t) != g and not set(t) & moved]
    assert len(got) == len(texts) and not wrong, wrong[:5]
