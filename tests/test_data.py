"""Tests for tx.data: tokens, vocabulary, corpora and their splits, file reading and batching."""

from __future__ import annotations

import json
import unicodedata

import pytest
import torch

from tx.data import (
    BOS_ID, EOS_ID, PAD_ID, SPECIALS, UNK_ID, Batch, Vocab, batches, copy_pairs, detokenize,
    encode_pairs, load_corpus, load_parallel_tsv, pad, tokenize,
)
from tx.grammar import PHRASES, RUNNING_EXAMPLES


# ----------------------------------------------------------------------------- tokens


@pytest.mark.parametrize("text, tokens", [
    ("j'aime", ["j'", "aime"]),
    ("l'homme", ["l'", "homme"]),
    ("J’aime l’école", ["j'", "aime", "l'", "école"]),  # typographic apostrophe
    ("merci !", ["merci", "!"]),
    ("Bonjour, ça va?", ["bonjour", ",", "ça", "va", "?"]),
    ("étudiant être", ["étudiant", "être"]),
    ("il a 12 chats", ["il", "a", "12", "chats"]),
    ("", []),
])
def test_tokenize_examples(text: str, tokens: list[str]) -> None:
    assert tokenize(text) == tokens


def test_tokenize_keeps_a_decomposed_accent_inside_its_word() -> None:
    decomposed = unicodedata.normalize("NFD", "étudiant")
    assert len(decomposed) == len("étudiant") + 1  # e + combining accent
    assert tokenize(decomposed) == ["étudiant"]


def test_detokenize_glues_elisions_and_punctuation() -> None:
    tokens = ["j'", "aime", "le", "café", ",", "merci", "!"]
    assert detokenize(tokens) == "j'aime le café, merci!"


def test_detokenize_inverts_tokenize_on_every_grammar_sentence(grammar: dict[str, str]) -> None:
    broken = [s for pair in grammar.items() for s in pair if detokenize(tokenize(s)) != s]
    assert broken == []
    assert "j'aime les chats" in grammar  # the round trip did meet elisions


# ----------------------------------------------------------------------------- vocabulary


def test_vocab_build_orders_by_frequency_then_alphabet() -> None:
    vocab = Vocab.build(["b a a", "d b a", "c"])
    assert vocab.itos == [*SPECIALS, "a", "b", "c", "d"]  # a:3, b:2, then c, d tied at 1 (A-Z)
    assert [vocab.pad_id, vocab.bos_id, vocab.eos_id, vocab.unk_id] == [0, 1, 2, 3]
    assert vocab.stoi["a"] == 4 and len(vocab) == 8
    assert "c" in vocab and "z" not in vocab
    assert Vocab.build(["b a a", "d b a", "c"], min_freq=2).itos == [*SPECIALS, "a", "b"]


def test_vocab_rejects_a_list_without_the_specials_first() -> None:
    with pytest.raises(ValueError, match="specials"):
        Vocab(["le", "chat"])
    with pytest.raises(ValueError, match="specials"):
        Vocab(["<bos>", "<pad>", "<eos>", "<unk>", "chat"])
    with pytest.raises(ValueError, match="repeated"):
        Vocab([*SPECIALS, "chat", "chat"])
    with pytest.raises(ValueError, match="min_freq"):
        Vocab.build(["a"], min_freq=0)


def test_encode_maps_unknown_words_to_unk_and_frames_with_bos_eos() -> None:
    vocab = Vocab.build(["le chat noir"])
    chat, noir = vocab.stoi["chat"], vocab.stoi["noir"]
    assert vocab.encode("le chien noir") == [BOS_ID, vocab.stoi["le"], UNK_ID, noir, EOS_ID]
    assert vocab.encode("Chat noir", add_bos=False, add_eos=False) == [chat, noir]


def test_decode_stops_at_eos_and_strips_specials() -> None:
    vocab = Vocab.build(["j'aime le chat"])
    ids = [BOS_ID, *vocab.encode("j'aime le chat", False, False), EOS_ID, vocab.stoi["le"], PAD_ID]
    assert vocab.decode(ids) == "j'aime le chat"
    assert vocab.decode(torch.tensor(ids)) == "j'aime le chat"
    assert vocab.decode(ids, strip_specials=False) == "<bos> j'aime le chat <eos> le <pad>"
    assert vocab.tokens(ids[:3]) == ["<bos>", "j'", "aime"]
    assert vocab.decode([UNK_ID, EOS_ID]) == "<unk>"


def test_decode_rejects_bad_ids() -> None:
    vocab = Vocab.build(["a b"])
    with pytest.raises(ValueError, match="out of range"):
        vocab.decode([len(vocab)])
    with pytest.raises(ValueError, match="1-D"):
        vocab.decode(torch.zeros(2, 3, dtype=torch.long))


def test_vocab_survives_a_json_round_trip() -> None:
    vocab = Vocab.build(["le chat noir", "la maison blanche"])
    restored = Vocab.from_dict(json.loads(json.dumps(vocab.to_dict())))
    assert restored == vocab and restored.stoi == vocab.stoi
    assert restored != Vocab.build(["le chat noir"])


# ----------------------------------------------------------------------------- corpora


def test_load_corpus_splits_are_disjoint_and_complete() -> None:
    corpus = load_corpus(seed=0, n_pairs=4000, valid_fraction=0.1, test_fraction=0.05)
    train, valid, test = ({fr for fr, _ in split} for split in (corpus.train, corpus.valid,
                                                                 corpus.test))
    assert (len(corpus.valid), len(corpus.test)) == (400, 200)
    assert len(set(corpus.train)) == 3400
    assert not (train & valid or train & test or valid & test)
    assert {fr for fr, _ in RUNNING_EXAMPLES} <= train
    assert corpus.src_vocab == Vocab.build(fr for fr, _ in corpus.train)
    assert corpus.tgt_vocab == Vocab.build(en for _, en in corpus.train)
    assert load_corpus(seed=0, n_pairs=4000, valid_fraction=0.1, test_fraction=0.05) == corpus
    assert load_corpus(seed=1, n_pairs=4000).valid != corpus.valid


def test_default_corpus_vocabularies_are_small_and_cover_the_test_split() -> None:
    corpus = load_corpus()
    assert len(set(corpus.train)) + len(corpus.valid) + len(corpus.test) == 12000
    assert len(corpus.src_vocab) < 300 and len(corpus.tgt_vocab) < 300
    unknown = [w for fr, _ in corpus.test for w in tokenize(fr) if w not in corpus.src_vocab]
    assert len(unknown) <= 5


def test_set_phrases_stay_in_train_and_are_repeated() -> None:
    corpus = load_corpus(phrase_repeats=20)
    held_out = {fr for fr, _ in corpus.valid + corpus.test}
    assert not held_out & {fr for fr, _ in PHRASES}
    assert all(corpus.train.count(pair) == 20 for pair in PHRASES)
    assert corpus.train.count(("je suis étudiant", "i am a student")) == 1
    assert load_corpus(phrase_repeats=1).train.count(("merci", "thanks")) == 1
    with pytest.raises(ValueError, match="phrase_repeats"):
        load_corpus(phrase_repeats=0)


def test_load_corpus_rejects_bad_fractions() -> None:
    with pytest.raises(ValueError, match="fraction"):
        load_corpus(n_pairs=100, valid_fraction=0.6, test_fraction=0.5)


def test_load_parallel_tsv_reads_english_tab_french(tmp_path) -> None:
    path = tmp_path / "fra.txt"
    path.write_text("Hello.\tBonjour.\tCC-BY 2.0 (France)\n\n"
                    "I am a student.\tJe suis étudiant.\tCC-BY\n", encoding="utf-8")
    assert load_parallel_tsv(path) == [("Bonjour.", "Hello."),
                                       ("Je suis étudiant.", "I am a student.")]
    assert load_parallel_tsv(str(path), src_column=0, tgt_column=1)[0] == ("Hello.", "Bonjour.")


def test_load_parallel_tsv_names_the_bad_line(tmp_path) -> None:
    path = tmp_path / "broken.txt"
    path.write_text("Hello.\tBonjour.\n\nThanks. Merci.\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken\.txt, line 3: expected at least two tab"):
        load_parallel_tsv(path)
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        load_parallel_tsv(tmp_path / "missing.txt")


def test_copy_pairs_copies() -> None:
    pairs = copy_pairs(200, vocab_words=5, min_len=2, max_len=4, seed=1)
    assert len(pairs) == 200 and all(src == tgt for src, tgt in pairs)
    assert {len(src.split()) for src, _ in pairs} == {2, 3, 4}
    assert {w for src, _ in pairs for w in src.split()} == {"w0", "w1", "w2", "w3", "w4"}
    assert copy_pairs(200, 5, 2, 4, seed=1) == pairs != copy_pairs(200, 5, 2, 4, seed=2)
    with pytest.raises(ValueError, match="min_len"):
        copy_pairs(3, min_len=5, max_len=4)


# ----------------------------------------------------------------------------- batches


@pytest.fixture(scope="module")
def small_task():
    """Seven pairs of different lengths and their vocabularies."""
    pairs = [("le chat noir", "the black cat"), ("merci", "thanks"),
             ("je ne vois pas le chat", "i do not see the cat"), ("oui", "yes"),
             ("il est médecin", "he is a doctor"), ("nous aimons le café", "we like coffee"),
             ("la maison blanche", "the white house")]
    return pairs, Vocab.build(fr for fr, _ in pairs), Vocab.build(en for _, en in pairs)


def test_pad_pads_on_the_right() -> None:
    out = pad([[5, 6, 7], [8]], pad_id=0)
    assert out.dtype == torch.long
    assert out.tolist() == [[5, 6, 7], [8, 0, 0]]
    with pytest.raises(ValueError, match="at least one"):
        pad([])


def test_encode_pairs_frames_source_and_target(small_task) -> None:
    pairs, src_vocab, tgt_vocab = small_task
    (src, tgt), = encode_pairs(pairs[:1], src_vocab, tgt_vocab)
    assert src == [*src_vocab.encode("le chat noir", False, False), EOS_ID]
    assert tgt == [BOS_ID, *tgt_vocab.encode("the black cat", False, False), EOS_ID]


def test_batches_shapes_padding_and_framing(small_task) -> None:
    pairs, src_vocab, tgt_vocab = small_task
    out = list(batches(pairs, src_vocab, tgt_vocab, batch_size=3))
    assert [b.src.shape[0] for b in out] == [3, 3, 1]
    first = out[0]
    assert first.src.shape == (3, 7) and first.tgt.shape == (3, 8)  # longest: 6 words + specials
    assert first.src.dtype == first.tgt.dtype == torch.long
    assert (first.tgt[:, 0] == BOS_ID).all()
    for batch in out:
        for ids in (batch.src, batch.tgt):
            assert ((ids == EOS_ID).sum(dim=1) == 1).all()
            # Padding only on the right: once a row is PAD it stays PAD.
            is_pad = (ids == PAD_ID).int()
            assert (is_pad.cummax(dim=1).values == is_pad).all()
        assert not (batch.src == BOS_ID).any()
    assert first.src[1].tolist() == [src_vocab.stoi["merci"], EOS_ID] + [PAD_ID] * 5
    assert [tgt_vocab.decode(row) for b in out for row in b.tgt] == [en for _, en in pairs]


def test_batch_views_and_token_count(small_task) -> None:
    pairs, src_vocab, tgt_vocab = small_task
    batch = next(batches(pairs, src_vocab, tgt_vocab, batch_size=len(pairs)))
    assert torch.equal(batch.tgt_in, batch.tgt[:, :-1])
    assert torch.equal(batch.tgt_out, batch.tgt[:, 1:])
    assert batch.n_tokens == sum(len(en.split()) + 1 for _, en in pairs)  # words + EOS
    moved = batch.to("cpu")
    assert isinstance(moved, Batch) and torch.equal(moved.src, batch.src)


def test_batches_shuffle_is_seeded(small_task) -> None:
    pairs, src_vocab, tgt_vocab = small_task

    def order(seed: int) -> list[str]:
        return [tgt_vocab.decode(row) for b in batches(pairs, src_vocab, tgt_vocab, 2,
                                                        shuffle=True, seed=seed) for row in b.tgt]

    assert order(0) == order(0)
    assert sorted(order(0)) == sorted(en for _, en in pairs)
    assert any(order(seed) != order(0) for seed in (1, 2, 3))
    assert order(0) != [en for _, en in pairs] or order(1) != [en for _, en in pairs]


def test_batches_drop_last(small_task) -> None:
    pairs, src_vocab, tgt_vocab = small_task
    out = list(batches(pairs, src_vocab, tgt_vocab, batch_size=3, drop_last=True))
    assert [b.src.shape[0] for b in out] == [3, 3]


def test_batches_reject_bad_input_when_called(small_task) -> None:
    _, src_vocab, tgt_vocab = small_task
    with pytest.raises(ValueError, match="no sentence pairs"):
        batches([], src_vocab, tgt_vocab, batch_size=4)  # no next(): fails at the call
    with pytest.raises(ValueError, match="batch_size"):
        batches([("oui", "yes")], src_vocab, tgt_vocab, batch_size=0)


def test_bucketed_batches_hold_every_pair_once_with_less_padding():
    import random

    rng = random.Random(0)
    pairs = [(" ".join(["a"] * n), " ".join(["b"] * n)) for n in (rng.randint(1, 30) for _ in range(400))]
    vocab = Vocab.build(["a b"])
    plain = list(batches(pairs, vocab, vocab, 16, shuffle=True, seed=3))
    bucketed = list(batches(pairs, vocab, vocab, 16, shuffle=True, seed=3, bucket=10))
    tokens = lambda bs: sorted(tuple(row[row != 0].tolist()) for b in bs for row in b.src)  # noqa: E731
    assert tokens(bucketed) == tokens(plain) and len(bucketed) == len(plain) == 25
    assert sum(b.src.numel() for b in bucketed) < 0.7 * sum(b.src.numel() for b in plain)
    again = list(batches(pairs, vocab, vocab, 16, shuffle=True, seed=3, bucket=10))
    assert all(torch.equal(a.src, b.src) for a, b in zip(bucketed, again))  # seeded: a resumed run sees the same
