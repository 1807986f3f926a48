"""Test sentences that nearly repeat a training sentence, and how to leave them out.

Tatoeba holds many sentences that differ from another only by a name, a pronoun, a number,
case or punctuation ("Tom est parti." and "Marie est partie ?"), so a random held-out split
shares near-twins with its training split, and a score on it flatters the model. Chapter 12
measures its real model with and without them (``bench/real_corpus.py --measure``).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence

from .tokens import Pair

__all__ = ["PRONOUNS", "proper_names", "normalised_form", "near_twins", "drop_near_duplicates"]

# French personal pronouns, subject, object and stressed, elided forms included (j', m', t',
# s'; "t" is also the euphonic t of "a-t-il"). Le, la, les and l' are left out: they are
# articles far more often than pronouns, and "le chat" and "la chatte" are not one sentence.
PRONOUNS = frozenset(
    "je j tu il elle on nous vous ils elles me m te t se s moi toi lui eux leur soi".split())

# Words, numbers, and the marks that end a sentence (where the next capital is no name).
_WORD_OR_END = re.compile(r"\d+|\w+|[.!?\u2026]")


def _plain(word: str) -> str:
    """``word`` lowercased, accents and cedillas dropped: "Élève" -> "eleve"."""
    return "".join(c for c in unicodedata.normalize("NFD", word.lower()) if unicodedata.category(c) != "Mn")


def proper_names(sentences: Iterable[str]) -> set[str]:
    """The words (plain: lowercased, unaccented) that ``sentences`` capitalise inside a sentence
    more often than they write them in lowercase: "Tom" in "Je suis Tom.", "Marie" though
    "il se marie" exists too.

    A sentence-initial capital says nothing of a word; this is how :func:`normalised_form`
    knows that the "Tom" of "Tom est parti." is a name.
    """
    capitalised, lowercase = Counter(), Counter()
    for sentence in sentences:
        if not any(c.islower() for c in sentence):  # typed in capitals: its case tells nothing
            continue
        start = True
        for word in _WORD_OR_END.findall(sentence):
            if word in ".!?\u2026":
                start = True
                continue
            if word[0].islower():
                lowercase[_plain(word)] += 1
            elif word[0].isupper() and not start:
                capitalised[_plain(word)] += 1
            start = False
    return {word for word, n in capitalised.items() if n > lowercase[word]}


def normalised_form(sentence: str, names: Iterable[str] = ()) -> str:
    """A French sentence as near-duplicate detection compares it.

    Lowercased, accents and punctuation dropped, words joined by single spaces, and three
    kinds of word replaced by a placeholder: a number (a run of digits) by NUM, a personal
    pronoun of PRONOUNS by PRON, and a name by NAME. A name is a capitalised word that does
    not start the sentence, or any word of ``names`` (plain forms, as :func:`proper_names`
    returns them), which catches a name at the start; in a sentence typed all in capitals
    only ``names`` count. "Tom est là !" and "Marie est là." are both "NAME est la" when
    both names are known; "Il a 3 chats." and "Elle a 12 chats." both "PRON a NUM chats".
    Nothing is lemmatised: "Tom est parti." and "Marie est partie." stay different.
    """
    names = set(names)
    cased = any(c.islower() for c in sentence)  # in capitals throughout, a capital means nothing
    out, start = [], True
    for word in _WORD_OR_END.findall(sentence):
        if word in ".!?\u2026":
            start = True
            continue
        plain = _plain(word)
        if word.isdigit():
            out.append("NUM")
        elif plain in PRONOUNS:
            out.append("PRON")
        elif word[0].isupper() and ((cased and not start) or plain in names):
            out.append("NAME")
        else:
            out.append(plain)
        start = False
    return " ".join(out)


def near_twins(train: Sequence[Pair], test: Sequence[Pair], names: Iterable[str] | None = None) -> dict[str, str]:
    """Each ``test`` French sentence whose :func:`normalised_form` a ``train`` French sentence
    has, mapped to such a training sentence (the last of them in ``train``).

    ``names`` (plain forms) default to :func:`proper_names` of the French of both lists.
    """
    if names is None:
        names = proper_names(fr for fr, _ in [*train, *test])
    names = set(names)
    forms = {normalised_form(fr, names): fr for fr, _ in train}
    twins = {}
    for fr, _ in test:
        twin = forms.get(normalised_form(fr, names))
        if twin is not None:
            twins[fr] = twin
    return twins


def drop_near_duplicates(train: Sequence[Pair], test: Sequence[Pair]) -> tuple[list[Pair], int]:
    """The ``test`` pairs whose French has a normalised form no ``train`` French has, and how
    many pairs were dropped.

    Names are learned with :func:`proper_names` from the French of both lists; a test
    sentence is dropped when its :func:`normalised_form` equals a training sentence's
    (:func:`near_twins`).
    """
    twins = near_twins(train, test)
    kept = [pair for pair in test if pair[0] not in twins]
    return kept, len(test) - len(kept)
