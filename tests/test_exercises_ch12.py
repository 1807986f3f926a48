"""Chapter 12's checkers accept the right answers and reject the usual mistakes with a hint."""

from __future__ import annotations

from collections import Counter

import pytest

from tx.exercises import CheckFailed, ch12


def count_pairs(words):
    pairs = Counter()
    for pieces, n in words.items():
        for pair in zip(pieces, pieces[1:]):
            pairs[pair] += n
    return pairs


def merge_pair(words, pair):
    merged = Counter()
    for pieces, n in words.items():
        out, i = [], 0
        while i < len(pieces):
            if pieces[i : i + 2] == pair:
                out.append(pieces[i] + pieces[i + 1])
                i += 2
            else:
                out.append(pieces[i])
                i += 1
        merged[tuple(out)] += n
    return dict(merged)


def unknown_rate(vocab, sentences):
    ids = [i for s in sentences for i in vocab.encode(s, add_bos=False, add_eos=False)]
    return ids.count(vocab.unk_id) / len(ids)


def test_right_answers_pass(capsys):
    ch12.check_count_pairs(count_pairs)
    ch12.check_merge_pair(merge_pair)
    ch12.check_unknown_rate(unknown_rate)
    assert capsys.readouterr().out.count("Correct:") == 3


# ----------------------------------------------------------------- count_pairs


def pairs_not_weighted(words):
    return Counter(pair for pieces in words for pair in zip(pieces, pieces[1:]))


def pairs_wrapping_around(words):
    pairs = count_pairs(words)
    for pieces, n in words.items():
        pairs[(pieces[-1], pieces[0])] += n
    return pairs


def pairs_missing_the_last(words):
    pairs = Counter()
    for pieces, n in words.items():
        for i in range(len(pieces) - 2):
            pairs[(pieces[i], pieces[i + 1])] += n
    return pairs


def pairs_once_per_word(words):
    pairs = Counter()
    for pieces, n in words.items():
        for pair in set(zip(pieces, pieces[1:])):
            pairs[pair] += n
    return pairs


@pytest.mark.parametrize("wrong, hint", [
    (pairs_not_weighted, "Multiply by each word's count"),
    (pairs_once_per_word, "every time it occurs"),
    (pairs_wrapping_around, "Only neighbours count"),
    (pairs_missing_the_last, "the last pair included"),
])
def test_count_pairs_mistakes_get_a_hint(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        ch12.check_count_pairs(wrong)


# ----------------------------------------------------------------- merge_pair


def merge_overwriting_counts(words, pair):
    # A dict comprehension: two words that become the same tuple keep only the last count.
    return {next(iter(merge_pair({w: n}, pair))): n for w, n in words.items()}


def merge_first_only(words, pair):
    merged = {}
    for pieces, n in words.items():
        pieces = list(pieces)
        for i in range(len(pieces) - 1):
            if (pieces[i], pieces[i + 1]) == pair:
                pieces[i : i + 2] = [pair[0] + pair[1]]
                break
        merged[tuple(pieces)] = merged.get(tuple(pieces), 0) + n
    return merged


def merge_right_to_left(words, pair):
    reverse = merge_pair({tuple(reversed(w)): n for w, n in words.items()}, (pair[1], pair[0]))
    return {tuple(p[::-1] for p in reversed(w)): n for w, n in reverse.items()}


def merge_dropping_other_words(words, pair):
    return {w: n for w, n in merge_pair(words, pair).items() if pair[0] + pair[1] in w}


@pytest.mark.parametrize("wrong, hint", [
    (merge_overwriting_counts, "add up the counts of words that become the same tuple"),
    (merge_first_only, "Walk the pieces left to right"),
    (merge_right_to_left, "Walk the pieces left to right"),
    (merge_dropping_other_words, "Keep every word"),
])
def test_merge_pair_mistakes_get_a_hint(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        ch12.check_merge_pair(wrong)


def test_calling_tx_s_own_functions_is_no_answer():
    import tx.subwords

    with pytest.raises(CheckFailed, match="calls tx.subwords.count_pairs"):
        ch12.check_count_pairs(lambda words: tx.subwords.count_pairs(words))
    with pytest.raises(CheckFailed, match="calls tx.subwords.merge_pair"):
        ch12.check_merge_pair(lambda words, pair: tx.subwords.merge_pair(words, pair))


# ----------------------------------------------------------------- unknown_rate


def rate_with_specials(vocab, sentences):
    ids = [i for s in sentences for i in vocab.encode(s)]
    return ids.count(vocab.unk_id) / len(ids)


def rate_of_sentences(vocab, sentences):
    return sum(vocab.unk_id in vocab.encode(s) for s in sentences) / len(sentences)


def rate_averaged_per_sentence(vocab, sentences):
    return sum(unknown_rate(vocab, [s]) for s in sentences) / len(sentences)


def rate_of_distinct_words(vocab, sentences):
    ids = {i for s in sentences for i in vocab.encode(s, add_bos=False, add_eos=False)}
    return (vocab.unk_id in ids) / len(ids)


@pytest.mark.parametrize("wrong", [rate_with_specials, rate_of_sentences, rate_averaged_per_sentence,
                                   rate_of_distinct_words])
def test_unknown_rate_mistakes_get_a_hint(wrong):
    with pytest.raises(CheckFailed, match="Count tokens, not sentences"):
        ch12.check_unknown_rate(wrong)
