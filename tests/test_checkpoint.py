import json
import struct

import pytest
import torch
from safetensors.torch import save_file
from torch.testing import assert_close

import tx
from conftest import tiny_model
from tx.data import Vocab


@pytest.mark.parametrize("share", [False, True])
def test_round_trip_gives_the_same_logits_config_and_vocabularies(tmp_path, share):
    model = tiny_model(src_vocab_size=11, tgt_vocab_size=11, share_embeddings=share)
    vocab = Vocab(["<pad>", "<bos>", "<eos>", "<unk>"] + [f"w{i}" for i in range(7)])
    path = tx.checkpoint.save(tmp_path / "m.safetensors", model, vocab, vocab, info={"note": "x"})
    ck = tx.checkpoint.load(path)
    src, tgt = torch.randint(1, 11, (2, 5)), torch.randint(1, 11, (2, 4))
    assert ck.model.config == model.config
    assert_close(ck.model(src, tgt), model(src, tgt))
    assert ck.src_vocab == vocab and ck.info == {"note": "x"}
    if share:
        assert ck.model.generator.weight is ck.model.src_embed.token.weight
    assert not list(tmp_path.glob("*.tmp"))


def test_file_is_safetensors_not_pickle(tmp_path):
    path = tx.checkpoint.save(tmp_path / "m.safetensors", tiny_model())
    raw = path.read_bytes()
    (header_len,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + header_len])
    assert json.loads(header["__metadata__"]["config"])["d_model"] == 32
    assert not raw.startswith(b"\x80")  # a pickle starts with the PROTO opcode


def test_loading_into_another_config_names_the_difference(tmp_path):
    path = tx.checkpoint.save(tmp_path / "m.safetensors", tiny_model())
    other = tiny_model(d_model=16, n_layers=1)
    with pytest.raises(ValueError, match=r"d_model: checkpoint 32 vs model 16.*n_layers: checkpoint 2 vs model 1"):
        tx.checkpoint.load_into(other, path)
    same = tiny_model()
    assert tx.checkpoint.load_into(same, path) is same


def test_missing_and_foreign_files_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="python -m tx.train"):
        tx.checkpoint.load(tmp_path / "nope.safetensors")
    foreign = tmp_path / "foreign.safetensors"
    save_file({"w": torch.zeros(2)}, str(foreign))
    with pytest.raises(ValueError, match="not a tx checkpoint"):
        tx.checkpoint.load(foreign)
