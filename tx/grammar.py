"""The small French -> English grammar the book's built-in corpus comes from.

Tables of words (nouns with gender and number, adjectives, professions, verbs) and a few
sentence templates; each French sentence is built as a list of tokens, and its English
translation alongside it by the same choices. So the corpus needs no download, is the same
on every machine, and is regular enough that a small Transformer learns it in minutes on
a CPU, while still asking for adjective reordering, articles inserted and dropped,
agreement and negation: real alignments for cross-attention to show.

:func:`generate_pairs` draws the corpus; :func:`tx.data.load_corpus` splits it for training.
"""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from .checks import check_int
from .tokens import Pair, detokenize, tokenize

__all__ = ["PHRASES", "RUNNING_EXAMPLES", "grammar_pairs", "generate_pairs", "sentence_shapes"]

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

PHRASES = (
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
    for fr, en in PHRASES:
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


_SHAPES = {
    _template_phrases: "a set phrase",
    _template_noun_phrase: "a noun phrase on its own",
    _template_be_profession: "someone is, or is not, a profession",
    _template_be_adjective: "someone or something is, or is not, an adjective",
    _template_pronoun_verb_object: "a pronoun, a verb, maybe negated, and its object (with or without an adjective)",
    _template_noun_verb_object: "a noun, a verb, maybe negated, and its object (no adjective)",
}


def sentence_shapes() -> list[tuple[str, str, str]]:
    """``(the shape in words, a French example, its English)`` for each kind of sentence the grammar makes."""
    return [(_SHAPES[template], *pool[len(pool) // 2]) for template, pool in zip(_TEMPLATES, _template_pools())]


def grammar_pairs() -> list[Pair]:
    """Every (French, English) pair the grammar can produce, each French sentence once."""
    return [pair for pool in _template_pools() for pair in pool]


def generate_pairs(seed: int = 0, n_pairs: int = 12000) -> list[Pair]:
    """``n_pairs`` distinct French -> English pairs drawn from the grammar; same seed, same list."""
    check_int("n_pairs", n_pairs)
    check_int("seed", seed)
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
