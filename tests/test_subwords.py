import json
import types

import pytest
import torch

import tx
from conftest import tiny_model
from tx.subwords import SubwordVocab

ENGLISH = ["Who won?", "Tom won the race.", "Who is Tom?", "I don't know.", "The winner is here.",
           "They won again.", "Is Tom winning?", "I know who won."] * 4


@pytest.fixture(scope="module")
def vocab() -> SubwordVocab:
    return SubwordVocab.train(ENGLISH, vocab_size=80, min_frequency=1)


def test_specials_take_ids_0_to_3_like_the_word_vocab(vocab):
    assert vocab.tokens([0, 1, 2, 3]) == list(tx.data.SPECIALS)
    assert vocab.encode("Who won?")[0] == tx.data.BOS_ID and vocab.encode("Who won?")[-1] == tx.data.EOS_ID
    assert vocab.encode("Who won?", add_bos=False, add_eos=False)[0] > 3


def test_case_is_kept_end_to_end(vocab):
    for sentence in ["Who won?", "I don't know.", "Tom won the race."]:
        assert vocab.decode(vocab.encode(sentence)) == sentence
    assert vocab.encode("Tom") != vocab.encode("tom")


def test_an_unseen_word_is_spelled_in_pieces_not_unk(vocab):
    pieces = vocab.pieces("Tomwinner")  # never seen as one word
    assert len(pieces) > 1 and tx.data.UNK not in pieces
    assert vocab.decode(vocab.encode("Tomwinner")) == "Tomwinner"
    # A word vocabulary of the same sentences has no id for it.
    assert tx.data.Vocab.build(ENGLISH).encode("tomwinner", add_bos=False, add_eos=False) == [tx.data.UNK_ID]


def test_an_unseen_character_is_unk_and_stays_visible(vocab):
    assert vocab.decode(vocab.encode("Who won ☃")).endswith(tx.data.UNK)


def test_with_byte_fallback_no_input_is_unk_and_every_character_comes_back():
    fallback = SubwordVocab.train(ENGLISH, vocab_size=80, min_frequency=1, byte_fallback=True)
    plain = SubwordVocab.train(ENGLISH, vocab_size=80, min_frequency=1)
    assert len(fallback) == len(plain) + 256  # the same pieces, then one a byte
    assert fallback.tokens(range(len(plain))) == plain.tokens(range(len(plain)))
    for text in ["Who won ☃?", "Zoë a 25 ans, Ωmega « oui »", "Pierre et Jean."]:
        ids = fallback.encode(text)
        assert tx.data.UNK_ID not in ids
        assert fallback.decode(ids) == text
    # an unseen character is its UTF-8 bytes: the snowman is three
    assert fallback.pieces("☃") == ["▁", "<0xE2>", "<0x98>", "<0x83>"]
    # and it survives a checkpoint's dict
    assert SubwordVocab.from_dict(fallback.to_dict()) == fallback


def test_one_vocabulary_for_both_languages_is_learned_from_both():
    pairs = [(f"Tom a gagné la course {i} .", f"Tom won the race {i} .") for i in range(40)]
    corpus = types.SimpleNamespace(train=pairs, valid=pairs[:2], test=pairs[:2])  # what it reads of a corpus
    src, tgt = tx.data.subword_vocabs(corpus, vocab_size=60, shared=True)
    assert src is tgt
    assert "▁gagné" in src and "▁won" in src and "▁Tom" in src
    assert tx.data.UNK_ID not in src.encode("Jérôme ☃")  # byte fallback
    separate = tx.data.subword_vocabs(corpus, vocab_size=60)
    assert separate[0] is not separate[1] and "▁won" not in separate[0]


def test_white_space_is_normalised_the_same_way_on_both_sides(vocab):
    text = "  Who   won?\t"
    assert vocab.decode(vocab.encode(text)) == vocab.normalise(text) == "Who won?"


def test_decode_cuts_at_eos_and_drops_padding(vocab):
    ids = vocab.encode("Who won?") + [0, 0]
    assert vocab.decode(ids) == "Who won?"
    assert vocab.decode(torch.tensor(ids + vocab.encode("Tom"))) == "Who won?"


def test_dict_round_trip_is_identical_and_json(vocab):
    d = vocab.to_dict()
    again = SubwordVocab.from_dict(json.loads(json.dumps(d)))
    assert again == vocab and again.encode("I know who won.") == vocab.encode("I know who won.")
    assert tx.data.vocab_from_dict(d) == vocab
    assert SubwordVocab.train(ENGLISH[:3], vocab_size=40, min_frequency=1) != vocab


def test_checkpoint_stores_and_loads_the_subword_vocabularies(vocab, tmp_path):
    model = tiny_model(src_vocab_size=len(vocab), tgt_vocab_size=len(vocab))
    path = tx.checkpoint.save(tmp_path / "m.safetensors", model, vocab, vocab)
    ck = tx.checkpoint.load(path)
    assert isinstance(ck.tgt_vocab, SubwordVocab) and ck.tgt_vocab == vocab
    assert b"pickle" not in path.read_bytes()[:64]
    meta = tx.checkpoint.read_metadata(path)
    assert meta["src_vocab"]["kind"] == "bpe"


def test_bad_input_is_a_clear_error(vocab):
    with pytest.raises(TypeError, match="list of strings"):
        SubwordVocab.train("Who won?")
    with pytest.raises(ValueError, match="non-empty"):
        SubwordVocab.train([])
    with pytest.raises(ValueError, match="vocab_size"):
        SubwordVocab.train(ENGLISH, vocab_size=2)
    with pytest.raises(TypeError, match="text must be a str"):
        vocab.encode(3)
    with pytest.raises(ValueError, match="out of range"):
        vocab.decode([len(vocab)])
    with pytest.raises(ValueError, match="not a tokenizers JSON"):
        SubwordVocab("{}")
    with pytest.raises(ValueError, match="kind"):
        SubwordVocab.from_dict({"itos": ["a"]})


def test_a_model_of_another_size_is_refused(vocab):
    model = tiny_model(src_vocab_size=len(vocab) + 1, tgt_vocab_size=len(vocab))
    with pytest.raises(ValueError, match="src_vocab has"):
        tx.evaluate.translate(model, ["Who won?"], vocab, vocab)


FRENCH = ["Le chat chante.", "Les chats chantent encore.", "Nous chantons, ils dansent !", "Elle chantait hier.",
          "Tu manges une pomme ?", "Ils mangent des pommes.", "Le chaton mange."] * 3


def test_merges_by_hand_are_the_merges_tokenizers_learns():
    library = SubwordVocab.train(FRENCH, vocab_size=120, min_frequency=1).to_dict()["tokenizer"]["model"]["merges"]
    library = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in library]
    words = tx.subwords.split_words(FRENCH)
    assert words[("▁", "c", "h", "a", "t")] == 3 and ("!",) in words  # words cut at spaces and punctuation
    assert len(library) > 20 and tx.subwords.learn_merges(words, len(library)) == library


def test_one_merge_joins_every_occurrence_of_the_pair():
    words = {("▁", "l", "e", "s"): 2, ("▁", "e", "s", "e", "s"): 1}
    pairs = tx.subwords.count_pairs(words)
    assert pairs[("e", "s")] == 4 and pairs[("▁", "l")] == 2 and pairs[("s", "e")] == 1
    assert tx.subwords.merge_pair(words, ("e", "s")) == {("▁", "l", "es"): 2, ("▁", "es", "es"): 1}
    assert tx.subwords.merge_pair({("a", "a", "a"): 1}, ("a", "a")) == {("aa", "a"): 1}  # left to right
    with pytest.raises(TypeError, match="tuple of two pieces"):
        tx.subwords.merge_pair(words, "es")


def test_unknown_rate_counts_unk_tokens(vocab):
    words = tx.data.Vocab.build(ENGLISH)
    assert tx.subwords.unknown_rate(words, ["Who won the net?"]) == pytest.approx(1 / 5)
    assert tx.subwords.unknown_rate(vocab, ["Who won the net?"]) == 0
    with pytest.raises(TypeError, match="list of strings"):
        tx.subwords.unknown_rate(vocab, "Who won?")


def test_an_overlong_sentence_is_counted_in_pieces_not_words(vocab):
    model = tiny_model(src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), max_len=8)
    with pytest.raises(ValueError, match=r"sentence 0 has \d+ pieces.*max_len of 8"):
        tx.evaluate.translate(model, ["Who won the race? " * 3], vocab, vocab)


# ----------------------------------------------------------------------------- tidy_typed

from tx.subwords import tidy_typed  # noqa: E402


@pytest.mark.parametrize("typed, tidied", [
    ("JE SUIS EN RETARD !", "Je suis en retard !"),  # all capitals: the corpus's case
    ("ÇA VA ?", "Ça va ?"),
    ("Je suis en retard", "Je suis en retard."),  # no final mark: a full stop
    ("Il a 25 ans", "Il a 25 ans."),
    ("  Il  a\t25 ans .  ", "Il a 25 ans ."),  # runs of white space
    ("C\u2019est l\u2018heure", "C'est l'heure."),  # curly apostrophes
    ("Il a dit : \u00ab Bonjour \u00bb.", 'Il a dit : "Bonjour".'),
    ("Il a dit \u201cnon\u201d.", 'Il a dit "non".'),
    ("Je vis à Paris, en France.", "Je vis à Paris, en France."),  # the corpus's own form: unchanged
    ("Pierre et l'ONU.", "Pierre et l'ONU."),  # capitals inside a cased sentence stay
    ("e\u0301te\u0301", "été."),  # NFC
    ("", ""),
])
def test_tidy_typed_writes_a_sentence_as_the_corpus_does(typed, tidied):
    assert tidy_typed(typed) == tidied
    assert tidy_typed(tidied) == tidied  # tidying twice changes nothing


def test_tidy_typed_names_what_it_needs():
    with pytest.raises(TypeError, match="text must be a str, got bytes"):
        tidy_typed(b"Bonjour")


def test_the_translate_command_reads_capitals_as_the_sentence(capsys):
    from tx.translate import main

    shouted, written = main([str(tx.checkpoint.REAL_MODEL), "JE SUIS EN RETARD !", "Je suis en retard !"])
    assert shouted == written
