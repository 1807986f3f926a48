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
    # decoded as the page decodes: at most the source's length + the margin tx.export writes in the manifest
    assert block.translations == tx.evaluate.translate(ck.model, examples, ck.src_vocab, ck.tgt_vocab,
                                                       length_margin=tx.decoding.LENGTH_MARGIN)
    assert "<i>je suis étudiant</i> → i am a student" in page  # what Jupyter shows
    assert f"The {len(ck.src_vocab) - 4} French words this model knows" in page and ", étudiant," in page
    assert page.count('<option value="') == len(examples) + ck.model.config.n_layers + ck.model.config.n_heads + 1
    bundle = block._repr_mimebundle_()
    assert "je suis étudiant -> i am a student" in bundle["text/plain"]


def test_the_block_lists_the_kinds_of_sentence_the_model_learnt():
    # chapter 1's block: a sentence of known words in another shape comes out wrong, so it says which
    shapes = tx.grammar.sentence_shapes()
    assert len(shapes) == 6 and {fr for _, fr, _ in shapes} <= {fr for fr, _ in tx.grammar.grammar_pairs()}
    page = tx.live.translator(BOOK_MODEL, examples=["merci"], shapes=shapes).to_html()
    assert "The 6 kinds of sentence it learnt" in page
    assert "a set phrase: <i>au revoir</i> (goodbye)" in page
    assert "kinds of sentence" not in tx.live.translator(BOOK_MODEL, examples=["merci"]).to_html()


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


def _node(script: str, payload, *args: str):
    """Run ``script`` in Node with the page's tx-live.js as ``process.argv[1]`` (``args`` after it) and
    ``payload`` as JSON on its standard input; what it writes to standard output, read as JSON."""
    done = subprocess.run(["node", "-e", script, str(LIVE_JS), *args], input=json.dumps(payload),
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
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
              " dec: input.ids.map(i => tgt.decode(i, m)), pieces: input.ids.map(i => tgt.tokens(i)),"
              " unknown: input.french.map(t => src.unknown(t, 3))}));")
    done = subprocess.run(["node", "-e", script, str(LIVE_JS), str(TOKENIZERS_JS), str(tmp_path / "src.json"),
                           str(tmp_path / "tgt.json")], input=json.dumps({"french": french, "ids": ids}),
                          capture_output=True, text=True, check=True)
    got = json.loads(done.stdout)
    assert got["enc"] == [ck.src_vocab.encode(t, add_bos=False, add_eos=False) for t in french]
    assert got["unknown"] == [_unknown_characters(ck.src_vocab, t) for t in french]
    assert got["unknown"][-2:] == [["日", "本"], []]  # characters no piece spells
    assert got["dec"] == [ck.tgt_vocab.decode(i) for i in ids]
    assert got["pieces"] == [ck.tgt_vocab.tokens(i) for i in ids]


def _unknown_characters(vocab, text: str) -> list[str]:
    """The characters of ``text`` a subword vocabulary has no piece for (each encodes as <unk>), each once."""
    found = [c for c in unicodedata.normalize("NFC", text) if not c.isspace()
             and vocab.unk_id in vocab.encode(c, add_bos=False, add_eos=False)]
    return list(dict.fromkeys(found))


# ---------------------------------------------------------------- the page's translate path, in Node
ORT_WEB = Path(__file__).resolve().parents[1] / "_build" / "npm" / "node_modules" / "onnxruntime-web"
needs_ort_web = pytest.mark.skipif(shutil.which("node") is None or not ORT_WEB.is_dir(),
                                   reason="Node.js or onnxruntime-web is missing (make vendor installs it)")


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed (make vendor needs it too)")
def test_the_page_stops_a_translation_where_tx_decoding_output_limit_does():
    from tx.decoding import output_limit

    cases = [(n, cap, margin) for n in range(1, 70) for cap in (1, 5, 63) for margin in (None, 0, 3, 10)]
    script = ("const {outputLimit} = require(process.argv[1]);"
              "const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "process.stdout.write(JSON.stringify(cases.map(c => outputLimit(...c))));")
    assert _node(script, cases) == [output_limit(*c) for c in cases]


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed (make vendor needs it too)")
def test_the_page_calls_a_translation_cut_short_past_20_pieces_at_under_half_as_many():
    # (French pieces, English pieces): the edges of both conditions, and issue 46's sentence in
    # tests/site/test_live.py (47 pieces read, 7 written)
    cases = [(47, 7), (21, 10), (21, 11), (20, 9), (20, 1), (22, 10), (22, 11), (44, 21), (44, 22), (5, 0)]
    script = ("const {cutShort} = require(process.argv[1]);"
              "const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "process.stdout.write(JSON.stringify(cases.map(c => cutShort(...c))));")
    assert _node(script, cases) == [True, True, False, False, False, True, False, True, False, False]


TRANSLATE_IN_NODE = """
const live = require(process.argv[1]), ort = require(process.argv[2]), dir = process.argv[3];
const fs = require('fs'), path = require('path'), read = f => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
ort.env.wasm.numThreads = 1;
ort.env.logLevel = 'error';
(async () => {
  const input = JSON.parse(fs.readFileSync(0, 'utf8')), v = read('vocab.json');
  const session = f => ort.InferenceSession.create(path.join(dir, f), {executionProviders: ['wasm']});
  const model = {ort, manifest: read('manifest.json'), src: new live.WordVocab(v.src_itos), tgt: new live.WordVocab(v.tgt_itos),
                 encoder: await session('encoder.onnx'), decoder: await session('decoder.onnx')};
  const out = [];
  for (const [text, decoding] of input) {
    const r = await live.translate(model, text, decoding);
    out.push({srcIds: r.srcIds, pieces: r.srcPieces, unknown: r.unknown, ys: r.ys, limit: r.limit, ended: r.ended, text: r.text});
  }
  process.stdout.write(JSON.stringify(out));
})().catch(e => { console.error(e); process.exit(1); });
"""
NODE_SENTENCES = [  # what readers typed (issue 24), punctuation, capitals, elisions, and the test split
    "j'habite à paris",  # tx never writes <eos>: 63 times "i" before the page had a limit
    "le chien mange la pizza",  # "the dog eats the tomato": pizza is <unk>
    "Le chien mange la pizza.",
    "Je suis étudiant.",
    "L’homme n'aime pas les chats noirs !",
    "bonjour Zoé, ça va ?",
    "elle n'aime pas les chiens ; il aime les chats",
    "« merci » , dit-il...",
    "xyz abc def ghi",
    *[fr for fr, _ in tx.data.load_corpus().test[:8]],
]


@pytest.fixture(scope="module")
def book_export(tmp_path_factory):
    out = tmp_path_factory.mktemp("fr_en_small")
    tx.export.export(BOOK_MODEL, out)
    return out


@needs_ort_web
def test_the_page_translates_reads_and_stops_as_tx_does(book_export):
    """translate() of tx-live.js, run by onnxruntime-web in Node on the exported graphs: tx's ids, the reader's
    tokens and the unknown ones, tx.evaluate.translate's sentence with the manifest's length margin (greedy
    and beam search), and a limit tied to the source where the model never writes <eos>."""
    import torch

    from tx.decoding import output_limit

    ck = tx.checkpoint.load(BOOK_MODEL)
    manifest = json.loads((book_export / "manifest.json").read_text())
    margin, cap = manifest["length_margin"], manifest["max_new_tokens"]
    assert margin == tx.decoding.LENGTH_MARGIN and cap == ck.model.config.max_len - 1
    cases = [(s, "greedy") for s in NODE_SENTENCES] + [(s, "beam") for s in NODE_SENTENCES[:6]]
    got = _node(TRANSLATE_IN_NODE, cases, str(ORT_WEB), str(book_export))
    v = ck.tgt_vocab
    for (sentence, decoding), page in zip(cases, got):
        src_ids = ck.src_vocab.encode(sentence, add_bos=False)
        limit = output_limit(len(src_ids), cap, margin)
        src = torch.tensor([src_ids])
        if decoding == "greedy":
            ys = tx.greedy_decode(ck.model, src, limit, v.bos_id, v.eos_id)[0].tolist()
            english, = tx.evaluate.translate(ck.model, [sentence], ck.src_vocab, v, length_margin=margin)
        else:
            (tokens, _), = tx.beam_search(ck.model, src, 4, limit, v.bos_id, v.eos_id, 0.6, penalty_form="gnmt")[0]
            ys, english = tokens.tolist(), v.decode(tokens)
        assert page["srcIds"] == src_ids and page["pieces"] == [*tokenize(sentence), "<eos>"], sentence
        assert page["unknown"] == list(dict.fromkeys(w for w in tokenize(sentence) if w not in ck.src_vocab)), sentence
        assert page["limit"] == limit and page["ys"] == ys and page["text"] == english, (sentence, decoding, page)
        assert page["ended"] == (v.eos_id in ys), sentence
    lost, pizza, full_stop = got[0], got[1], got[3]
    assert not lost["ended"] and lost["limit"] == 5 + margin < cap  # stopped by the source's length, not at 63
    assert lost["text"] == " ".join(["i"] * lost["limit"])
    assert pizza["unknown"] == ["pizza"] and pizza["text"] == "the dog eats the tomato"  # invented: the page says so
    assert full_stop["unknown"] == ["."] and full_stop["pieces"][-2:] == [".", "<eos>"]  # a token of its own, as tx


# ---------------------------------------------------------------- blocks of models trained in a chapter
from tx.live import LIVE_DIR_ENV, continuation, digit_grid, stroke_bitmap  # noqa: E402
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
    never_unk = tx.live._never_unknown(model, vocab.unk_id)  # as the page writes: <unk> never
    expected = tx.generate(never_unk, torch.tensor([vocab.encode("she is", add_eos=False)]), 5, temperature=0,
                           eos_id=vocab.eos_id)
    assert block.continuations[0] == vocab.decode(expected[0]) and block.continuations[0].startswith("she is")
    assert model.training  # the wrapper left the model's mode as it was
    page = block.to_html()
    assert 'data-live-model="generate"' in page and 'data-model="lm_test"' in page and 'data-max-new-tokens="5"' in page
    assert page.count("data-live-output") == 1 and '<form class="tx-live-form" hidden>' in page
    assert page.count('name="layer"') == page.count('name="head"') == 1 and 'class="tx-live-map"' in page  # the attention
    # the examples, the four sampling choices, the layers, the mean of the heads and each head
    assert page.count("<option value=") == 2 + 4 + model.config.n_layers + 1 + model.config.n_heads
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


def test_the_generator_block_marks_the_prompt_s_unknown_words_and_never_writes_unk(small_lm, monkeypatch):
    """What readers met (issue 24): "Zoé is" came back as "<unk> is ...", as if the model had written <unk>."""
    import torch

    model, vocab = small_lm
    monkeypatch.delenv(LIVE_DIR_ENV, raising=False)
    never_unk = tx.live._never_unknown(model, vocab.unk_id)
    ids = vocab.encode("Zoé is", add_eos=False)
    assert ids[1] == vocab.unk_id
    read, written = continuation(vocab, "Zoé is", ids + [vocab.itos.index("a"), vocab.eos_id, 7])
    assert read == [("zoé", False), ("is", True)] and written == "a"
    assert continuation(vocab, "she is", vocab.encode("she is", add_eos=False) + [vocab.eos_id]) == (
        [("she", True), ("is", True)], "")
    logits = never_unk(torch.tensor([ids]))  # [1, T, V]
    assert torch.isinf(logits[..., vocab.unk_id]).all() and torch.isfinite(logits[..., 4:]).all()
    block = tx.live.generator(model, vocab, examples=["Zoé is", "she isn't"], name="lm_test", max_new_tokens=6)
    page = block.to_html()
    static = page.split("<ul>")[1].split("</ul>")[0]
    assert "&lt;unk&gt;" not in static.replace('title="never seen: read as &lt;unk&gt;"', "")
    assert '<mark class="tx-live-token tx-live-unk" title="never seen: read as &lt;unk&gt;">zoé</mark> is' in static
    assert all("<unk>" not in w for _, w in block.parts) and block.continuations[0].startswith("zoé is")
    import html as html_lib
    import re

    assert [w for w, _ in block.parts[1][0]] == ["she", "isn'", "t"]  # spaced as detokenize spaces them:
    assert html_lib.unescape(re.sub(r"<[^>]+>", "", static.split("<li>")[2])).startswith("she isn't")


def test_stroke_bitmap_sizes_a_drawing_as_the_data_s_digits_are_sized():
    """Every scikit-learn digit reaches the top and the bottom row, nearly all leave the first column empty and
    most the last; a drawn 0, round or tall, large or small, must too, with strokes as thick as the data's."""
    import math

    import torch
    from sklearn.datasets import load_digits

    data = torch.tensor(load_digits().images)  # [n, 8, 8], 0..16
    assert (data > 0).any(2).all()  # every row of every digit has ink: 32 pixels high
    assert (data[:, :, 0] > 0).any(1).float().mean() < 0.02 and (data[:, :, 7] > 0).any(1).float().mean() < 0.15

    def ellipse(rx, ry):
        return [[(96 + rx * math.cos(2 * math.pi * k / 60), 96 + ry * math.sin(2 * math.pi * k / 60)) for k in range(61)]]

    grids = [digit_grid(stroke_bitmap(ellipse(rx, ry))) for rx, ry in [(65, 70), (75, 60), (20, 25)]]
    assert all(torch.equal(g, grids[0]) for g in grids)  # the size and the aspect of a drawn 0 do not matter
    g = grids[0]
    assert (g > 0).any(1).all() and g[:, 0].sum() == g[:, 7].sum() == 0 and g[3:5, 3:5].sum() == 0  # a ring
    ink = data.sum((1, 2)).float()  # ink pixels of 32x32
    assert ink.quantile(0.25) < g.sum() < ink.quantile(0.75)  # a pen as thick as the data's
    one = digit_grid(stroke_bitmap([[(96, 30), (96, 170)]]))
    assert (one > 0).any(1).all() and (one > 0).any(0).sum() <= 2  # a 1 stays thin
    dot = stroke_bitmap([[(5, 5)]])
    assert dot.any() and dot.sum() < 30
    with pytest.raises(ValueError, match="strokes"):
        stroke_bitmap([])


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed (make vendor needs it too)")
def test_the_page_reduces_strokes_to_tx_s_bitmap():
    import random

    rng = random.Random(0)
    cases = [[[[rng.uniform(0, 192), rng.uniform(0, 192)] for _ in range(rng.randint(1, 30))]
              for _ in range(rng.randint(1, 3))] for _ in range(12)]
    cases += [[[[96, 30], [96, 170]]], [[[60, 40], [130, 40], [80, 170]]], [[[5, 5]]], [[[5, 5], [100, 5]]]]
    script = ("const {strokeBitmap} = require(process.argv[1]);"
              "const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "process.stdout.write(JSON.stringify(cases.map(strokeBitmap)));")
    got = _node(script, cases)
    for case, page in zip(cases, got):
        assert page == stroke_bitmap(case).int().tolist(), case


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


GENERATE_IN_NODE = """
const live = require(process.argv[1]), ort = require(process.argv[2]), dir = process.argv[3];
const fs = require('fs'), path = require('path'), read = f => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
ort.env.wasm.numThreads = 1;
ort.env.logLevel = 'error';
(async () => {
  const input = JSON.parse(fs.readFileSync(0, 'utf8'));
  const model = {ort, manifest: read('manifest.json'), vocab: new live.WordVocab(read('vocab.json').itos),
                 session: await ort.InferenceSession.create(path.join(dir, 'model.onnx'), {executionProviders: ['wasm']})};
  const out = [];
  for (const prompt of input.prompts) {
    const r = await live.continuePrompt(model, prompt, 'greedy', 0, input.maxNew);
    out.push({ids: r.ids, prompt: r.prompt, pieces: r.pieces, unknown: r.unknown,
              mean: live.writtenAttention(r.self, input.layer, 'mean', r.prompt),
              head: live.writtenAttention(r.self, 0, '1', r.prompt)});
  }
  process.stdout.write(JSON.stringify(out));
})().catch(e => { console.error(e); process.exit(1); });
"""


@needs_ort_web
def test_the_page_draws_the_causal_attention_of_the_words_the_language_model_wrote(small_lm, tmp_path):
    """continuePrompt and writtenAttention of tx-live.js in Node: tx.generate's words, and for each word written
    (one row) tx's self-attention over <bos>, the prompt and the words before it, zero on the words after."""
    import torch

    from tx.export import export_language_model

    model, vocab = small_lm
    model.eval()
    export_language_model(model, vocab, tmp_path, "lm_test")
    prompts, last = ["she is", "we do not like the", "Zoé is"], model.config.n_layers - 1
    got = _node(GENERATE_IN_NODE, {"prompts": prompts, "maxNew": 6, "layer": last}, str(ORT_WEB), str(tmp_path))
    never_unk = tx.live._never_unknown(model, vocab.unk_id)  # the page never writes <unk>
    for prompt, page in zip(prompts, got):
        start = vocab.encode(prompt, add_eos=False)
        ys = tx.generate(never_unk, torch.tensor([start]), 6, temperature=0, eos_id=vocab.eos_id)[0].tolist()
        assert page["ids"] == ys and page["prompt"] == len(start), prompt
        assert page["pieces"] == ["<bos>", *tokenize(prompt)]
        assert page["unknown"] == [w for w in tokenize(prompt) if w not in vocab]
        with torch.no_grad(), model.recording_attention() as maps:
            model(torch.tensor([ys[:-1]]))  # the last step's run: every token but the last written
        rows = slice(len(start) - 1, len(ys) - 1)  # the positions that wrote ys[len(start):]
        mean = maps[f"layers.layers.{last}.self_attn"][0].mean(0)[rows].double()  # [written, T]
        head = maps["layers.layers.0.self_attn"][0, 1][rows].double()
        torch.testing.assert_close(torch.tensor(page["mean"], dtype=torch.float64), mean, atol=1e-5, rtol=0)
        torch.testing.assert_close(torch.tensor(page["head"], dtype=torch.float64), head, atol=1e-5, rtol=0)
        assert torch.tensor(page["mean"]).triu(len(start)).abs().max() == 0  # the future gets nothing
    assert got[2]["unknown"] == ["zoé"]
    assert torch.tensor(got[0]["mean"]).shape != torch.tensor(got[1]["mean"]).shape  # another prompt, another map
