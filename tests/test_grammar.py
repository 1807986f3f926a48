"""Tests for tx.grammar: the built-in French -> English corpus is deterministic, a function, and teaches what the book needs."""

from __future__ import annotations

import re

import pytest

from tx.data import tokenize
from tx.grammar import RUNNING_EXAMPLES, generate_pairs, grammar_pairs


@pytest.fixture(scope="module")
def corpus_pairs() -> list[tuple[str, str]]:
    """The book's default corpus."""
    return generate_pairs()


def test_generate_pairs_is_deterministic_distinct_and_sized(corpus_pairs) -> None:
    assert generate_pairs(seed=0) == corpus_pairs
    assert len(corpus_pairs) == 12000
    assert len({fr for fr, _ in corpus_pairs}) == 12000
    other = generate_pairs(seed=1)
    assert other != corpus_pairs and set(other) != set(corpus_pairs)
    assert len({fr for fr, _ in generate_pairs(seed=3, n_pairs=15000)}) == 15000


def test_grammar_is_a_function_big_enough(grammar: dict[str, str]) -> None:
    pairs = grammar_pairs()
    assert len(pairs) == len(grammar) >= 15000  # each French sentence listed once
    with pytest.raises(ValueError, match="n_pairs"):
        generate_pairs(n_pairs=len(pairs) + 1)
    with pytest.raises(ValueError, match="n_pairs"):
        generate_pairs(n_pairs=2)


@pytest.mark.parametrize("seed", [0, 7])
def test_running_examples_are_always_there(seed: int) -> None:
    pairs = dict(generate_pairs(seed=seed, n_pairs=3000))
    for fr, en in RUNNING_EXAMPLES:
        assert pairs[fr] == en
    assert dict(RUNNING_EXAMPLES) == {"je suis étudiant": "i am a student", "merci": "thanks",
                                      "le chat noir": "the black cat"}


@pytest.mark.parametrize("fr, en", [
    ("la maison blanche", "the white house"),
    ("les chats noirs", "the black cats"),
    ("une pomme rouge", "a red apple"),
    ("je mange la pomme", "i eat the apple"),
    ("il mange la pomme", "he eats the apple"),
    ("nous mangeons la pomme", "we eat the apple"),
    ("ils mangent la pomme", "they eat the apple"),
    ("il est médecin", "he is a doctor"),
    ("elle est ingénieur", "she is an engineer"),
    ("nous sommes étudiants", "we are students"),
    ("elles sont étudiantes", "they are students"),
    ("j'aime les chats", "i like cats"),
    ("nous aimons le café", "we like coffee"),
    ("je ne vois pas le chat", "i do not see the cat"),
    ("il ne mange pas la pomme", "he does not eat the apple"),
    ("je ne suis pas étudiant", "i am not a student"),
    ("je n'aime pas les chats", "i do not like cats"),
    ("l'homme est fatigué", "the man is tired"),
    ("je bois de l'eau", "i drink water"),
    ("elle mange du pain", "she eats bread"),
    ("les enfants cherchent le chien", "the children look for the dog"),
    ("au revoir", "goodbye"), ("bonjour", "hello"), ("oui", "yes"), ("non", "no"),
])
def test_grammar_translates(grammar: dict[str, str], fr: str, en: str) -> None:
    assert grammar[fr] == en


def test_grammar_writes_elisions_and_a_an(grammar: dict[str, str]) -> None:
    assert "je aime les chats" not in grammar and "le homme est fatigué" not in grammar
    for fr, en in grammar.items():
        for word, nxt in zip(tokenize(fr), tokenize(fr)[1:]):
            assert not (word in ("je", "le", "la", "ne", "de") and nxt[0] in "aeiouéèêâh"), fr
        for word, nxt in zip(en.split(), en.split()[1:]):
            assert not (word == "a" and nxt[0] in "aeiou"), en
            assert not (word == "an" and nxt[0] not in "aeiou"), en


def test_adjectives_move_before_the_noun_in_english(corpus_pairs) -> None:
    ending_in_noun_noire = [(fr, en) for fr, en in corpus_pairs
                            if re.search(r"\b(la|une|l') ?\w+ noire$", fr)]
    assert len(ending_in_noun_noire) > 10
    for fr, en in ending_in_noun_noire:
        assert en.split()[-2] == "black", (fr, en)


def test_negation_is_ne_pas_in_french_and_not_in_english(corpus_pairs) -> None:
    negated = [(fr, en) for fr, en in corpus_pairs if "pas" in tokenize(fr)]
    assert len(negated) > 1000
    for fr, en in corpus_pairs:
        words = tokenize(fr)
        assert ("pas" in words) == ("not" in en.split()), (fr, en)
        assert ("pas" in words) == ("ne" in words or "n'" in words), fr


def test_verbs_agree_with_the_pronoun(corpus_pairs) -> None:
    def starting_with(*pronouns: str) -> list[tuple[str, str]]:
        return [(fr, en) for fr, en in corpus_pairs if fr.split()[0] in pronouns]

    third_singular, plural = starting_with("il", "elle"), starting_with("nous", "ils", "elles")
    assert len(third_singular) > 500 and len(plural) > 500
    assert all(en.split()[1].endswith("s") for _, en in third_singular)  # eats, is, has, does
    assert not any(en.split()[1].endswith("s") for _, en in plural)  # eat, are, have, do
    nous = [fr.split()[1] for fr, _ in starting_with("nous") if "pas" not in fr.split()]
    assert nous and all(verb.endswith("ons") or verb == "sommes" for verb in nous)


def test_aimer_drops_the_article_of_a_plural(corpus_pairs) -> None:
    def objects(verb_fr: str, verb_en: str) -> list[list[str]]:
        """English words after the verb, in sentences with a French plural "les" object."""
        return [re.split(verb_en, en)[1].split() for fr, en in corpus_pairs
                if re.search(verb_fr + " les ", fr)]

    liked, seen = (objects(r"\b(aime|aimes|aimons|aimez|aiment)", r"\blikes? "),
                   objects(r"\b(vois|voit|voyons|voyez|voient)", r"\bsees? "))
    assert len(liked) > 50 and len(seen) > 50
    assert all("the" not in words for words in liked)  # i like cats
    assert all(words[0] == "the" for words in seen)  # i see the cats


def test_sentences_are_short_lowercase_and_unpunctuated(corpus_pairs) -> None:
    lengths = [len(tokenize(s)) for pair in corpus_pairs for s in pair]
    assert 1 <= min(lengths) and max(lengths) <= 10
    assert sum(3 <= n <= 7 for n in lengths) / len(lengths) > 0.8
    assert all(s == s.lower() and s[-1].isalpha() for pair in corpus_pairs for s in pair)
