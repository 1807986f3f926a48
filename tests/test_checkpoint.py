import json
import struct

import pytest
import torch
from safetensors.torch import save_file
from torch.testing import assert_close

import tx
from conftest import tiny_model
from tx.data import Vocab

NEWER = r"was written by a newer tx \({}\)\. Update tx to read it: git pull .*pip install -U tx"


def read_header(path):
    """A safetensors file's JSON header, and the tensor bytes after it."""
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + n]), raw[8 + n :]


def edit_metadata(path, change):
    """Rewrite a checkpoint's metadata with ``change(metadata)``, its tensors (and their checksum) untouched."""
    header, tensors = read_header(path)
    change(header["__metadata__"])
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + tensors)
    return path


def add_to_config(**fields):
    """A change for :func:`edit_metadata`: the saved config with more fields."""
    return lambda meta: meta.update(config=json.dumps({**json.loads(meta["config"]), **fields}))


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


def test_a_checkpoint_records_its_format_version_and_one_without_it_is_version_1(tmp_path):
    path = tx.checkpoint.save(tmp_path / "m.safetensors", tiny_model())
    assert read_header(path)[0]["__metadata__"]["format_version"] == "1"
    for committed in (tx.checkpoint.BOOK_MODEL, tx.checkpoint.REAL_MODEL):  # written before versions existed
        assert "format_version" not in read_header(committed)[0]["__metadata__"]
        assert tx.checkpoint.load(committed).model.config.d_model == 128


def test_a_checkpoint_of_a_newer_format_says_to_update_tx(tmp_path):
    path = edit_metadata(tx.checkpoint.save(tmp_path / "m.safetensors", tiny_model()), lambda meta: meta.update(format_version="2"))
    for read in (tx.checkpoint.load, tx.checkpoint.read_metadata, lambda p: tx.checkpoint.load_into(tiny_model(), p)):
        with pytest.raises(ValueError, match="m.safetensors " + NEWER.format("format version 2; this tx reads version 1 and older")):
            read(path)


def test_a_config_field_this_tx_does_not_have_says_to_update_tx(tmp_path):
    path = edit_metadata(tx.checkpoint.save(tmp_path / "m.safetensors", tiny_model()), add_to_config(flavour="x", zest=1))
    for read in (tx.checkpoint.load, tx.checkpoint.read_metadata, lambda p: tx.checkpoint.load_into(tiny_model(), p)):
        with pytest.raises(ValueError, match=NEWER.format("its config sets flavour, zest, which this tx's TransformerConfig does not have")):
            read(path)


def test_damaged_metadata_is_still_called_damaged(tmp_path):
    path = tx.checkpoint.save(tmp_path / "m.safetensors", tiny_model())
    edit_metadata(path, lambda meta: meta.update(config="[1, 2]"))
    with pytest.raises(ValueError, match=r"m.safetensors has damaged metadata .*write the checkpoint again"):
        tx.checkpoint.load(path)
    edit_metadata(path, lambda meta: meta.update(format_version="two"))
    with pytest.raises(ValueError, match=r"m.safetensors has damaged metadata \(format_version 'two' is not a whole number\)"):
        tx.checkpoint.load(path)


def test_a_model_with_rms_norm_and_gelu_saves_and_loads_as_it_was(tmp_path):
    from tx.data import SPECIALS, Vocab

    src = Vocab([*SPECIALS, "a", "b", "c"])
    tgt = Vocab([*SPECIALS, "x", "y"])
    torch.manual_seed(0)
    model = tx.Transformer(src_vocab_size=len(src), tgt_vocab_size=len(tgt), d_model=16, n_heads=2, n_layers=1,
                           d_ff=32, norm="rms", norm_first=True, activation="gelu", max_len=16).eval()
    path = tx.checkpoint.save(tmp_path / "rms.safetensors", model, src, tgt)
    loaded = tx.checkpoint.load(path).model
    assert loaded.config == model.config
    ids, out = torch.tensor([[4, 5, 6, 2]]), torch.tensor([[1, 4, 5]])
    torch.testing.assert_close(loaded(ids, out), model(ids, out))
