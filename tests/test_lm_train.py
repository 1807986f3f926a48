"""tx.lm_train: sequences for a language model and for translation by a decoder alone, training, perplexity."""

from __future__ import annotations

import math

import pytest
import torch

import tx
from tx import lm_train
from tx.config import LanguageModelConfig
from tx.language_model import LanguageModel

PAIRS = [("je suis étudiant", "i am a student"), ("merci", "thanks"), ("il est grand", "he is tall")]


def test_joint_vocab_holds_both_languages_and_sep_last():
    vocab = lm_train.joint_vocab(PAIRS)
    assert {"je", "étudiant", "student", "thanks"} <= set(vocab.itos)
    assert vocab.itos[-1] == lm_train.SEP and vocab.itos[:4] == list(tx.data.SPECIALS)


def test_pair_ids_lays_out_french_sep_english_and_where_english_starts():
    vocab = lm_train.joint_vocab(PAIRS)
    ids, first = lm_train.pair_ids(vocab, "merci", "thanks")
    assert vocab.tokens(ids) == ["<bos>", "merci", "<sep>", "thanks", "<eos>"]
    assert first == 3 and vocab.tokens(ids[first:]) == ["thanks", "<eos>"]
    prompt, first = lm_train.pair_ids(vocab, "merci")
    assert vocab.tokens(prompt) == ["<bos>", "merci", "<sep>"] and first == 3


def test_batch_targets_only_the_english_part():
    vocab = lm_train.joint_vocab(PAIRS)
    examples = [lm_train.pair_ids(vocab, fr, en) for fr, en in PAIRS[:2]]
    inputs, targets = lm_train.batch(examples)
    assert inputs.shape == targets.shape == (2, 9)
    # row 0: <bos> je suis étudiant <sep> i am a student <eos>: the first 4 targets are French or <sep>
    assert vocab.tokens(targets[0]) == ["<pad>"] * 4 + ["i", "am", "a", "student", "<eos>"]
    assert vocab.tokens(targets[1, :5]) == ["<pad>", "<pad>", "thanks", "<eos>", "<pad>"]
    lm_inputs, lm_targets = lm_train.batch([lm_train.sentence_ids(vocab, "he is tall")])
    assert vocab.tokens(lm_targets[0]) == ["he", "is", "tall", "<eos>"]  # a plain LM: every next token


def test_perplexity_of_uniform_predictions_is_the_vocabulary_size():
    model = LanguageModel(LanguageModelConfig.small(11, d_model=16, n_heads=2, n_layers=1, d_ff=16))
    torch.nn.init.zeros_(model.lm_head.weight)  # tied: zero logits everywhere, a uniform distribution
    assert lm_train.perplexity(model, [([1, 4, 5, 6, 2], 1), ([1, 7, 2], 1)]) == pytest.approx(11)


def test_fit_lm_learns_to_translate_a_handful_of_pairs():
    vocab = lm_train.joint_vocab(PAIRS)
    examples = [lm_train.pair_ids(vocab, fr, en) for fr, en in PAIRS]
    torch.manual_seed(0)
    model = LanguageModel(LanguageModelConfig.small(len(vocab), d_model=32, n_heads=2, n_layers=2, d_ff=64, max_len=16))
    history = lm_train.fit_lm(model, examples, steps=150, batch_size=3, warmup=20, label_smoothing=0.0)
    assert history["steps"] == 150 and history["train_loss"][-1] < 0.1 < history["train_loss"][0]
    assert lm_train.translate(model, vocab, [fr for fr, _ in PAIRS]) == [en for _, en in PAIRS]
    assert lm_train.perplexity(model, examples) < 1.2


def test_step_times_are_positive_seconds():
    corpus = tx.data.load_corpus(n_pairs=400)
    vocab = lm_train.joint_vocab(corpus.train)
    examples = [lm_train.pair_ids(vocab, fr, en) for fr, en in corpus.train]
    lm, book = lm_train.step_times(LanguageModel(LanguageModelConfig.small(len(vocab))), examples, corpus, rounds=1)
    assert 0 < lm < 60 and 0 < book < 60


def test_fit_lm_refuses_bad_arguments():
    model = LanguageModel(LanguageModelConfig.small(11, d_model=16, n_heads=2, n_layers=1, d_ff=16))
    with pytest.raises(ValueError, match="no"):
        lm_train.fit_lm(model, [], steps=3)
    with pytest.raises(ValueError, match="steps must be at least 1"):
        lm_train.fit_lm(model, [([1, 2], 1)], steps=0)
    assert math.isfinite(lm_train.perplexity(model, [([1, 4, 2], 1)]))
