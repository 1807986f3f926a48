import pytest

import tx


def test_exact_match_counts_identical_sentences():
    assert tx.evaluate.exact_match(["a b", "c d ", "e"], ["a b", "c d", "f"]) == pytest.approx(2 / 3)


def test_bleu_is_100_for_identical_and_lower_for_different():
    refs = ["the black cat sleeps", "i am a student"]
    assert tx.evaluate.bleu(refs, refs) == pytest.approx(100.0)
    assert tx.evaluate.bleu(["the cat black sleeps", "i am student"], refs) < 60


def test_mismatched_lengths_are_an_error():
    with pytest.raises(ValueError, match="one hypothesis per reference"):
        tx.evaluate.exact_match(["a"], ["a", "b"])


def test_book_checkpoint_translates_the_running_examples():
    ck = tx.checkpoint.load()
    sentences = ["je suis étudiant", "merci", "le chat noir"]
    greedy = tx.evaluate.translate(ck.model, sentences, ck.src_vocab, ck.tgt_vocab)
    beam = tx.evaluate.translate(ck.model, sentences, ck.src_vocab, ck.tgt_vocab, beam_size=3)
    assert greedy == ["i am a student", "thanks", "the black cat"]
    assert beam == greedy
    assert ck.info["test"]["exact_match"] >= 0.9
