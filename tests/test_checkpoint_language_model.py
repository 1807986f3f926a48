"""tx.checkpoint for language models: save and load with config and vocabulary, no pickle, clear refusals."""

from __future__ import annotations

import pytest
import torch

import tx
from test_checkpoint import NEWER, add_to_config, edit_metadata, read_header
from tx import lm_train
from tx.config import LanguageModelConfig
from tx.language_model import LanguageModel


def test_round_trip_keeps_weights_config_vocab_and_tying(tmp_path):
    vocab = lm_train.joint_vocab([("merci", "thanks")])
    model = LanguageModel(LanguageModelConfig.small(len(vocab), d_model=16, n_heads=2, n_layers=1, d_ff=16)).eval()
    path = tx.checkpoint.save_language_model(tmp_path / "lm.safetensors", model, vocab, info={"steps": 3})
    ck = tx.checkpoint.load_language_model(path)
    assert ck.model.config == model.config and ck.vocab == vocab and ck.info == {"steps": 3}
    assert ck.model.lm_head.weight is ck.model.embed.token.weight
    x = torch.tensor([[1, 4, 5]])
    torch.testing.assert_close(ck.model(x), model(x))


def test_refusals(tmp_path):
    model = LanguageModel(LanguageModelConfig.small(9, d_model=16, n_heads=2, n_layers=1, d_ff=16))
    path = tx.checkpoint.save_language_model(tmp_path / "lm.safetensors", model)
    with pytest.raises(ValueError, match="load_language_model"):
        tx.checkpoint.load(path)
    with pytest.raises(ValueError, match="tx.checkpoint.load"):
        tx.checkpoint.load_language_model(tx.checkpoint.BOOK_MODEL)
    with pytest.raises(TypeError, match="LanguageModel"):
        tx.checkpoint.save_language_model(tmp_path / "x.safetensors", torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="vocab_size"):
        tx.checkpoint.save_language_model(tmp_path / "x.safetensors", model, lm_train.joint_vocab([("a", "b")]))


def test_the_committed_decoder_only_translator_loads_with_its_figures():
    ck = tx.checkpoint.load_language_model()
    info = ck.info
    assert ck.model.n_parameters() == info["parameters"]
    book = tx.checkpoint.load().model
    assert abs(info["parameters"] / sum(p.numel() for p in book.parameters()) - 1) < 0.05  # same size, within 5%
    assert 0 <= info["test"]["exact_match"] <= 1 and info["test"]["n"] == 600


def test_a_language_model_of_a_newer_format_or_config_says_to_update_tx(tmp_path):
    model = LanguageModel(LanguageModelConfig.small(9, d_model=16, n_heads=2, n_layers=1, d_ff=16))
    path = tx.checkpoint.save_language_model(tmp_path / "lm.safetensors", model)
    assert read_header(path)[0]["__metadata__"]["format_version"] == "1"
    assert "format_version" not in read_header(tx.checkpoint.DECODER_ONLY_MODEL)[0]["__metadata__"]  # loads above
    edit_metadata(path, add_to_config(flavour="x"))
    with pytest.raises(ValueError, match=NEWER.format("its config sets flavour, which this tx's LanguageModelConfig does not have")):
        tx.checkpoint.load_language_model(path)
    edit_metadata(path, lambda meta: meta.update(format_version="7"))
    with pytest.raises(ValueError, match="lm.safetensors " + NEWER.format("format version 7; this tx reads version 1 and older")):
        tx.checkpoint.load_language_model(path)
    edit_metadata(path, lambda meta: meta.update(format_version="1", config="{"))
    with pytest.raises(ValueError, match="lm.safetensors has damaged metadata"):
        tx.checkpoint.load_language_model(path)
