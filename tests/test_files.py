"""tx._files.atomic_write, and every writer of tx that goes through it: a file lands whole or not at all,
an overwritten file keeps its mode, a new one gets the default mode, and no temporary file is left.
And the format version: a training state from a newer tx says to update tx (checkpoints: test_checkpoint*.py)."""

from __future__ import annotations

import os

import pytest
import torch

import tx
from conftest import tiny_model
from test_checkpoint import NEWER, edit_metadata, read_header
from tx._files import atomic_write
from tx.config import LanguageModelConfig
from tx.language_model import LanguageModel
from tx.train_state import TrainState, load_state, save_state
from tx.training_record import RECORD, recorded


def default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def mode(path) -> int:
    return path.stat().st_mode & 0o777


@recorded
def fit_one_step(model, lr):
    """A training function the book's tests would record (into TX_TRAINING_RECORD)."""
    torch.optim.SGD(model.parameters(), lr=lr).zero_grad()
    return {"train_loss": [lr]}


def write_checkpoint(folder, value):
    return tx.checkpoint.save(folder / "m.safetensors", tiny_model(), info={"value": value})


def write_language_model(folder, value):
    model = LanguageModel(LanguageModelConfig.small(9, d_model=16, n_heads=2, n_layers=1, d_ff=16))
    return tx.checkpoint.save_language_model(folder / "lm.safetensors", model, info={"value": value})


def write_train_state(folder, value):
    return save_state(folder / "m.state.safetensors", TrainState(step=value))


def write_training_record(folder, value):
    """Run under TX_TRAINING_RECORD=folder, set by the test."""
    torch.manual_seed(0)  # the same run each time: the same file, written again
    fit_one_step(torch.nn.Linear(2, 1), lr=0.5)
    (path,) = folder.glob("fit_one_step-*.pt")
    return path


WRITERS = [write_checkpoint, write_language_model, write_train_state, write_training_record]


def test_a_new_file_gets_the_default_mode_and_an_overwritten_one_keeps_its_own(tmp_path):
    path = tmp_path / "sub" / "f.bin"
    with atomic_write(path) as tmp:
        tmp.write_bytes(b"one")
    assert path.read_bytes() == b"one" and mode(path) == default_mode()
    os.chmod(path, 0o600)
    (tmp_path / "sub" / f"f.bin.{os.getpid()}.tmp").write_bytes(b"a killed run's leftover")
    with atomic_write(path) as tmp:
        tmp.write_bytes(b"two")
    assert path.read_bytes() == b"two" and mode(path) == 0o600
    assert os.listdir(tmp_path / "sub") == ["f.bin"]


def test_an_error_while_writing_leaves_the_old_file_whole_and_no_temporary_file(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"good")
    with pytest.raises(RuntimeError, match="disk full"):
        with atomic_write(path) as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError("disk full")
    assert path.read_bytes() == b"good" and os.listdir(tmp_path) == ["f.bin"]


@pytest.mark.parametrize("overwritten", [0o600, 0o640], ids=oct)
@pytest.mark.parametrize("write", WRITERS, ids=lambda w: w.__name__)
def test_every_writer_keeps_an_overwritten_files_mode(write, overwritten, tmp_path, monkeypatch):
    monkeypatch.setenv(RECORD, str(tmp_path))
    path = write(tmp_path, 1)
    assert mode(path) == default_mode()  # as any new file: not safetensors' own 0600
    os.chmod(path, overwritten)
    assert write(tmp_path, 2) == path
    assert mode(path) == overwritten
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("write", WRITERS, ids=lambda w: w.__name__)
def test_every_writer_that_fails_leaves_the_old_file_whole_and_no_temporary_file(write, tmp_path, monkeypatch):
    monkeypatch.setenv(RECORD, str(tmp_path))
    path = write(tmp_path, 1)
    before = path.read_bytes()

    def fail(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="No space left"):
        write(tmp_path, 2)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_a_training_state_of_a_newer_format_says_to_update_tx(tmp_path):
    path = save_state(tmp_path / "m.state.safetensors", TrainState(step=3))
    assert load_state(path).step == 3
    assert read_header(path)[0]["__metadata__"]["format_version"] == "1"
    edit_metadata(path, lambda meta: meta.update(format_version="2"))
    with pytest.raises(ValueError, match="m.state.safetensors " + NEWER.format("format version 2; this tx reads version 1 and older")):
        load_state(path)
    edit_metadata(path, lambda meta: meta.pop("format_version"))  # as a state written before versions existed
    assert load_state(path).step == 3
