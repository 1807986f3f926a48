"""tx.training_record: the build records a chapter's training run and the JupyterLab test replays it.

A replay must leave the kernel as the training would have: the same weights, history, random
state and training mode, the callback shown the whole history. Anything the run depends on
that differs must train again, and a reader's kernel (neither variable set) must never write.
"""

from __future__ import annotations

import torch
from torch import nn

from tx import lm_train, training_record, vision
from tx.config import LanguageModelConfig
from tx.language_model import LanguageModel
from tx.training_record import RECORD, REPLAY, recorded

PAIRS = [("je suis étudiant", "i am a student"), ("merci", "thanks"), ("il est grand", "he is tall")]
calls: list[int] = []


@recorded
def toy_fit(model, data, steps, progress=True, callback=None, seconds=None, extra=None):
    """Trains ``model`` on ``data`` for ``steps`` steps of SGD; counts its calls."""
    calls.append(steps)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        loss = (model(data) - data.sum(1, keepdim=True)).pow(2).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    torch.rand(3)  # the run moves the random state, as dropout does
    model.eval()
    if callback is not None:
        callback({"train_loss": losses})
    return {"train_loss": losses}


def toy_model(seed=0):
    torch.manual_seed(seed)
    return nn.Linear(4, 1)


DATA = torch.arange(12.0).reshape(3, 4) / 12


def test_a_readers_kernel_trains_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv(RECORD, raising=False)
    monkeypatch.delenv(REPLAY, raising=False)
    monkeypatch.chdir(tmp_path)
    calls.clear()
    toy_fit(toy_model(), DATA, 3)
    toy_fit(toy_model(), DATA, 3)
    assert calls == [3, 3] and not list(tmp_path.rglob("*"))


def test_a_recorded_run_replays_as_the_training_left_the_kernel(tmp_path, monkeypatch):
    monkeypatch.setenv(RECORD, str(tmp_path))
    calls.clear()
    trained = toy_model()
    history = toy_fit(trained, DATA, 5)
    after = torch.get_rng_state()
    assert calls == [5] and len(list(tmp_path.glob("toy_fit-*.pt"))) == 1

    monkeypatch.delenv(RECORD)
    monkeypatch.setenv(REPLAY, str(tmp_path))
    shown = []
    replayed = toy_model()
    torch.rand(7)  # a learner's kernel may have drawn other numbers before; the run reseeds
    again = toy_fit(replayed, DATA, 5, callback=shown.append)
    assert calls == [5], "the replay trained again"
    assert again == history and shown == [history]
    assert torch.equal(replayed.weight, trained.weight) and torch.equal(replayed.bias, trained.bias)
    assert not replayed.training
    assert torch.equal(torch.get_rng_state(), after)


def test_what_the_run_depends_on_trains_again(tmp_path, monkeypatch):
    monkeypatch.setenv(RECORD, str(tmp_path))
    calls.clear()
    toy_fit(toy_model(), DATA, 3)
    monkeypatch.setenv(REPLAY, str(tmp_path))
    toy_fit(toy_model(seed=1), DATA, 3)  # other starting weights
    toy_fit(toy_model(), DATA + 1, 3)  # other data
    toy_fit(toy_model(), DATA, 4)  # another argument
    threads = torch.get_num_threads()
    torch.set_num_threads(threads + 1)
    try:
        toy_fit(toy_model(), DATA, 3)  # another thread count
    finally:
        torch.set_num_threads(threads)
    assert calls == [3, 3, 3, 4, 3]
    toy_fit(toy_model(), DATA, 3)  # the first run again: replayed
    assert calls == [3, 3, 3, 4, 3]


def test_a_changed_line_of_tx_trains_again(tmp_path, monkeypatch):
    monkeypatch.setenv(RECORD, str(tmp_path))
    monkeypatch.setenv(REPLAY, str(tmp_path))
    calls.clear()
    toy_fit(toy_model(), DATA, 3)
    monkeypatch.setattr(training_record, "_source_digest", lambda: b"tx, one line later")
    toy_fit(toy_model(), DATA, 3)
    assert calls == [3, 3]


def test_a_timed_run_or_an_unreadable_argument_is_never_recorded(tmp_path, monkeypatch):
    monkeypatch.setenv(RECORD, str(tmp_path))
    monkeypatch.setenv(REPLAY, str(tmp_path))
    calls.clear()
    toy_fit(toy_model(), DATA, 2, seconds=60.0)  # stops on the clock: not the same run twice
    toy_fit(toy_model(), DATA, 2, extra=object())  # a digest of it could not be trusted
    assert calls == [2, 2] and not list(tmp_path.glob("*.pt"))


def test_a_language_model_and_a_vit_replay_their_training(tmp_path, monkeypatch):
    vocab = lm_train.joint_vocab(PAIRS)
    examples = [lm_train.pair_ids(vocab, fr, en) for fr, en in PAIRS]
    config = LanguageModelConfig.small(len(vocab))

    def lm():
        torch.manual_seed(0)
        return LanguageModel(config)

    monkeypatch.setenv(RECORD, str(tmp_path))
    trained = lm()
    history = lm_train.fit_lm(trained, examples, steps=3, warmup=2)
    monkeypatch.delenv(RECORD)
    monkeypatch.setenv(REPLAY, str(tmp_path))
    replayed = lm()
    again = lm_train.fit_lm(replayed, examples, steps=3, warmup=2)
    assert again == history  # "seconds" too: measured once, by the recorded run
    for (name, a), (_, b) in zip(trained.state_dict().items(), replayed.state_dict().items()):
        assert torch.equal(a, b), name
    assert {p.name.split("-")[0] for p in tmp_path.glob("*.pt")} == {"fit_lm"}
    assert vision.fit_classifier.__wrapped__.__name__ == "fit_classifier"
