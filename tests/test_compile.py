"""torch.compile sees tx's model as one graph: its forward and a training step's loss break nowhere.

tx's checks read Python values (a token id range, a dtype), which would split a compiled graph;
``tx.checks.guarded`` skips them while torch.compile traces, so the model's own arithmetic is all
the compiler sees. ``torch._dynamo.explain`` traces without compiling and counts the breaks.
"""

from __future__ import annotations

import torch

import tx
from tx import data
from tx.train import batch_loss

SIZES = dict(src_vocab_size=30, tgt_vocab_size=31, d_model=16, n_heads=2, n_layers=1, d_ff=32)


def breaks(fn, *args) -> list[str]:
    torch._dynamo.reset()
    explained = torch._dynamo.explain(fn)(*args)
    return [reason.reason for reason in explained.break_reasons] or (
        [] if explained.graph_count == 1 else [f"{explained.graph_count} graphs"]
    )


def test_the_model_s_forward_compiles_to_one_graph():
    torch.manual_seed(0)
    model = tx.Transformer(**SIZES).eval()
    src, tgt = torch.randint(4, 30, (3, 7)), torch.randint(4, 31, (3, 5))
    assert breaks(model, src, tgt) == []


def test_a_training_step_s_loss_compiles_to_one_graph():
    torch.manual_seed(0)
    model = tx.Transformer(**SIZES, norm_first=True).train()
    batch = data.Batch(torch.randint(4, 30, (4, 7)), torch.randint(4, 31, (4, 6)))
    assert breaks(lambda b: batch_loss(model, b, 0, 0.1), batch) == []


def test_the_language_model_s_forward_compiles_to_one_graph():
    torch.manual_seed(0)
    model = tx.LanguageModel(tx.LanguageModelConfig(vocab_size=40, d_model=16, n_heads=2, n_layers=1)).eval()
    assert breaks(model, torch.randint(4, 40, (2, 9))) == []


def test_checks_still_run_outside_the_compiler():
    model = tx.Transformer(**SIZES).eval()
    try:
        model(torch.tensor([[4, 99]]), torch.tensor([[1, 4]]))
    except ValueError as error:
        assert "src holds token id 99" in str(error)
    else:
        raise AssertionError("an id outside the vocabulary was not refused")


def test_python_m_tx_train_compile_hands_fit_a_compiling_config(tmp_path, monkeypatch):
    from tx.cli import train as command

    seen = {}

    def tripwire(model, *args, **kwargs):
        seen["config"] = args[4]
        raise SystemExit(0)

    monkeypatch.setattr(tx.train, "fit", tripwire)
    for flags, compiled in (([], False), (["--compile"], True)):
        try:
            command.main([*flags, "--pairs", "200", "--steps", "2", "--out", str(tmp_path / "m.safetensors")])
        except SystemExit:
            pass
        assert seen.pop("config").compile is compiled
