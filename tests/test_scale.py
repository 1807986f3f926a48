"""Training at scale: mixed precision and DistributedDataParallel, on the CPU with gloo."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import scipy.stats
import torch
from torch.testing import assert_close

import tx
from tx import data, parallel, scale
from tx.cli import train as train_command  # python -m tx.train
from tx.train import TrainConfig, batch_loss, fit

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def corpus():
    return data.load_corpus(seed=0, n_pairs=400)


def small_config(corpus, **overrides):
    return tx.TransformerConfig.small(len(corpus.src_vocab), len(corpus.tgt_vocab), **overrides)


def uneven_batch(corpus, n=8):
    """A batch whose two halves hold very different numbers of target tokens (short sentences first)."""
    pairs = sorted(corpus.train, key=lambda p: len(p[1].split()))
    chosen = pairs[: n // 2] + pairs[-(n // 2):]
    batch = next(data.batches(chosen, corpus.src_vocab, corpus.tgt_vocab, n))
    halves = [scale.shard(batch, r, 2).n_tokens for r in range(2)]
    assert halves[0] < halves[1]  # otherwise the test cannot tell the weighted mean from the mean of means
    return batch


def test_shards_cover_the_batch_once():
    batch = data.Batch(torch.arange(14).view(7, 2), torch.arange(21).view(7, 3))
    parts = [scale.shard(batch, r, 3) for r in range(3)]
    assert torch.equal(torch.cat([p.src for p in parts]), batch.src)
    assert [p.src.size(0) for p in parts] == [3, 2, 2]
    with pytest.raises(ValueError, match="rank must be in 0..2"):
        scale.shard(batch, 3, 3)
    with pytest.raises(ValueError, match="cannot give each of 8 processes a row"):
        scale.shard(batch, 0, 8)


def test_precision_is_checked_with_a_clear_error():
    with pytest.raises(ValueError, match="precision must be one of fp32, bf16, fp16"):
        TrainConfig(precision="fp8")
    with pytest.raises(ValueError, match="needs a CUDA GPU.*use 'bf16'"):
        scale.check_precision("fp16", "cpu")
    scale.check_precision("bf16", "cpu")
    assert scale.backend("cpu") == "gloo" and scale.backend("cuda") == "nccl"


def test_fp16_on_the_cpu_stops_fit_and_the_command(corpus, tmp_path, capsys):
    model = tx.Transformer.from_config(small_config(corpus))
    with pytest.raises(ValueError, match="needs a CUDA GPU"):
        fit(model, corpus.train, [], corpus.src_vocab, corpus.tgt_vocab, TrainConfig(steps=1, precision="fp16"),
            progress=False)
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit):
            train_command.main(["--out", str(tmp_path / "m.safetensors"), "--precision", "fp16", "--pairs", "400"])
        assert "needs a CUDA GPU" in capsys.readouterr().err


def test_bf16_autocast_runs_the_matmuls_in_bf16_and_the_loss_in_fp32(corpus):
    model = tx.Transformer.from_config(small_config(corpus))
    batch = next(data.batches(corpus.train, corpus.src_vocab, corpus.tgt_vocab, 4))
    with scale.autocast("bf16", "cpu"):
        assert model(batch.src, batch.tgt_in).dtype == torch.bfloat16
    loss = batch_loss(model, batch, 0, 0.1, "bf16")
    assert loss.dtype == torch.float32
    assert all(p.dtype == torch.float32 for p in model.parameters())


def test_bf16_training_reaches_the_fp32_validation_loss():
    # 60 steps of the book's model in bf16 (emulated on a CPU without bf16 instructions);
    # bf16 keeps 8 significant bits (relative rounding 2^-9) in the matrix multiplies, while
    # the weights, Adam and the loss stay fp32. How those products round depends on the CPU
    # (native bf16 instructions, AVX-512, or emulation on AVX2 alone), so a bf16 run is a
    # different trajectory from the fp32 run of the same seed, as a run of another seed is.
    # The tolerance is measured here, not tuned on one machine: four fp32 runs that differ
    # only in the seed (the weights, the dropout, the batches) show how far the validation loss
    # moves by chance, and the bf16 run must land where a fifth fp32 seed could: inside the
    # 99% prediction interval for one more run, mean +- t(0.995, 3) * s * sqrt(1 + 1/4)
    # (t = 5.84: four runs say little about their own spread, so the interval is wide). Measured
    # 2026-11-26 on an Intel Xeon (AVX-512, no native bf16): +-0.94 around 3.69, and +-0.40
    # around 3.65 with ATEN_CPU_CAPABILITY=default; two bf16 seeds landed at 3.35 to 3.57. A
    # bf16 run that stopped learning, at the untrained 5.3, falls outside. 60 steps, not the
    # 100 this test once took: the loss has left 5.3 by then, and the test costs 21 CPU-s, not
    # 49. Batches of 16 (32 cost half as much again for the same verdict, 2026-11-25).
    # 200 validation sentences (the other tests' corpus has 20, whose loss moves by chance
    # as much as the difference this test looks for)
    corpus = data.load_corpus(seed=0, n_pairs=4000)
    cfg = TrainConfig(steps=60, batch_size=16, eval_every=60, warmup=30)

    def valid_loss(precision, seed):
        torch.manual_seed(seed)
        model = tx.Transformer.from_config(small_config(corpus))
        h = fit(model, corpus.train, corpus.valid, corpus.src_vocab, corpus.tgt_vocab,
                TrainConfig(**{**vars(cfg), "precision": precision}), progress=False)
        assert all(p.dtype == torch.float32 for p in model.parameters())  # checkpoints stay fp32
        return h["valid_loss"][-1]

    fp32 = torch.tensor([valid_loss("fp32", seed) for seed in range(4)], dtype=torch.float64)
    bf16 = valid_loss("bf16", 0)
    # every fp32 run learned something: the untrained loss is about 5.3, and these runs
    # measured 3.56 to 3.82 (AVX-512 and ATEN_CPU_CAPABILITY=default)
    assert fp32.max() < 4.5, fp32
    n = len(fp32)
    half_width = scipy.stats.t.ppf(0.995, n - 1) * fp32.std() * (1 + 1 / n) ** 0.5
    assert abs(bf16 - fp32.mean()) <= half_width, (bf16, fp32.tolist(), float(half_width))


def test_ddp_gradient_is_the_gradient_of_the_whole_batch(corpus):
    # 2 gloo processes, each on half of a batch whose halves hold different numbers of tokens.
    cfg = small_config(corpus, dropout=0.0)
    batch = uneven_batch(corpus)
    per_process = scale.gradients_in_processes(2, cfg, 0, batch, smoothing=0.1)
    torch.manual_seed(0)
    model = tx.Transformer.from_config(cfg)
    batch_loss(model, batch, 0, 0.1).backward()
    whole = {k: p.grad for k, p in model.named_parameters()}
    # Only the order of the float32 sums differs: errors of a few float32 roundings (eps = 1.2e-7)
    # of the largest gradient entries. (The key biases' gradient is zero in exact arithmetic, so
    # it is nothing but such rounding, and only an absolute tolerance can hold it.)
    atol = 1e-5 * max(float(g.abs().max()) for g in whole.values())
    for grads in per_process:  # DDP leaves the same averaged gradient in every process
        for k, g in whole.items():
            assert_close(grads[k], g, rtol=1e-4, atol=atol, msg=k)
    # The mean of the two halves' means weighs the short half's tokens more: a different gradient.
    naive = {}
    for r in range(2):
        torch.manual_seed(0)
        m = tx.Transformer.from_config(cfg)
        part = scale.shard(batch, r, 2)
        (tx.train.loss_fn(m(part.src, part.tgt_in), part.tgt_out, 0, 0.1) / 2).backward()
        for k, p in m.named_parameters():
            naive[k] = naive.get(k, 0) + p.grad
    assert not torch.allclose(naive["generator.weight"], whole["generator.weight"], rtol=1e-3, atol=1e-6)


def test_ddp_training_gives_the_weights_of_one_process_on_the_same_batches(corpus):
    cfg, steps = small_config(corpus, dropout=0.0), 4
    tcfg = TrainConfig(steps=steps, batch_size=16, eval_every=100)
    parallel = scale.fit_in_processes(2, cfg, 0, corpus.train, (corpus.src_vocab, corpus.tgt_vocab), tcfg)
    torch.manual_seed(0)
    model = tx.Transformer.from_config(cfg)
    with tx.train.cpu_threads(1):
        history = fit(model, corpus.train, [], corpus.src_vocab, corpus.tgt_vocab, tcfg, progress=False)
    assert parallel["world_size"] == 2
    assert parallel["history"]["train_loss"] == pytest.approx(history["train_loss"], rel=1e-5)
    # Tolerance: the gradients agree to float32 rounding (test above), but Adam divides each
    # gradient by its own running size, so an entry that is rounding noise itself (the key
    # biases' gradient is zero in exact arithmetic: softmax ignores a constant added to a row
    # of scores) moves by up to the learning rate either way. 2 * (sum of the rates) bounds it.
    atol = 2 * sum(history["lr"])
    for k, w in model.state_dict().items():
        assert_close(parallel["state"][k], w, rtol=0, atol=atol, msg=k)
    moved = sum(int((parallel["state"][k] != w).sum()) for k, w in model.state_dict().items())
    close = sum(int(((parallel["state"][k] - w).abs() <= 1e-6).sum()) for k, w in model.state_dict().items())
    total = sum(w.numel() for w in model.state_dict().values())
    assert close / total > 0.999, (moved, close, total)  # nearly every weight to 1e-6, far below one step's rate


def test_fit_refuses_a_global_batch_that_does_not_split(corpus, monkeypatch):
    monkeypatch.setattr(parallel, "world", lambda: scale.World(0, 3))  # what fit asks
    model = tx.Transformer.from_config(small_config(corpus))
    with pytest.raises(ValueError, match="does not split evenly over 3 processes"):
        fit(model, corpus.train, [], corpus.src_vocab, corpus.tgt_vocab, TrainConfig(steps=1, batch_size=16),
            progress=False)
    with pytest.raises(ValueError, match="2 training pairs cannot give each of 3 processes a sentence"):
        fit(model, corpus.train[:2], [], corpus.src_vocab, corpus.tgt_vocab, TrainConfig(steps=1, batch_size=3),
            progress=False)


def torchrun():
    path = Path(sys.executable).with_name("torchrun")
    return [str(path)] if path.exists() else [sys.executable, "-m", "torch.distributed.run"]


def test_torchrun_with_two_processes_trains_a_real_corpus_writes_one_checkpoint_and_resumes(tmp_path):
    # One torchrun test, not two: each run starts three Python processes that import torch
    # (about 3.5 CPU-s each), and a second run on the book's built-in corpus checked nothing
    # this one does not.
    from test_real_corpus import write_tsv

    corpus, out = write_tsv(tmp_path / "corpus.tsv"), tmp_path / "real.safetensors"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    base = torchrun() + ["--standalone", "--nproc_per_node", "2", "-m", "tx.train", "--tsv", str(corpus),
                         "--out", str(out), "--threads", "1", "--batch-size", "8"]
    first = subprocess.run(base + ["--steps", "4", "--vocab-size", "80"], env=env, cwd=tmp_path,
                           capture_output=True, text=True, timeout=240)
    assert first.returncode == 0, first.stderr[-3000:]
    # one checkpoint and its training state, written by rank 0 alone
    assert sorted(p.name for p in tmp_path.iterdir() if p != corpus) == sorted(
        [out.name, tx.train.state_path(out).name])
    assert first.stdout.count("wrote") == 1
    loaded = tx.checkpoint.load(out)
    assert loaded.info["world_size"] == 2 and loaded.info["step"] == 4
    assert all(p.dtype == torch.float32 for p in loaded.model.parameters())
    words = tx.translate.main([str(out), "Je suis grand."])
    assert len(words) == 1 and isinstance(words[0], str)
    second = subprocess.run(base + ["--steps", "6", "--resume"], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=240)
    assert second.returncode == 0, second.stderr[-3000:]
    info = tx.checkpoint.read_metadata(out)["info"]
    assert info["world_size"] == 2 and info["step"] == 6 and info["complete"]
    assert tx.train.load_state(tx.train.state_path(out)).step == 6
    assert second.stdout.count("trained 6 steps") == 1  # rank 0 alone reports
