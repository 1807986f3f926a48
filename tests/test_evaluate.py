import pytest

import tx
from conftest import tiny_model


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


# Issue 11: the word tokenizer lowercases every translation, so a cased reference never matched
# and a right translation scored 0% exact match. References are now written the way the target
# vocabulary writes its output, and the vocabulary names that comparison.
CASED = [("je suis étudiant", "I am a student"), ("merci", "Thanks"), ("le chat noir", "The black cat")]


def test_word_vocab_output_is_compared_lowercased_with_cased_references():
    ck = tx.checkpoint.load()
    scores = tx.evaluate.evaluate(ck.model, CASED, ck.src_vocab, ck.tgt_vocab)
    assert ck.tgt_vocab.comparison == "lowercased"
    assert scores["exact_match"] == 1.0  # was 0.0: "i am a student" against "I am a student"
    assert scores["bleu"] == pytest.approx(100.0)


def test_a_reference_keeps_its_words_when_normalised():
    vocab = tx.checkpoint.load().tgt_vocab
    assert vocab.normalise("Who WON ?") == "who won?"
    assert vocab.normalise("It’s Tom's.") == "it's tom's."


def _fixed_translations(monkeypatch, outputs):
    monkeypatch.setattr(tx.evaluate, "translate", lambda *args, **kw: list(outputs))


def test_subword_output_is_compared_cased(monkeypatch):
    from tx.subwords import SubwordVocab

    refs = ["Who won?", "Tom is here.", "I  know."]
    vocab = SubwordVocab.train(refs * 3, vocab_size=60, min_frequency=1)
    model = tiny_model(src_vocab_size=len(vocab), tgt_vocab_size=len(vocab))
    pairs = [("qui a gagné ?", refs[0]), ("Tom est là.", refs[1]), ("Je sais.", refs[2])]
    assert vocab.comparison == "cased"
    _fixed_translations(monkeypatch, ["Who won?", "tom is here.", "I know."])
    scores = tx.evaluate.evaluate(model, pairs, vocab, vocab)
    assert scores["exact_match"] == pytest.approx(2 / 3)  # case counts; the double space does not
    _fixed_translations(monkeypatch, refs)
    assert tx.evaluate.evaluate(model, pairs, vocab, vocab)["bleu"] == pytest.approx(100.0)


def test_a_length_margin_stops_each_sentence_at_its_source_s_length_plus_the_margin():
    """The book's model never ends a sentence whose words it mostly does not know ("j'habite à paris":
    'i i i ...' to the model's 63 positions); with a margin it stops at 5 + margin, and each sentence of a
    batch at its own limit, as if it were decoded alone with that limit."""
    import torch

    from tx.decoding import output_limit

    ck = tx.checkpoint.load()
    sentences = ["j'habite à paris", "je suis étudiant", "le chien mange la pizza", "merci",
                 "nous ne prenons pas les sacs rouges"]
    free = tx.evaluate.translate(ck.model, sentences, ck.src_vocab, ck.tgt_vocab)
    assert len(free[0].split()) == ck.model.config.max_len - 1  # what readers met: it never writes <eos>
    for beam_size in (1, 3):
        cut = tx.evaluate.translate(ck.model, sentences, ck.src_vocab, ck.tgt_vocab, beam_size=beam_size,
                                    length_margin=2, batch_size=2)
        alone = []
        for s in sentences:
            src = torch.tensor([ck.src_vocab.encode(s, add_bos=False)])
            limit = output_limit(src.size(1), ck.model.config.max_len - 1, 2)
            alone += tx.evaluate.translate(ck.model, [s], ck.src_vocab, ck.tgt_vocab, beam_size=beam_size, max_len=limit)
        assert cut == alone
    greedy = tx.evaluate.translate(ck.model, sentences, ck.src_vocab, ck.tgt_vocab, length_margin=2)
    assert len(greedy[0].split()) == 7 and greedy[1:] == free[1:]  # sentences that end are untouched
