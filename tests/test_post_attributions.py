"""What the book says The Illustrated Transformer shows, it shows.

The chapters follow Jay Alammar's post and borrow its examples; they also bring their own
(*le chat noir* is the book's, not the post's). A sentence that credits an example to "the
post" (an italic or quoted phrase soon after "the post" or "the post's", in the same sentence)
must name one of the post's own, listed below as the post gives them
(https://jalammar.github.io/illustrated-transformer/, and the notes the book was built from).
Add to the list only what the post itself shows.
"""

from __future__ import annotations

import re

import pytest

from notebook_tools import ROOT, load, source, toc_chapters

POST_EXAMPLES = {
    # self-attention, step by step and as matrices, and the two words of the multi-head drawings
    "Thinking Machines", "Thinking", "Machines",
    # what self-attention is for, and what multi-head attention adds
    "The animal didn't cross the street because it was too tired", "it", "animal",
    # the training example and the decoder's walk-through
    "je suis étudiant", "I am a student", "I am",
    # the loss function's smallest example
    "merci", "thanks",
    # the output vocabulary of six words in its recap of training
    "a", "am", "I", "student", "<eos>",
    # the label of the residual's box, and its words for comparing two distributions
    "Add & Normalize", "subtracting", "subtract one from the other",
}
PAGES = [ROOT / name for name in ("intro.md", "teachers.md", "api.md", "api_internals.md", "references.md")]

ATTRIBUTION = re.compile(r"\b[Tt]he post\b(?!-)|\bpost's\b")
# an example: *italic* or "quoted"; **bold** is not one
EXAMPLE = re.compile(r'(?<![\w*])\*(?!\*)([^*]+?)\*(?![\w*])|"([^"]+)"|“([^”]+)”')
WINDOW = 80  # characters after "the post" in which an example is taken to be the post's
# ... unless another owner is named first: "the post's *merci* and the book's own *le chat noir*"
OTHER_OWNER = re.compile(r"\b(?:[Tt]he book's|[Oo]ur|its own|[Tt]he notes)\b")


def _normal(phrase: str) -> str:
    phrase = phrase.replace("’", "'").replace("`", "").strip(" \"'“”.,;:")
    return re.sub(r"\s+", " ", phrase).casefold()


ON_THE_LIST = {_normal(p) for p in POST_EXAMPLES}


def attributed_examples(text: str) -> list[tuple[str, str]]:
    """(example, sentence) for each example a sentence of ``text`` credits to the post."""
    found = []
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = re.sub(r"\s+", " ", paragraph)
        for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z*\"“(])", paragraph):
            for credit in ATTRIBUTION.finditer(sentence):
                for example in EXAMPLE.finditer(sentence, credit.end()):
                    between = sentence[credit.end():example.start()]
                    if len(between) > WINDOW or OTHER_OWNER.search(between):
                        break
                    found.append((next(g for g in example.groups() if g), sentence))
    return found


def test_the_check_reads_an_attribution_as_its_author_would():
    text = ('The post\'s sentence *le chat noir* is the interesting one. The post lays them out for the\n'
            'sentence "Action gets results". Take the post\'s sentence, *"The animal didn\'t cross the\n'
            'street because it was too tired"*. Our own *le chien* is not the post\'s. The post-LN\n'
            'model. The post\'s *merci*, and the book\'s own *le chat noir*. The post-LN\n'
            'model. The post draws boxes, and much later in the same sentence, far beyond the window\n'
            'of what it credits, we write of *a cat*.')
    assert [e for e, _ in attributed_examples(text)] == [
        "le chat noir", "Action gets results", '"The animal didn\'t cross the street because it was too tired"',
        "merci"]
    assert [_normal(e) in ON_THE_LIST for e, _ in attributed_examples(text)] == [False, False, True, True]


def _documents() -> list[tuple[str, str]]:
    docs = [(p.name, p.read_text(encoding="utf-8")) for p in PAGES]
    for path in toc_chapters():
        cells = load(path)["cells"]
        texts = [source(c) for c in cells if c["cell_type"] == "markdown"]
        texts += [c["metadata"].get("mystnb", {}).get("figure", {}).get("caption", "") for c in cells]
        docs.append((path.name, "\n\n".join(texts)))
    return docs


@pytest.mark.parametrize("name,text", _documents(), ids=[name for name, _ in _documents()])
def test_what_is_credited_to_the_post_is_the_posts(name, text):
    wrong = [(example, sentence) for example, sentence in attributed_examples(text)
             if _normal(example) not in ON_THE_LIST]
    assert not wrong, (f"{name} credits to the post examples it does not show (say whose they are, "
                       f"or add a real one of the post's to POST_EXAMPLES): {wrong}")


def test_every_listed_example_is_met_in_the_book():
    """A stale list would let a wrong credit through: each of its examples is still used."""
    everything = _normal("\n".join(text for _, text in _documents()))
    assert [p for p in POST_EXAMPLES if len(p) > 3 and _normal(p) not in everything] == []
