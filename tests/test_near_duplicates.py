"""Tests for tx.near_duplicates: a sentence's normalised form, names, and the split without near-twins."""

from __future__ import annotations

import pytest

from tx.near_duplicates import drop_near_duplicates, near_twins, normalised_form, proper_names


@pytest.mark.parametrize("sentence, names, form", [
    ("Il a 3 chats.", (), "PRON a NUM chats"),
    ("Elle a 12 chats !", (), "PRON a NUM chats"),
    ("J'ai vu Paul à Paris.", (), "PRON ai vu NAME a NAME"),  # capitalised inside: a name
    ("Marie est là.", (), "marie est la"),  # at the start a capital proves nothing...
    ("Marie est là.", {"marie"}, "NAME est la"),  # ...unless the corpus names her
    ("Tom dort. Il rêve.", (), "tom dort PRON reve"),  # "Il" starts the second sentence
    ("Le chat et la chatte.", (), "le chat et la chatte"),  # articles are not pronouns
    ("Est-il  là\u202f?", (), "est PRON la"),  # hyphen, double and narrow no-break spaces
    ("L'ÉLÈVE ÇA", (), "l eleve ca"),  # all in capitals: no capital is a name...
    ("JE VOIS TOM.", {"tom"}, "PRON vois NAME"),  # ...but a known name still is
])
def test_normalised_form_examples(sentence: str, names, form: str) -> None:
    assert normalised_form(sentence, names) == form


def test_proper_names_are_capitalised_inside_sentences_more_often_than_not() -> None:
    sentences = ["Je suis Tom.", "Tom dort.", "Il se marie.", "Je vois Marie.", "Où est Marie ?",
                 "Bonjour.", "Tom est là. Bonjour !", "J'aime la Terre.", "La terre est mouillée.",
                 "Je creuse la terre.", "JE VOIS PAUL."]
    # Bonjour only ever starts a sentence; terre is lowercase more often than not; a
    # sentence in capitals tells nothing.
    assert proper_names(sentences) == {"tom", "marie"}


def test_drop_near_duplicates_keeps_only_test_sentences_unlike_any_training_one() -> None:
    train = [("Tom est parti.", "Tom left."), ("Je suis Tom.", "I am Tom."),
             ("Elle a 3 chiens.", "She has 3 dogs."), ("Viens !", "Come!"),
             ("J'attends Paul.", "I'm waiting for Paul.")]
    test = [("Paul est parti !", "Paul left!"),  # a name and a mark from "Tom est parti."
            ("Marie est partie.", "Mary left."),  # kept: "partie" is not "parti"
            ("Il a 12 chiens.", "He has 12 dogs."),  # a pronoun and a number
            ("Tom est parti en retard.", "Tom left late."),  # two more words
            ("Viens\u202f!", "Come!"),  # only the space before the mark differs
            ("Le chien dort.", "The dog is sleeping."),
            ("Léa est partie.", "Léa left.")]  # no name known: "lea est partie"
    kept, removed = drop_near_duplicates(train, test)
    assert kept == [test[1], test[3], test[5], test[6]] and removed == 3
    # each dropped sentence beside the training sentence it nearly repeats
    assert near_twins(train, test) == {"Paul est parti !": "Tom est parti.", "Il a 12 chiens.": "Elle a 3 chiens.",
                                       "Viens\u202f!": "Viens !"}
    # no names known: a capital that starts a sentence is no name, so "Paul est parti !" is new
    assert near_twins(train, test, names=()) == {"Il a 12 chiens.": "Elle a 3 chiens.", "Viens\u202f!": "Viens !"}
    assert drop_near_duplicates(train, []) == ([], 0)
    assert drop_near_duplicates([], test) == (test, 0)
