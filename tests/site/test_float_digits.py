"""No page shows a float to more digits than it means (issue 46).

A float printed bare, ``print(diff.item())``, shows Python's full repr, 17 digits such as
``3.5762786865234375e-07``, where the reader needs ``3.6e-07``. The outputs are only in the
build, so this reads each built page's HTML straight from _build/html (no server, no
browser): its visible text, without <script> and <style> (widget state, MathJax's
configuration), and fails naming the page and the number.
"""

from __future__ import annotations

import re
from functools import cache
from html.parser import HTMLParser

import pytest

from sitekit import EXTRA_PAGES, HTML, toc_pages

PAGES = toc_pages() + EXTRA_PAGES

# More than this many significant digits is a float printed unrounded: float32 needs at
# most 9 to round-trip, and no number in the book means more than 8.
MOST_DIGITS = 8

# A decimal number, with or without an exponent, not part of a word, a version (1.2.3) or
# a hash; a full stop after it ends a sentence.
NUMBER = re.compile(r"(?<![\w.])(\d+\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)(?!\w|\.\d)")

# Text that looks like a long float and is not one, taken out before the search.
NOT_FLOATS = [
    # the references page: arXiv:1607.06450 is an identifier
    re.compile(r"arXiv:\d{4}\.\d{4,5}(?:v\d+)?"),
    # an address shown as text, https://arxiv.org/abs/1607.06450
    re.compile(r"https?://\S+"),
]

# (page, number as shown): why this page means every digit. Keep it short.
DELIBERATE: dict[tuple[str, str], str] = {}


class _VisibleText(HTMLParser):
    """The text a reader can see: everything outside <script> and <style>."""

    def __init__(self):
        super().__init__()
        self.hidden = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.hidden += tag in ("script", "style")

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self.hidden:
            self.hidden -= 1

    def handle_data(self, data):
        if not self.hidden:
            self.parts.append(data)


@cache
def visible_text(docname: str) -> str:
    path = HTML / f"{docname}.html"
    if not path.is_file():
        pytest.fail(f"no {path.relative_to(HTML.parent.parent)}: run `make book` first.")
    parser = _VisibleText()
    parser.feed(path.read_text(encoding="utf-8"))
    parser.close()
    return "".join(parser.parts)


def significant_digits(number: str) -> int:
    """Digits of the mantissa shown, from the first non-zero one: 0.00120 has 3."""
    mantissa = re.split(r"[eE]", number)[0]
    return len(mantissa.replace(".", "").lstrip("0"))


def long_floats(text: str) -> list[tuple[str, str]]:
    """Each number in text with more than MOST_DIGITS significant digits, and its context."""
    for pattern in NOT_FLOATS:
        text = pattern.sub(" ", text)
    found = []
    for match in NUMBER.finditer(text):
        if significant_digits(match.group(1)) > MOST_DIGITS:
            context = " ".join(text[max(0, match.start() - 50) : match.end()].split())
            found.append((match.group(1), context))
    return found


def test_the_search_finds_what_it_should():
    """The search itself, on text of the kinds the chapters print."""
    found = [
        n
        for n, _ in long_floats(
            "gap: 3.5762786865234375e-07. 256.0 249.10209782736288 173.7897249236634 "
            "1/3 as float32 0.3333333433, ok: 1.7e-06 0.33333334 4.999336 1.2346e-07 "
            "tensor([0.1234, 0.5678]) 1234567890 v1.2.3456789012 arXiv:1607.06450 "
            "https://arxiv.org/abs/1706.03762"
        )
    ]
    assert found == ["3.5762786865234375e-07", "249.10209782736288", "173.7897249236634", "0.3333333433"]


@pytest.mark.parametrize("docname", PAGES)
def test_no_float_shown_to_more_digits_than_it_means(docname):
    found = [(n, c) for n, c in long_floats(visible_text(docname)) if (docname, n) not in DELIBERATE]
    if found:
        pytest.fail(
            f"{docname}: {len(found)} float(s) shown to more than {MOST_DIGITS} significant "
            'digits; round them in the cell that prints them (f"{x:.2g}", :.3f):\n'
            + "\n".join(f"  {n}   in: ...{c}" for n, c in found),
            pytrace=False,
        )
