"""Words to ids and back, the book's French -> English corpus, and padded batches.

Axes: B batch, S source length (tokens + EOS), T target length (BOS + tokens + EOS),
V vocabulary size. Every id tensor is ``torch.long`` and padded on the right with PAD_ID = 0.

The corpus comes from a small grammar written below (tables of words, a few sentence
templates), so it needs no download, is the same on every machine, and is regular enough
that a small Transformer learns it in minutes on a CPU. ``load_parallel_tsv`` reads a real
corpus (the Tatoeba ``fra.txt`` layout) for readers who want one.
"""

from __future__ import annotations

import functools
import itertools
import os
import random
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import Tensor

__all__ = [
    "PAD", "BOS", "EOS", "UNK", "SPECIALS", "PAD_ID", "BOS_ID", "EOS_ID", "UNK_ID",
    "tokenize", "detokenize", "Vocab",
    "RUNNING_EXAMPLES", "grammar_pairs", "generate_pairs", "ParallelCorpus", "load_corpus", "split_corpus",
    "load_parallel_tsv", "copy_pairs",
    "Batch", "encode_pairs", "pad", "batches",
]

Pair = tuple[str, str]

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3

# ----------------------------------------------------------------------------- tokens

# An elided word keeps its apostrophe ("j'", "l'") when a letter follows; then runs of
# letters and digits; then any other visible character is a token of its own.
_TOKEN_RE = re.compile(r"[^\W\d_]+'(?=[^\W_])|[^\W_]+|\S")
# The spaces detokenize removes: after an elision, and before . , ! ? ; (tokens hold no
# spaces, and no word token starts with a quote or a mark, so these are token boundaries).
_GLUE_RE = re.compile(r"(?<=') | (?=[.,!?;])")


def tokenize(text: str) -> list[str]:
    """Split lowercased text into words, elided words ("j'", "l'") and punctuation marks."""
    # NFC so that a decomposed "é" (e + combining accent) stays one letter of one word.
    text = unicodedata.normalize("NFC", text).lower().replace("\u2019", "'")
    return _TOKEN_RE.findall(text)


def detokenize(tokens: Sequence[str]) -> str:
    """Join tokens with spaces, except after an elision ("j'") and before . , ! ? ;."""
    return _GLUE_RE.sub("", " ".join(tokens))


# ----------------------------------------------------------------------------- vocabulary


def _as_id_list(ids: Iterable[int] | Tensor) -> list[int]:
    """Turn a 1-D tensor [T] or any iterable of ints into a list of Python ints."""
    if isinstance(ids, Tensor):
        if ids.dim() != 1:
            raise ValueError(f"expected a 1-D tensor of ids [T], got shape {tuple(ids.shape)}")
        return ids.tolist()
    return [int(i) for i in ids]


class Vocab:
    """Word-level vocabulary: token strings <-> ids, the four specials always at ids 0-3."""

    pad_id, bos_id, eos_id, unk_id = PAD_ID, BOS_ID, EOS_ID, UNK_ID

    def __init__(self, itos: Sequence[str]) -> None:
        """Wrap a list of tokens (id -> token); it must start with PAD, BOS, EOS, UNK."""
        itos = list(itos)
        if tuple(itos[:4]) != SPECIALS:
            raise ValueError(
                f"a Vocab's first four tokens must be the specials {list(SPECIALS)} "
                f"(ids 0-3), got {itos[:4]}; build one with Vocab.build(sentences)"
            )
        if len(set(itos)) != len(itos):
            repeated = sorted(w for w, c in Counter(itos).items() if c > 1)
            raise ValueError(f"a Vocab lists each token once; repeated: {repeated[:10]}")
        self.itos: list[str] = itos
        self.stoi: dict[str, int] = {word: i for i, word in enumerate(itos)}

    @classmethod
    def build(cls, sentences: Iterable[str], min_freq: int = 1) -> Vocab:
        """Specials, then every word seen >= min_freq times, most frequent first, ties A-Z."""
        if min_freq < 1:
            raise ValueError(f"min_freq must be >= 1, got {min_freq}")
        counts = Counter(token for sentence in sentences for token in tokenize(sentence))
        words = [w for w, c in counts.items() if c >= min_freq]
        words.sort(key=lambda w: (-counts[w], w))  # ties alphabetical: the same ids every run
        return cls([*SPECIALS, *words])

    def __len__(self) -> int:
        """Number of tokens, specials included (V)."""
        return len(self.itos)

    def __contains__(self, word: object) -> bool:
        """Whether ``word`` has an id of its own (otherwise it encodes as UNK)."""
        return word in self.stoi

    def __eq__(self, other: object) -> bool:
        """Two vocabularies are equal when they give every token the same id."""
        return isinstance(other, Vocab) and self.itos == other.itos

    __hash__ = None  # mutable lists inside: equal-by-value objects must not be dict keys

    def __repr__(self) -> str:
        """Size and the first few ordinary words."""
        return f"Vocab({len(self)} tokens: {self.itos[4:12]}...)"

    def encode(self, text: str, add_bos: bool = True, add_eos: bool = True) -> list[int]:
        """Text -> ids [T], unknown words -> UNK_ID, optionally framed by BOS ... EOS."""
        ids = [self.stoi.get(token, UNK_ID) for token in tokenize(text)]
        return [BOS_ID] * add_bos + ids + [EOS_ID] * add_eos

    def tokens(self, ids: Iterable[int] | Tensor) -> list[str]:
        """Ids [T] -> token strings, specials kept (for the tick labels of attention plots)."""
        out = []
        for i in _as_id_list(ids):
            if not 0 <= i < len(self.itos):
                raise ValueError(f"id {i} is out of range for a vocabulary of {len(self)} tokens")
            out.append(self.itos[i])
        return out

    def decode(self, ids: Iterable[int] | Tensor, strip_specials: bool = True) -> str:
        """Ids [T] -> text, cut at the first EOS, without BOS/PAD (strip_specials=False: all)."""
        ids = _as_id_list(ids)
        if strip_specials:
            # A decoder keeps emitting after EOS while the rest of its batch finishes.
            end = ids.index(EOS_ID) if EOS_ID in ids else len(ids)
            ids = [i for i in ids[:end] if i not in (BOS_ID, PAD_ID)]
        return detokenize(self.tokens(ids))

    def to_dict(self) -> dict[str, list[str]]:
        """A JSON-safe form, to store in a checkpoint."""
        return {"itos": list(self.itos)}

    @classmethod
    def from_dict(cls, d: dict[str, list[str]]) -> Vocab:
        """Inverse of ``to_dict``."""
        return cls(d["itos"])


# ----------------------------------------------------------------------------- the grammar
# A French sentence is built as a list of tokens from the tables below; its English
# translation is built alongside it by the same choices, so the corpus is a function
# French -> English and every English word can be traced to the French words it renders.


class _Noun(NamedTuple):
    fr: str
    fr_pl: str | None  # None: a mass noun (du pain / bread), which has no plural here
    gender: str  # "m" or "f"
    en: str
    en_pl: str | None
    # animal, person, food (countable), dish (food without a plural), drink, text, thing:
    # decides which adjectives describe the noun and which verbs take it as object.
    kind: str


_NOUNS = tuple(_Noun(*row) for row in (
    ("chat", "chats", "m", "cat", "cats", "animal"),
    ("chien", "chiens", "m", "dog", "dogs", "animal"),
    ("oiseau", "oiseaux", "m", "bird", "birds", "animal"),
    ("cheval", "chevaux", "m", "horse", "horses", "animal"),
    ("souris", "souris", "f", "mouse", "mice", "animal"),
    ("vache", "vaches", "f", "cow", "cows", "animal"),
    ("lapin", "lapins", "m", "rabbit", "rabbits", "animal"),
    ("homme", "hommes", "m", "man", "men", "person"),
    ("femme", "femmes", "f", "woman", "women", "person"),
    ("enfant", "enfants", "m", "child", "children", "person"),
    ("garçon", "garçons", "m", "boy", "boys", "person"),
    ("fille", "filles", "f", "girl", "girls", "person"),
    ("ami", "amis", "m", "friend", "friends", "person"),
    ("amie", "amies", "f", "friend", "friends", "person"),
    ("pomme", "pommes", "f", "apple", "apples", "food"),
    ("orange", "oranges", "f", "orange", "oranges", "food"),
    ("banane", "bananes", "f", "banana", "bananas", "food"),
    ("tomate", "tomates", "f", "tomato", "tomatoes", "food"),
    ("gâteau", "gâteaux", "m", "cake", "cakes", "food"),
    ("pain", None, "m", "bread", None, "dish"),
    ("fromage", None, "m", "cheese", None, "dish"),
    ("soupe", None, "f", "soup", None, "dish"),
    ("riz", None, "m", "rice", None, "dish"),
    ("viande", None, "f", "meat", None, "dish"),
    ("café", None, "m", "coffee", None, "drink"),
    ("thé", None, "m", "tea", None, "drink"),
    ("lait", None, "m", "milk", None, "drink"),
    ("eau", None, "f", "water", None, "drink"),
    ("jus", None, "m", "juice", None, "drink"),
    ("livre", "livres", "m", "book", "books", "text"),
    ("lettre", "lettres", "f", "letter", "letters", "text"),
    ("journal", "journaux", "m", "newspaper", "newspapers", "text"),
    ("maison", "maisons", "f", "house", "houses", "thing"),
    ("voiture", "voitures", "f", "car", "cars", "thing"),
    ("table", "tables", "f", "table", "tables", "thing"),
    ("clé", "clés", "f", "key", "keys", "thing"),
    ("porte", "portes", "f", "door", "doors", "thing"),
    ("fleur", "fleurs", "f", "flower", "flowers", "thing"),
    ("chaise", "chaises", "f", "chair", "chairs", "thing"),
    ("sac", "sacs", "m", "bag", "bags", "thing"),
    ("stylo", "stylos", "m", "pen", "pens", "thing"),
    ("chapeau", "chapeaux", "m", "hat", "hats", "thing"),
    ("vélo", "vélos", "m", "bike", "bikes", "thing"),
    ("robe", "robes", "f", "dress", "dresses", "thing"),
))


class _Adjective(NamedTuple):
    forms: tuple[str, str, str, str]  # masculine, feminine, masculine plural, feminine plural
    en: str
    kinds: frozenset[str]  # the noun kinds it describes


# All these adjectives follow the noun in French and precede it in English.
_ADJECTIVES = tuple(_Adjective(tuple(f.split()), en, frozenset(k.split())) for f, en, k in (
    ("noir noire noirs noires", "black", "animal thing"),
    ("blanc blanche blancs blanches", "white", "animal thing"),
    ("gris grise gris grises", "grey", "animal thing"),
    ("rouge rouge rouges rouges", "red", "food thing text"),
    ("vert verte verts vertes", "green", "food thing"),
    ("bleu bleue bleus bleues", "blue", "thing text"),
    ("jaune jaune jaunes jaunes", "yellow", "food thing"),
    ("cher chère chers chères", "expensive", "thing text"),
    ("chaud chaude chauds chaudes", "hot", "dish drink"),
    ("froid froide froids froides", "cold", "dish drink"),
    ("délicieux délicieuse délicieux délicieuses", "delicious", "food dish"),
    ("rapide rapide rapides rapides", "fast", "animal"),
    ("content contente contents contentes", "happy", "animal person"),
    ("triste triste tristes tristes", "sad", "person"),
    ("fatigué fatiguée fatigués fatiguées", "tired", "animal person"),
    ("malade malade malades malades", "sick", "animal person"),
    ("occupé occupée occupés occupées", "busy", "person"),
))

# Professions: French forms as for adjectives, then English singular and plural. After
# "être" French uses the bare noun ("il est médecin"); English needs "a" ("he is a doctor").
_PROFESSIONS = tuple((tuple(f.split()), en, en_pl) for f, en, en_pl in (
    ("étudiant étudiante étudiants étudiantes", "student", "students"),
    ("médecin médecin médecins médecins", "doctor", "doctors"),
    ("professeur professeur professeurs professeurs", "teacher", "teachers"),
    ("ingénieur ingénieur ingénieurs ingénieurs", "engineer", "engineers"),
    ("avocat avocate avocats avocates", "lawyer", "lawyers"),
    ("cuisinier cuisinière cuisiniers cuisinières", "cook", "cooks"),
    ("chanteur chanteuse chanteurs chanteuses", "singer", "singers"),
    ("infirmier infirmière infirmiers infirmières", "nurse", "nurses"),
    ("acteur actrice acteurs actrices", "actor", "actors"),
    ("boulanger boulangère boulangers boulangères", "baker", "bakers"),
))


class _Verb(NamedTuple):
    forms: tuple[str, ...]  # je, tu, il/elle, nous, vous, ils/elles
    en: str  # base form ("look for")
    en_3sg: str  # he/she form ("looks for")
    objects: frozenset[str]  # noun kinds it takes as object
    animals_too: bool  # whether an animal may be its subject ("le chat mange ...")
    generic: bool  # "aimer les chats" means cats in general: English drops "the"


_VERBS = tuple(_Verb(tuple(f.split()), en, en3, frozenset(k.split()), animals, generic)
               for f, en, en3, k, animals, generic in (
    ("vois vois voit voyons voyez voient", "see", "sees",
     "animal person food dish drink text thing", True, False),
    ("mange manges mange mangeons mangez mangent", "eat", "eats", "food dish", True, False),
    ("bois bois boit buvons buvez boivent", "drink", "drinks", "drink", True, False),
    ("aime aimes aime aimons aimez aiment", "like", "likes",
     "animal food dish drink text thing", True, True),
    ("déteste détestes déteste détestons détestez détestent", "hate", "hates",
     "animal food dish drink text thing", True, True),
    ("ai as a avons avez ont", "have", "has", "animal text thing", True, False),
    ("cherche cherches cherche cherchons cherchez cherchent", "look for", "looks for",
     "animal person text thing", True, False),
    ("veux veux veut voulons voulez veulent", "want", "wants",
     "food dish drink text thing", True, False),
    ("prends prends prend prenons prenez prennent", "take", "takes",
     "food drink text thing", False, False),
    ("achète achètes achète achetons achetez achètent", "buy", "buys",
     "food dish drink text thing", False, False),
    ("lis lis lit lisons lisez lisent", "read", "reads", "text", False, False),
))
_ETRE = ("suis", "es", "est", "sommes", "êtes", "sont")
_ALL_KINDS = frozenset(noun.kind for noun in _NOUNS)

_PHRASES = (
    ("merci", "thanks"), ("merci beaucoup", "thanks a lot"), ("bonjour", "hello"),
    ("bonsoir", "good evening"), ("bonne nuit", "good night"), ("salut", "hi"),
    ("au revoir", "goodbye"), ("oui", "yes"), ("non", "no"), ("pardon", "sorry"),
    ("d'accord", "okay"), ("s'il vous plaît", "please"), ("bienvenue", "welcome"),
)

RUNNING_EXAMPLES: tuple[Pair, ...] = (
    ("je suis étudiant", "i am a student"),
    ("merci", "thanks"),
    ("le chat noir", "the black cat"),
)


class _Subject(NamedTuple):
    fr: list[str]
    en: list[str]
    slot: int  # column of the verb tables: 0 je ... 5 ils/elles
    gender: str
    plural: bool


class _NounPhrase(NamedTuple):
    noun: _Noun
    adjective: _Adjective | None
    definite: bool
    plural: bool


def _agree(forms: Sequence[str], gender: str, plural: bool) -> str:
    """Pick the masculine/feminine, singular/plural form from a 4-form table row."""
    return forms[2 * plural + (gender == "f")]


def _pronoun_subjects(agreeing: bool) -> Iterator[_Subject]:
    """je tu il elle nous vous ils elles; if agreeing, once per gender/number each may stand for."""
    table = (("je", "i", 0, "mf", (False,)), ("tu", "you", 1, "mf", (False,)),
             ("il", "he", 2, "m", (False,)), ("elle", "she", 2, "f", (False,)),
             ("nous", "we", 3, "mf", (True,)), ("vous", "you", 4, "mf", (False, True)),
             ("ils", "they", 5, "m", (True,)), ("elles", "they", 5, "f", (True,)))
    for fr, en, slot, genders, numbers in table:
        # "vous" may be one polite person or several: "vous êtes médecin / médecins".
        options = itertools.product(genders, numbers) if agreeing else [(genders[0], numbers[0])]
        for gender, plural in options:
            yield _Subject([fr], [en], slot, gender, plural)


def _noun_phrases(kinds: frozenset[str], definite_only: bool = False,
                  adjectives: bool = True) -> Iterator[_NounPhrase]:
    """Every article/number/adjective choice for the nouns of the given kinds."""
    for noun in _NOUNS:
        if noun.kind not in kinds:
            continue
        adjs = [a for a in _ADJECTIVES if noun.kind in a.kinds] if adjectives else []
        for plural in (False, True) if noun.fr_pl else (False,):
            for definite in (True,) if definite_only else (True, False):
                for adjective in (None, *adjs):
                    yield _NounPhrase(noun, adjective, definite, plural)


def _french_np(np: _NounPhrase) -> list[str]:
    """le chat noir / une pomme / des chats / de la soupe (before elision)."""
    noun, masculine = np.noun, np.noun.gender == "m"
    if np.plural:
        article = ["les" if np.definite else "des"]
    elif np.definite:
        article = ["le" if masculine else "la"]
    elif noun.fr_pl is None:  # partitive: "de le" becomes "du" in _french()
        article = ["de", "le" if masculine else "la"]
    else:
        article = ["un" if masculine else "une"]
    adjective = [_agree(np.adjective.forms, noun.gender, np.plural)] if np.adjective else []
    return [*article, noun.fr_pl if np.plural else noun.fr, *adjective]


def _english_np(np: _NounPhrase, generic: bool = False) -> list[str]:
    """the black cat / an apple / cats / soup: plurals and mass nouns take no "a"."""
    bare = np.plural or np.noun.fr_pl is None
    if np.definite and not (generic and bare):
        article = ["the"]
    else:
        article = [] if bare else ["a"]
    adjective = [np.adjective.en] if np.adjective else []
    return [*article, *adjective, np.noun.en_pl if np.plural else np.noun.en]


def _noun_subject(np: _NounPhrase) -> _Subject:
    """A noun phrase as the subject: third person, its own gender and number."""
    return _Subject(_french_np(np), _english_np(np), 5 if np.plural else 2,
                    np.noun.gender, np.plural)


def _starts_with_vowel(word: str, vowels: str) -> bool:
    """Whether ``word`` begins with one of ``vowels``."""
    return word[:1] in vowels


_ELIDING = ("je", "le", "la", "ne", "de")


def _french(tokens: list[str]) -> str:
    """Apply elision (je aime -> j'aime, le homme -> l'homme) and de le -> du, then join."""
    out = list(tokens)
    for i in range(len(out) - 1):
        # No noun here starts with an aspirated h, so every h elides like a vowel.
        if out[i] in _ELIDING and _starts_with_vowel(out[i + 1], "aeiouéèêâh"):
            out[i] = out[i][0] + "'"
    for i in range(len(out) - 1):
        if out[i] == "de" and out[i + 1] == "le":
            out[i : i + 2] = ["du"]
    return detokenize(out)


def _english(tokens: list[str]) -> str:
    """Write "a" as "an" before a vowel (an apple, an engineer), then join."""
    out = ["an" if t == "a" and _starts_with_vowel(nxt, "aeiou") else t
           for t, nxt in zip(tokens, [*tokens[1:], ""])]
    return detokenize(out)


def _french_verb(form: str, negated: bool) -> list[str]:
    """The verb, wrapped in ne ... pas when negated."""
    return ["ne", form, "pas"] if negated else [form]


def _english_be(subject: _Subject, negated: bool) -> list[str]:
    """am / is / are (not)."""
    verb = "am" if subject.slot == 0 else "is" if subject.slot == 2 else "are"
    return [verb, "not"] if negated else [verb]


def _english_verb(verb: _Verb, subject: _Subject, negated: bool) -> list[str]:
    """eats / does not eat: English negates with "do", which takes the -s."""
    third_singular = subject.slot == 2
    if negated:
        return ["does" if third_singular else "do", "not", *verb.en.split()]
    return (verb.en_3sg if third_singular else verb.en).split()


def _template_phrases() -> Iterator[tuple[list[str], list[str]]]:
    """merci -> thanks, au revoir -> goodbye, ..."""
    for fr, en in _PHRASES:
        yield tokenize(fr), tokenize(en)


def _template_noun_phrase() -> Iterator[tuple[list[str], list[str]]]:
    """le chat noir -> the black cat."""
    for np in _noun_phrases(_ALL_KINDS):
        yield _french_np(np), _english_np(np)


def _template_be_profession() -> Iterator[tuple[list[str], list[str]]]:
    """je (ne) suis (pas) étudiant -> i am (not) a student; nous sommes ... -> we are students."""
    people = [_noun_subject(np) for np in _noun_phrases(frozenset({"person"}), True, False)]
    for subject in [*_pronoun_subjects(agreeing=True), *people]:
        for forms, en, en_pl in _PROFESSIONS:
            for negated in (False, True):
                fr = [*subject.fr, *_french_verb(_ETRE[subject.slot], negated),
                      _agree(forms, subject.gender, subject.plural)]
                yield fr, [*subject.en, *_english_be(subject, negated),
                           *([en_pl] if subject.plural else ["a", en])]


def _template_be_adjective() -> Iterator[tuple[list[str], list[str]]]:
    """elle est fatiguée -> she is tired; les maisons ne sont pas blanches -> ... not white."""
    people = [(s, "person") for s in _pronoun_subjects(agreeing=True)]
    things = [(_noun_subject(np), np.noun.kind) for np in _noun_phrases(_ALL_KINDS, True, False)]
    for (subject, kind), adjective, negated in itertools.product(
            [*people, *things], _ADJECTIVES, (False, True)):
        if kind in adjective.kinds:
            fr = [*subject.fr, *_french_verb(_ETRE[subject.slot], negated),
                  _agree(adjective.forms, subject.gender, subject.plural)]
            yield fr, [*subject.en, *_english_be(subject, negated), adjective.en]


def _transitive(subject: _Subject, verb: _Verb, negated: bool,
                adjectives: bool) -> Iterator[tuple[list[str], list[str]]]:
    """subject + verb + every object noun phrase the verb takes."""
    # After a negation French turns un/des into "de" ("je n'ai pas de chat"); the grammar
    # avoids that rule by negating only sentences with "the" objects.
    definite_only = negated or verb.generic
    for np in _noun_phrases(verb.objects, definite_only, adjectives):
        fr = [*subject.fr, *_french_verb(verb.forms[subject.slot], negated), *_french_np(np)]
        yield fr, [*subject.en, *_english_verb(verb, subject, negated),
                   *_english_np(np, verb.generic)]


def _template_pronoun_verb_object() -> Iterator[tuple[list[str], list[str]]]:
    """je ne vois pas le chat noir -> i do not see the black cat."""
    for subject, verb, negated in itertools.product(
            _pronoun_subjects(agreeing=False), _VERBS, (False, True)):
        yield from _transitive(subject, verb, negated, adjectives=True)


def _template_noun_verb_object() -> Iterator[tuple[list[str], list[str]]]:
    """les enfants mangent une pomme -> the children eat an apple (no adjectives: stay short)."""
    for np, verb, negated in itertools.product(
            _noun_phrases(frozenset({"animal", "person"}), True, False), _VERBS, (False, True)):
        if np.noun.kind == "person" or verb.animals_too:
            yield from _transitive(_noun_subject(np), verb, negated, adjectives=False)


# Template -> relative weight when sampling. The small templates run out early, so the
# corpus ends up holding every phrase and profession sentence, which is what we want.
_TEMPLATES = {
    _template_phrases: 1.0,
    _template_noun_phrase: 1.0,
    _template_be_profession: 1.0,
    _template_be_adjective: 2.0,
    _template_pronoun_verb_object: 8.0,
    _template_noun_verb_object: 3.0,
}


@functools.cache
def _template_pools() -> tuple[tuple[Pair, ...], ...]:
    """Each template's pairs in a fixed order; checks that French -> English is a function."""
    seen: dict[str, str] = {}
    pools = []
    for template in _TEMPLATES:
        pool = []
        for fr_tokens, en_tokens in template():
            fr, en = _french(fr_tokens), _english(en_tokens)
            if fr in seen:  # e.g. "je suis médecin" said by a man or by a woman
                if seen[fr] != en:
                    raise RuntimeError(f"grammar bug: {fr!r} -> both {seen[fr]!r} and {en!r}")
                continue
            seen[fr] = en
            pool.append((fr, en))
        pools.append(tuple(pool))
    return tuple(pools)


def grammar_pairs() -> list[Pair]:
    """Every (French, English) pair the grammar can produce, each French sentence once."""
    return [pair for pool in _template_pools() for pair in pool]


def generate_pairs(seed: int = 0, n_pairs: int = 12000) -> list[Pair]:
    """``n_pairs`` distinct French -> English pairs drawn from the grammar; same seed, same list."""
    pools = _template_pools()
    available = sum(map(len, pools))
    if not len(RUNNING_EXAMPLES) <= n_pairs <= available:
        raise ValueError(f"n_pairs must be between {len(RUNNING_EXAMPLES)} and {available} "
                         f"(the sentences the grammar can make), got {n_pairs}")
    rng = random.Random(seed)
    queues = [rng.sample(pool, len(pool)) for pool in pools]
    weights = list(_TEMPLATES.values())
    chosen = dict(RUNNING_EXAMPLES)  # French -> English; the book's examples always come first
    while len(chosen) < n_pairs:
        # Pick a template, then its next unused sentence: a weighted draw without replacement.
        live = [i for i, queue in enumerate(queues) if queue]
        (i,) = rng.choices(live, weights=[weights[i] for i in live])
        fr, en = queues[i].pop()
        chosen.setdefault(fr, en)
    pairs = list(chosen.items())
    rng.shuffle(pairs)
    return pairs


# ----------------------------------------------------------------------------- corpora


@dataclass(frozen=True)
class ParallelCorpus:
    """Train/valid/test (French, English) pairs and the vocabularies of the train split."""

    train: list[Pair]
    valid: list[Pair]
    test: list[Pair]
    src_vocab: Vocab  # French words of train only: a held-out word must come out as <unk>
    tgt_vocab: Vocab


def load_corpus(seed: int = 0, n_pairs: int = 12000, valid_fraction: float = 0.05,
                test_fraction: float = 0.05, phrase_repeats: int = 20) -> ParallelCorpus:
    """The grammar's corpus split three ways (disjoint sources; running examples in train).

    The set phrases ("merci" -> "thanks", "au revoir" -> "goodbye", ...) follow no rule the
    other sentences teach, so a model can only memorise them, and among ten thousand
    sentences each would be seen a handful of times in a minute of training. They are
    therefore never held out, and the train split repeats each ``phrase_repeats`` times.
    """
    if phrase_repeats < 1:
        raise ValueError(f"phrase_repeats must be at least 1, got {phrase_repeats}")
    pairs = generate_pairs(seed, n_pairs)
    phrases = dict(_PHRASES)
    corpus = split_corpus(pairs, seed, valid_fraction, test_fraction,
                          keep_in_train={fr for fr, _ in RUNNING_EXAMPLES} | set(phrases))
    extra = [p for p in corpus.train if p[0] in phrases] * (phrase_repeats - 1)
    train = corpus.train + extra
    return ParallelCorpus(train, corpus.valid, corpus.test, Vocab.build(fr for fr, _ in train),
                          Vocab.build(en for _, en in train))


def split_corpus(pairs: Sequence[Pair], seed: int = 0, valid_fraction: float = 0.05,
                 test_fraction: float = 0.05, keep_in_train: Iterable[str] = ()) -> ParallelCorpus:
    """Split any parallel corpus into train/valid/test so that no source sentence is in two splits.

    Held-out sentences are drawn among distinct sources (a source with several translations
    goes whole into one split); sources in ``keep_in_train`` always stay in train.
    Vocabularies are built from the train split.
    """
    if not (0 <= valid_fraction and 0 <= test_fraction and valid_fraction + test_fraction < 1):
        raise ValueError("valid_fraction and test_fraction must be >= 0 and sum to less than 1, "
                         f"got {valid_fraction} and {test_fraction}")
    if not pairs:
        raise ValueError("split_corpus got no sentence pairs; give at least a few (source, target) pairs.")
    keep = set(keep_in_train)
    sources = sorted({fr for fr, _ in pairs} - keep)
    # A string seed gives a stream of its own, unrelated to generate_pairs' stream.
    random.Random(f"split-{seed}").shuffle(sources)
    n_valid, n_test = round(valid_fraction * len(pairs)), round(test_fraction * len(pairs))
    if n_valid + n_test > len(sources):
        raise ValueError(f"{len(pairs)} pairs are too few to hold out {n_valid} + {n_test} source sentences")
    valid_src, test_src = set(sources[:n_valid]), set(sources[n_valid : n_valid + n_test])
    train = [p for p in pairs if p[0] not in valid_src and p[0] not in test_src]
    valid = [p for p in pairs if p[0] in valid_src]
    test = [p for p in pairs if p[0] in test_src]
    return ParallelCorpus(train, valid, test, Vocab.build(fr for fr, _ in train),
                          Vocab.build(en for _, en in train))


_NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four"}


def load_parallel_tsv(path: str | os.PathLike, src_column: int = 1,
                      tgt_column: int = 0) -> list[Pair]:
    """(source, target) pairs from a UTF-8 TSV laid out like Tatoeba's fra.txt (English, French)."""
    if min(src_column, tgt_column) < 0:
        raise ValueError(f"columns are 0-based and >= 0, got {src_column} and {tgt_column}")
    need = max(src_column, tgt_column) + 1
    try:
        # utf-8-sig: files saved by some editors start with a byte-order mark.
        with open(path, encoding="utf-8-sig") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        raise FileNotFoundError(f"no parallel corpus at {os.fspath(path)!r}") from None
    pairs = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        columns = line.split("\t")
        if len(columns) < need:
            raise ValueError(
                f"{os.fspath(path)}, line {number}: expected at least "
                f"{_NUMBER_WORDS.get(need, need)} tab-separated columns, found {len(columns)}; "
                "fix or delete the line, or check that the file uses tabs (not spaces) "
                "between the sentences")
        pairs.append((columns[src_column].strip(), columns[tgt_column].strip()))
    return pairs


def copy_pairs(n: int, vocab_words: int = 20, min_len: int = 3, max_len: int = 8,
               seed: int = 0) -> list[Pair]:
    """The copy task: ``n`` random sentences of words w0..w{vocab_words-1}, target = source."""
    if n < 0 or vocab_words < 1 or not 1 <= min_len <= max_len:
        raise ValueError(f"need n >= 0, vocab_words >= 1 and 1 <= min_len <= max_len, got "
                         f"n={n}, vocab_words={vocab_words}, min_len={min_len}, max_len={max_len}")
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        sentence = " ".join(f"w{rng.randrange(vocab_words)}"
                            for _ in range(rng.randint(min_len, max_len)))
        pairs.append((sentence, sentence))
    return pairs


# ----------------------------------------------------------------------------- batches


@dataclass
class Batch:
    """Padded ids: src [B, S] = tokens + EOS, tgt [B, T] = BOS + tokens + EOS, PAD on the right."""

    src: Tensor
    tgt: Tensor

    @property
    def tgt_in(self) -> Tensor:
        """Decoder input [B, T-1]: the target without its last position (teacher forcing)."""
        return self.tgt[:, :-1]

    @property
    def tgt_out(self) -> Tensor:
        """What the decoder must predict [B, T-1]: the target shifted left by one."""
        return self.tgt[:, 1:]

    @property
    def n_tokens(self) -> int:
        """Number of real (non-PAD) tokens in ``tgt_out``: the loss is averaged over these."""
        return int((self.tgt_out != PAD_ID).sum())

    def to(self, device: torch.device | str) -> Batch:
        """The same batch on ``device``."""
        return Batch(self.src.to(device), self.tgt.to(device))


def encode_pairs(pairs: Iterable[Pair], src_vocab: Vocab,
                 tgt_vocab: Vocab) -> list[tuple[list[int], list[int]]]:
    """Strings -> ids: source = tokens + EOS (no BOS), target = BOS + tokens + EOS."""
    # The source is only read, never generated, so it needs no start symbol.
    return [(src_vocab.encode(src, add_bos=False), tgt_vocab.encode(tgt)) for src, tgt in pairs]


def pad(seqs: Sequence[Sequence[int]], pad_id: int = PAD_ID) -> Tensor:
    """Stack id lists of different lengths into a LongTensor [B, L], pad_id on the right."""
    if len(seqs) == 0:
        raise ValueError("pad() needs at least one sequence")
    out = torch.full((len(seqs), max(map(len, seqs))), pad_id, dtype=torch.long)
    for row, seq in zip(out, seqs):
        row[: len(seq)] = torch.as_tensor(seq, dtype=torch.long)
    return out


def batches(pairs: Iterable[Pair], src_vocab: Vocab, tgt_vocab: Vocab, batch_size: int,
            shuffle: bool = False, seed: int = 0, drop_last: bool = False) -> Iterator[Batch]:
    """Padded batches of ``batch_size`` pairs, in order or in a seeded shuffled order."""
    pairs = list(pairs)
    # Checked here, not inside the generator, so a bad call fails where it is made.
    if not pairs:
        raise ValueError("batches() got no sentence pairs; pass a non-empty list of "
                         "(source, target) strings")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    return _iter_batches(encode_pairs(pairs, src_vocab, tgt_vocab), batch_size, shuffle, seed,
                         drop_last)


def _iter_batches(encoded: list[tuple[list[int], list[int]]], batch_size: int, shuffle: bool,
                  seed: int, drop_last: bool) -> Iterator[Batch]:
    """The generator behind ``batches``."""
    order = list(range(len(encoded)))
    if shuffle:
        order = torch.randperm(len(order), generator=torch.Generator().manual_seed(seed)).tolist()
    for start in range(0, len(order), batch_size):
        chunk = [encoded[i] for i in order[start : start + batch_size]]
        if drop_last and len(chunk) < batch_size:
            return
        yield Batch(pad([s for s, _ in chunk]), pad([t for _, t in chunk]))
