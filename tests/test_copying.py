"""tx.copying: training pairs that teach copying names and numbers."""

import pytest

from tx.copying import shared_words, with_copies

PAIRS = [
    ("Tom a 25 ans.", "Tom is 25."),
    ("Je vis à Lyon.", "I live in Lyon."),
    ("Bonjour.", "Hello."),
    ("Zoé a 3 chats.", "Zoé has 3 cats."),
    ("Je m'appelle Jean.", "My name is John."),  # translated, not copied: nothing shared
]


def test_shared_words_are_numbers_and_names_written_the_same_on_both_sides():
    assert shared_words(PAIRS[0]) == ["Tom", "25"]
    assert shared_words(PAIRS[3]) == ["Zoé", "3"]  # accented capitals count
    assert shared_words(PAIRS[2]) == [] and shared_words(PAIRS[4]) == []
    # "Je" and "I" open the sentences but are not the same word
    assert shared_words(("Je suis Tom.", "I am Tom.")) == ["Tom"]


def test_each_copy_swaps_the_shared_words_on_both_sides_alike():
    out = with_copies(PAIRS, copies=3, seed=1)
    assert out[: len(PAIRS)] == PAIRS  # the corpus first, unchanged
    new = out[len(PAIRS):]
    assert len(new) == 3 * 3  # three pairs share a word, three copies each
    for french, english in new:
        words = shared_words((french, english))
        assert words, (french, english)  # what was swapped in is still shared
        assert not {"Tom", "Lyon", "Zoé"} & set(words)
    numbers = [w for pair in new for w in shared_words(pair) if w.isdigit()]
    assert len(set(numbers)) > 1 and all(1 <= len(n) <= 4 for n in numbers)


def test_pairs_with_a_number_can_get_more_copies():
    out = with_copies(PAIRS, copies=1, seed=0, number_copies=5)
    new = out[len(PAIRS):]
    # "Tom a 25 ans." and "Zoé a 3 chats." hold numbers: five copies each; "Je vis à Lyon.": one
    assert len(new) == 5 + 1 + 5
    assert sum(any(w.isdigit() for w in shared_words(pair)) for pair in new) == 10
    only_numbers = with_copies(PAIRS, copies=0, seed=0, number_copies=2)[len(PAIRS):]
    assert len(only_numbers) == 4 and all(any(w.isdigit() for w in shared_words(p)) for p in only_numbers)
    with pytest.raises(ValueError, match="copies must be at least 0"):
        with_copies(PAIRS, 1, number_copies=-1)


def test_made_up_names_are_varied_and_cut_like_real_ones():
    import random
    from tx.copying import _replacement
    rng = random.Random(0)
    names = [_replacement("Tom", rng) for _ in range(2000)]
    assert all(len(n) >= 3 and n[0].isupper() and n[1:].islower() for n in names)
    assert len(set(names)) > 1800  # hardly a name twice
    letters = set("".join(names).lower())
    assert {"é", "y", "w", "x"} <= letters  # beyond consonant-vowel syllables
    assert any(n.endswith(("n", "r", "lle")) for n in names)  # names may end in a consonant


def test_copies_are_seeded_and_can_be_filtered():
    assert with_copies(PAIRS, 2, seed=0) == with_copies(PAIRS, 2, seed=0) != with_copies(PAIRS, 2, seed=1)
    short = with_copies(PAIRS, 2, seed=0, fits=lambda pair: len(pair[0]) < 14)
    assert all(len(fr) < 14 for fr, _ in short[len(PAIRS):])
    assert with_copies(PAIRS, 0) == PAIRS
    with pytest.raises(ValueError, match="copies must be at least 0"):
        with_copies(PAIRS, -1)


def test_fits_model_counts_pieces_and_one_special_on_each_side():
    from tx.copying import fits_model
    from tx.data import Vocab

    vocab = Vocab.build(["a b c d", "e f"])
    fits = fits_model(vocab, vocab, max_len=4)  # three words and one special fit
    assert fits(("a b c", "e f")) and not fits(("a b c d", "e"))
    assert not fits(("a", "e f a b"))  # either side may be too long
    # "tom a 25 ans ." is five tokens: its copies fit six positions, not five
    pair = ("Tom a 25 ans.", "Tom is 25.")
    assert len(with_copies([pair], 3, fits=fits_model(vocab, vocab, 6))) == 4
    assert with_copies([pair], 3, fits=fits_model(vocab, vocab, 5)) == [pair]
