"""Training on a real, cased corpus from the command line (issue 11): subwords, --minutes, --resume, logs.

Every corpus here is written by the test itself; nothing needs ../shared/.
"""

import io
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import torch

import tx
import tx.cli.train
from tx import data
from tx.subwords import SubwordVocab
from tx.train import TrainConfig, TrainState, fit, load_state, save_state, state_path

ROOT = Path(__file__).resolve().parents[1]
PAIRS = [("Qui a gagné ?", "Who won?"), ("Tom a gagné.", "Tom won."), ("Je sais.", "I know."),
         ("Marie est là.", "Mary is here."), ("Tom est là.", "Tom is here."), ("Qui est là ?", "Who is here?"),
         ("Je suis là.", "I am here."), ("Marie a gagné.", "Mary won."), ("Tu sais.", "You know."),
         ("Nous avons gagné.", "We won.")]


def write_tsv(path: Path, n: int = 60, attribution: bool = False) -> Path:
    """A Tatoeba-style file, English<TAB>French, optionally with the third (attribution) column."""
    lines = []
    for i in range(n):
        fr, en = PAIRS[i % len(PAIRS)]
        fr = fr if i < len(PAIRS) else f"{fr[:-1].rstrip()} {i} {fr[-1]}"  # distinct sources for the splits
        en = en if i < len(PAIRS) else f"{en[:-1]} {i}{en[-1]}"
        lines.append(f"{en}\t{fr}" + (f"\tCC-BY 2.0 (France) Attribution: tatoeba.org #{i} (someone)" if attribution else ""))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_three_column_layout_reads_like_the_two_column_one(tmp_path):
    two = data.load_parallel_tsv(write_tsv(tmp_path / "two.tsv"))
    three = data.load_parallel_tsv(write_tsv(tmp_path / "three.tsv", attribution=True))
    assert two == three and two[0] == ("Qui a gagné ?", "Who won?")


def tiny(vocab_src, vocab_tgt, **kw):
    torch.manual_seed(0)
    cfg = dict(d_model=32, n_heads=2, n_layers=1, d_ff=64, dropout=0.0, max_len=32) | kw
    return tx.Transformer(src_vocab_size=len(vocab_src), tgt_vocab_size=len(vocab_tgt), **cfg)


@pytest.fixture(scope="module")
def vocabs():
    return SubwordVocab.train([f for f, _ in PAIRS], 60, 1), SubwordVocab.train([e for _, e in PAIRS], 60, 1)


def test_fit_resumed_from_a_saved_state_equals_one_uninterrupted_run(vocabs, tmp_path):
    src, tgt = vocabs
    cfg = TrainConfig(steps=7, batch_size=3, warmup=2, eval_every=100, save_every=3)
    straight = tiny(src, tgt)
    whole = fit(straight, PAIRS, PAIRS[:2], src, tgt, cfg, progress=False)
    saved = {}

    def keep(state: TrainState) -> None:  # the state of step 3, through a file, as --resume reads it
        if state.step == 3:
            saved["weights"] = {k: v.clone() for k, v in first.state_dict().items()}
            saved["state"] = load_state(save_state(tmp_path / "s.safetensors", state))

    first = tiny(src, tgt)
    with pytest.raises(KeyboardInterrupt):  # interrupted after step 4, as a user's Ctrl-C would
        fit(first, PAIRS, PAIRS[:2], src, tgt, cfg, progress=False,
            callback=None, save=lambda s: keep(s) if s.step < 6 else (_ for _ in ()).throw(KeyboardInterrupt()))
    resumed = tiny(src, tgt)
    resumed.load_state_dict(saved["weights"])
    rest = fit(resumed, PAIRS, PAIRS[:2], src, tgt, cfg, progress=False, resume=saved["state"])
    assert rest["step"] == [4, 5, 6, 7]  # no step lost, none done twice
    assert rest["train_loss"] == pytest.approx(whole["train_loss"][3:], abs=1e-5)
    for (name, a), b in zip(straight.state_dict().items(), resumed.state_dict().values()):
        torch.testing.assert_close(a, b, msg=name)


def test_a_time_budget_stops_training_before_its_steps(vocabs):
    src, tgt = vocabs
    history = fit(tiny(src, tgt), PAIRS, PAIRS[:2], src, tgt,
                  TrainConfig(steps=100_000, batch_size=2, minutes=0.02, eval_every=10**6), progress=False)
    assert 1 <= history["step"][-1] < 100_000
    assert history["valid_step"] == [history["step"][-1]]  # validated once, where it stopped
    assert 0.02 * 60 <= history["seconds"] < 30


def test_in_a_log_file_the_progress_bar_is_a_few_lines(vocabs, monkeypatch):
    src, tgt = vocabs
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    err = io.StringIO()  # not a terminal, as a log file is not
    with redirect_stderr(err):
        fit(tiny(src, tgt), PAIRS, [], src, tgt, TrainConfig(steps=200, batch_size=2, eval_every=1000), progress=True)
    lines = err.getvalue().splitlines()
    assert 1 <= len(lines) <= 11 and "\r" not in err.getvalue(), lines
    assert lines[-1].startswith("training: step 200/200")


def run_cli(module: str, *argv: str) -> subprocess.CompletedProcess:
    """``python -m module argv...``, run in this process: its exit status and what it printed.

    Not a subprocess: each of those imports torch again, about 3.5 CPU-s, which was most of
    what a refused command cost. ``test_translate_command_reads_arguments_or_standard_input_in_order``
    still runs the real ``python -m`` entry point in one.
    """
    main = {"tx.train": tx.cli.train.main, "tx.translate": tx.translate.main}[module]
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main(list(argv))
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    return subprocess.CompletedProcess([module, *argv], code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """`python -m tx.train --tsv` on a tiny three-column corpus: 4 steps, then --resume to 6."""
    tmp = tmp_path_factory.mktemp("real")
    corpus, out = write_tsv(tmp / "corpus.tsv", attribution=True), tmp / "m.safetensors"
    first = run_cli("tx.train", "--tsv", str(corpus), "--out", str(out), "--steps", "4", "--vocab-size", "80", "--credit", "made up by the test")
    second = run_cli("tx.train", "--tsv", str(corpus), "--out", str(out), "--steps", "6", "--resume")
    return corpus, out, first, second


def test_command_line_trains_cased_subwords_and_names_the_comparison(trained):
    corpus, out, first, _ = trained
    assert first.returncode == 0, first.stderr
    assert "(cased)" in first.stdout
    assert len(first.stderr.splitlines()) <= 12  # the progress, a few lines in a log
    ck = tx.checkpoint.load(out)
    assert isinstance(ck.src_vocab, SubwordVocab) and isinstance(ck.tgt_vocab, SubwordVocab)
    assert ck.tgt_vocab.decode(ck.tgt_vocab.encode("Who won?")) == "Who won?"
    split = data.split_corpus(data.load_parallel_tsv(corpus))
    # Learned from the training split only: the same merges as BPE trained on it alone.
    assert ck.src_vocab == SubwordVocab.train([fr for fr, _ in split.train], 80)
    assert ck.src_vocab != SubwordVocab.train([fr for fr, _ in split.train + split.test], 80)


def test_shared_vocab_ties_the_embeddings_and_stores_one_vocabulary(tmp_path):
    corpus, out = write_tsv(tmp_path / "corpus.tsv"), tmp_path / "shared.safetensors"
    done = run_cli("tx.train", "--tsv", str(corpus), "--out", str(out), "--steps", "2", "--vocab-size", "120",
                   "--shared-vocab")
    assert done.returncode == 0, done.stderr
    ck = tx.checkpoint.load(out)
    assert ck.model.config.share_embeddings and ck.src_vocab == ck.tgt_vocab and len(ck.src_vocab) == 120 + 256
    model = ck.model
    # one matrix, read by both sides and the output layer
    assert model.src_embed.token.weight is model.tgt_embed.token.weight is model.generator.weight
    assert "shared by both languages" in tx.checkpoint.read_metadata(out)["info"]["vocab"]
    split = data.split_corpus(data.load_parallel_tsv(corpus))
    assert ck.src_vocab == SubwordVocab.train([s for pair in split.train for s in pair], 120, byte_fallback=True)


def test_a_negative_copy_count_is_refused_before_any_training(tmp_path):
    corpus = write_tsv(tmp_path / "corpus.tsv")
    done = run_cli("tx.train", "--tsv", str(corpus), "--out", str(tmp_path / "m.safetensors"), "--copy-pairs", "-1")
    assert done.returncode == 2 and "--copy-pairs must be 0 or more" in done.stderr
    done = run_cli("tx.train", "--tsv", str(corpus), "--out", str(tmp_path / "m.safetensors"), "--copy-numbers", "-2")
    assert done.returncode == 2 and "--copy-numbers must be 0 or more" in done.stderr and "got -2" in done.stderr
    assert not (tmp_path / "m.safetensors").exists()


def test_copies_train_and_are_recorded(tmp_path):
    """--copy-pairs and --copy-numbers reach the training pairs (tx.copying) and the checkpoint's record."""
    corpus, out = write_tsv(tmp_path / "corpus.tsv"), tmp_path / "m.safetensors"
    done = run_cli("tx.train", "--tsv", str(corpus), "--out", str(out), "--steps", "2", "--vocab-size", "80",
                   "--copy-pairs", "1", "--copy-numbers", "3", "--threads", "1")
    assert done.returncode == 0, done.stderr
    info = tx.checkpoint.read_metadata(out)["info"]
    assert (info["copy_pairs"], info["copy_numbers"], info["threads"]) == (1, 3, 1)


def test_resume_continues_the_steps_and_records_them(trained):
    _, out, _, second = trained
    assert second.returncode == 0, second.stderr
    info = tx.checkpoint.read_metadata(out)["info"]
    assert info["step"] == 6 and info["complete"] and info["compared"] == "cased"
    assert info["credit"] == "made up by the test"  # kept through --resume
    assert set(info["test"]) == {"exact_match", "bleu", "n"}
    assert load_state(state_path(out)).step == 6
    assert "trained 6 steps" in second.stdout


def test_resume_refuses_another_corpus_or_a_missing_run(trained, tmp_path):
    corpus, out, _, _ = trained
    other = write_tsv(tmp_path / "other.tsv", n=70)
    done = run_cli("tx.train", "--tsv", str(other), "--out", str(out), "--steps", "8", "--resume")
    assert done.returncode == 2 and "another corpus" in done.stderr
    done = run_cli("tx.train", "--tsv", str(corpus), "--out", str(out), "--steps", "6", "--resume")
    assert done.returncode == 2 and "its whole --steps 6" in done.stderr
    done = run_cli("tx.train", "--tsv", str(corpus), "--out", str(tmp_path / "none.safetensors"), "--resume")
    assert done.returncode == 2 and "no checkpoint at" in done.stderr
    done = run_cli("tx.train", "--out", str(tmp_path / "x.safetensors"), "--resume")
    assert done.returncode == 2 and "--resume continues a --tsv run" in done.stderr


def test_translate_command_reads_arguments_or_standard_input_in_order(trained):
    _, out, _, _ = trained
    by_args = run_cli("tx.translate", str(out), "--beam", "3", "Qui a gagné ?", "Tom est là.")
    assert by_args.returncode == 0, by_args.stderr
    assert len(by_args.stdout.splitlines()) == 2
    stdin = subprocess.run([sys.executable, "-m", "tx.translate", str(out), "--beam", "2"], input="Qui a gagné ?\n\nTom est là.\n",
                           capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})
    assert stdin.returncode == 0, stdin.stderr
    assert len(stdin.stdout.split("\n")) == 4 and stdin.stdout.split("\n")[1] == ""  # 3 lines, the blank kept


def test_translate_book_model_and_its_errors(tmp_path, capsys):
    assert tx.translate.main([str(tx.checkpoint.BOOK_MODEL), "je suis étudiant", "merci"]) == ["i am a student", "thanks"]
    assert capsys.readouterr().out == "i am a student\nthanks\n"
    for argv, message in [([str(tmp_path / "none.safetensors"), "merci"], "no checkpoint at"),
                          ([str(tx.checkpoint.BOOK_MODEL), "merci", "--beam", "0"], "--beam must be at least 1"),
                          ([str(tmp_path), "merci"], "")]:
        with pytest.raises(SystemExit) as e:
            tx.translate.main(argv)
        assert e.value.code == 2 and message in capsys.readouterr().err
    state = tmp_path / "s.safetensors"
    save_state(state, TrainState())
    with pytest.raises(SystemExit):
        tx.translate.main([str(state), "merci"])
    assert "not a tx checkpoint" in capsys.readouterr().err
