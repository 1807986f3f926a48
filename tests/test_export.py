"""tx.export: the ONNX graphs compute what tx computes, and the command refuses bad input clearly."""

import json

import numpy as np
import pytest
import torch

import tx
from conftest import tiny_model
from tx.checkpoint import BOOK_MODEL, REAL_MODEL
from tx.data import Vocab
from tx.export import ExportedModel, export, main

pytest.importorskip("onnxruntime")


# Attention weights from ONNX Runtime against tx's: the same float32 graph through different
# kernels (and ATen picks its kernels by the CPU: AVX-512, AVX2 or none), so each score carries a
# few float32 roundings (eps 1.2e-7) of its size, and a softmax weight w moves by w(1 - w) times
# its score's error: about 1e-6 for scores of a few units. Measured: 1.3e-6 under
# ATEN_CPU_CAPABILITY=default, under 1e-6 with AVX2. 1e-5, torch.testing's float32 bound and the
# bound on the logits here, holds it with a margin; a wrong mask or head order moves weights by 0.1.
ATTN_ATOL = 1e-5


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    out = tmp_path_factory.mktemp("book")
    export(BOOK_MODEL, out)
    return out, tx.checkpoint.load(BOOK_MODEL)


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    out = tmp_path_factory.mktemp("real")
    export(REAL_MODEL, out)
    return out, tx.checkpoint.load(REAL_MODEL)


def _src(ck, sentences):
    return tx.data.pad([ck.src_vocab.encode(s, add_bos=False) for s in sentences], ck.src_vocab.pad_id)


@pytest.mark.parametrize("which", ["book", "real"])
def test_logits_and_every_attention_map_match_tx_with_padding_and_any_length(which, request):
    out, ck = request.getfixturevalue(which)
    onnx = ExportedModel(out)
    sentences = ["je vois le chat noir .", "il mange", "Tom ne comprend pas pourquoi il pleut ."]
    src = _src(ck, sentences)  # [3, S], the shorter rows padded
    tgt = torch.tensor([[1, 5, 6, 7, 8], [1, 9, 10, 11, 12], [1, 4, 4, 5, 6]])  # [3, 5]
    with torch.no_grad(), ck.model.recording_attention() as maps:
        memory = ck.model.encode(src)
        logits = ck.model.decode(memory, src, tgt)
    o_memory, o_enc = onnx.encode(src.numpy())
    o_logits, o_self, o_cross = onnx.decode(o_memory, src.numpy(), tgt.numpy())
    np.testing.assert_allclose(o_memory, memory.numpy(), atol=1e-4)
    np.testing.assert_allclose(o_logits, logits.numpy(), atol=1e-4)
    L = ck.model.config.n_layers
    assert o_enc.shape[0] == o_self.shape[0] == o_cross.shape[0] == L
    for i in range(L):
        np.testing.assert_allclose(o_enc[i], maps[f"encoder.layers.{i}.self_attn"].numpy(), atol=1e-5)
        np.testing.assert_allclose(o_self[i], maps[f"decoder.layers.{i}.self_attn"].numpy(), atol=1e-5)
        np.testing.assert_allclose(o_cross[i], maps[f"decoder.layers.{i}.cross_attn"].numpy(), atol=1e-5)
    assert o_cross[:, 1, :, :, src.shape[1] - 1].max() == 0  # the second sentence's padding gets no weight


def test_greedy_translations_equal_tx_on_the_whole_test_split_of_the_book_model(book):
    out, ck = book
    onnx = ExportedModel(out)
    test = [fr for fr, _ in tx.data.load_corpus().test]
    assert len(test) == 600
    src = _src(ck, test)  # one batch: the exported graphs take any batch size
    mine = onnx.greedy(src.numpy())
    theirs = tx.greedy_decode(ck.model, src, ck.model.config.max_len - 1, 1, 2)
    assert mine.shape == tuple(theirs.shape) and (mine == theirs.numpy()).all()


def test_greedy_translations_equal_tx_for_the_real_model(real):
    out, ck = real
    sentences = ["Tom est fatigué.", "Où est Marie ?", "Je ne comprends pas pourquoi il pleut.",
                 "Nous avons mangé une pomme rouge hier soir.", "C'est l'heure !"]
    mine = ExportedModel(out).translate(sentences)
    assert mine == tx.evaluate.translate(ck.model, sentences, ck.src_vocab, ck.tgt_vocab)
    assert "Tom" in mine[0], mine  # cased, as the real model writes


def test_the_folder_holds_single_files_without_paths_of_this_machine(book, real):
    for out, _ in (book, real):
        names = sorted(p.name for p in out.iterdir())
        kind = json.loads((out / "manifest.json").read_text())["vocab_kind"]
        vocab = ["vocab.json"] if kind == "word" else ["src_tokenizer.json", "tgt_tokenizer.json"]
        assert names == sorted(["encoder.onnx", "decoder.onnx", "manifest.json", *vocab])
        for name in ("encoder.onnx", "decoder.onnx"):
            raw = (out / name).read_bytes()
            assert b"/tx/" not in raw and str(tx.__file__).encode()[:12] not in raw and b".py" not in raw
    words = json.loads((book[0] / "vocab.json").read_text())
    assert words["src_itos"] == book[1].src_vocab.itos and words["tgt_itos"] == book[1].tgt_vocab.itos
    tokenizer = (real[0] / "src_tokenizer.json").read_text()
    assert tx.subwords.SubwordVocab(tokenizer) == real[1].src_vocab


def test_missing_damaged_or_vocabless_checkpoints_are_refused_clearly(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main([str(tmp_path / "nope.safetensors"), str(tmp_path / "out")])
    assert "no checkpoint at" in capsys.readouterr().err
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="damaged or truncated"):
        export(bad, tmp_path / "out")
    bare = tx.checkpoint.save(tmp_path / "bare.safetensors", tiny_model())
    with pytest.raises(ValueError, match="without its vocabularies"):
        export(bare, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_an_earlier_export_is_not_overwritten_without_force(tmp_path):
    vocab = Vocab(["<pad>", "<bos>", "<eos>", "<unk>"] + [f"w{i}" for i in range(9)])
    path = tx.checkpoint.save(tmp_path / "m.safetensors", tiny_model(tgt_vocab_size=13), vocab, vocab)
    export(path, tmp_path / "out")
    before = (tmp_path / "out" / "decoder.onnx").read_bytes()
    with pytest.raises(FileExistsError, match="--force"):
        export(path, tmp_path / "out")
    export(path, tmp_path / "out", force=True)
    assert (tmp_path / "out" / "decoder.onnx").read_bytes() == before  # the same model, the same bytes
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match="is a file"):
        export(path, tmp_path / "file")
    with pytest.raises(FileNotFoundError, match="python -m tx.export"):
        ExportedModel(tmp_path / "empty")


def test_translate_command_with_the_onnx_runtime_gives_tx_s_translations(book, capsys):
    sentences = ["je suis étudiant", "", "elles ne voient pas les maisons rouges", "merci"]
    onnx = tx.translate.main([str(BOOK_MODEL), *sentences, "--runtime", "onnx"])
    assert onnx == tx.translate.main([str(BOOK_MODEL), *sentences])
    assert onnx[:2] == ["i am a student", ""]
    with pytest.raises(SystemExit):
        tx.translate.main([str(BOOK_MODEL), "merci", "--runtime", "onnx", "--beam", "3"])
    assert "greedily only" in capsys.readouterr().err
    with pytest.raises(ValueError, match="at most 64"):
        ExportedModel(book[0]).translate(["chat " * 70])


OWN_SENTENCES = ["Tom est fatigué.", "Où est Marie ?", "Je ne comprends pas pourquoi il pleut.",
                 "Nous avons mangé une pomme rouge hier soir.", "C'est l'heure !", "Il fait froid aujourd'hui.",
                 "J'aime lire des livres.", "Elle a acheté une nouvelle voiture."]


def test_int8_weights_shrink_the_files_and_keep_the_translations(tmp_path, book, real):
    for (plain, ck), name in ((book, "book"), (real, "real")):
        small = tmp_path / name
        export(BOOK_MODEL if name == "book" else REAL_MODEL, small, quantize="int8")
        for graph in ("encoder.onnx", "decoder.onnx"):
            assert (small / graph).stat().st_size * 3 < (plain / graph).stat().st_size
        assert json.loads((small / "manifest.json").read_text())["quantize"] == "int8"
        sentences = [fr for fr, _ in tx.data.load_corpus().test] if name == "book" else OWN_SENTENCES
        same = sum(a == b for a, b in zip(ExportedModel(small).translate(sentences),
                                          tx.evaluate.translate(ck.model, sentences, ck.src_vocab, ck.tgt_vocab)))
        assert same >= 0.99 * len(sentences), f"{name}: int8 gives tx's translation for {same} of {len(sentences)}"
    with pytest.raises(ValueError, match="quantize must be one of"):
        export(BOOK_MODEL, tmp_path / "x", quantize="int4")


# ---------------------------------------------------------------- models trained in a chapter (tx.live)
from tx import lm_train  # noqa: E402
from tx.export import export_language_model, export_vision  # noqa: E402
from tx.vision import VisionConfig, VisionTransformer  # noqa: E402
from pathlib import Path  # noqa: E402


@pytest.fixture(scope="module")
def lm(tmp_path_factory):
    """A small language model of the corpus's English, trained a few steps, exported."""
    english = [en for _, en in tx.data.load_corpus(seed=0).train]
    vocab = Vocab.build(english)
    torch.manual_seed(0)
    model = tx.LanguageModel(tx.LanguageModelConfig.small(len(vocab), d_model=32, n_heads=2, d_ff=64, max_len=24))
    lm_train.fit_lm(model, [lm_train.sentence_ids(vocab, s) for s in english[:400]], steps=40, warmup=10)
    out = tmp_path_factory.mktemp("lm")
    export_language_model(model, vocab, out, "lm")
    return out, model.eval(), vocab


def _session(path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path / "model.onnx"), options, providers=["CPUExecutionProvider"])


def test_the_language_model_s_logits_and_attention_match_tx_at_any_length_and_padding(lm):
    out, model, vocab = lm
    session = _session(out)
    prompts = [vocab.encode(s, add_eos=False) for s in ["she is", "we do not like the", "the"]]
    for tokens in [torch.tensor([p]) for p in prompts] + [tx.generation.left_pad(prompts)]:
        logits, attn = session.run(None, {"tokens": tokens.numpy()})
        with torch.no_grad(), model.recording_attention() as maps:
            expected = model(tokens)  # [B, T, V]
        np.testing.assert_allclose(logits, expected.numpy(), atol=1e-5, rtol=0)
        for i in range(model.config.n_layers):
            np.testing.assert_allclose(attn[i], maps[f"layers.layers.{i}.self_attn"].numpy(), atol=ATTN_ATOL, rtol=0)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == "generate" and manifest["eos_id"] == vocab.eos_id
    assert json.loads((out / "vocab.json").read_text())["itos"] == vocab.itos
    graph = (out / "model.onnx").read_bytes()
    assert str(Path.cwd()).encode() not in graph and str(out).encode() not in graph and b".py" not in graph


def test_greedy_generation_through_onnx_writes_tx_s_sentences(lm):
    """The loop tx-live.js runs (whole sequence each step, <pad> never chosen, stop at <eos> or max_len)."""
    out, model, vocab = lm
    session = _session(out)
    starts = ["she is", "we do", "the", "he is not", "you are", "i am a"]
    for start in starts:
        ids = vocab.encode(start, add_eos=False)
        expected = tx.generate(model, torch.tensor([ids]), 14, temperature=0, eos_id=vocab.eos_id)[0].tolist()
        ys = list(ids)
        for _ in range(14):
            z = session.run(None, {"tokens": np.array([ys], dtype=np.int64)})[0][0, -1]
            z[vocab.pad_id] = -np.inf
            ys.append(int(z.argmax()))
            if ys[-1] == vocab.eos_id or len(ys) >= model.config.max_len:
                break
        assert ys == expected, start


def test_the_vision_transformer_s_logits_and_cls_attention_match_tx(tmp_path):
    torch.manual_seed(0)
    model = VisionTransformer(VisionConfig.digits()).eval()
    images = torch.randint(0, 17, (5, 1, 8, 8)).float() / 16  # [5, 1, 8, 8], the digits' levels
    out = tmp_path
    export_vision(model, out, "vit")
    logits, cls = _session(out).run(None, {"images": images.numpy()})
    manifest = json.loads((out / "manifest.json").read_text())
    np.testing.assert_allclose(logits, model(images).detach().numpy(), atol=1e-5, rtol=0)
    np.testing.assert_allclose(cls.transpose(1, 0, 2, 3), model.cls_attention(images).numpy(), atol=ATTN_ATOL, rtol=0)
    assert manifest["kind"] == "classify" and manifest["config"]["patch_size"] == 2


def test_in_memory_exports_refuse_the_wrong_model_or_vocabulary(lm, tmp_path):
    _, model, vocab = lm
    with pytest.raises(TypeError, match="tx.LanguageModel"):
        export_language_model(tiny_model(), vocab, tmp_path)
    with pytest.raises(ValueError, match="the model's word vocabulary"):
        export_language_model(model, Vocab.build(["a b c"]), tmp_path)
    with pytest.raises(TypeError, match="VisionTransformer"):
        export_vision(model, tmp_path)
