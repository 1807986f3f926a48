"""Every mention of another page in the book's prose is a link to it.

A reader who meets "chapter 8 looks inside them" or "the appendix *Training at scale*" should
be one click from it. The chapters' markdown cells and the top-level pages are parsed as MyST
parses them (markdown-it with the book's extensions), and a mention counts as linked when it
is a link's text. Headings, code spans, roles such as {eq}`...` and the captions that code
cells draw are not prose and are not read; the bodies of directives (exercises, admonitions)
are, as the page shows them.
"""

from __future__ import annotations

import re

import pytest
import yaml
from markdown_it.renderer import RendererHTML
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.mdit import create_md_parser

from notebook_tools import ROOT, load, source, toc_chapters

EXTENSIONS = yaml.safe_load((ROOT / "_config.yml").read_text())["parse"]["myst_enable_extensions"]
PAGES = [ROOT / name for name in ("intro.md", "teachers.md", "api.md", "api_internals.md", "references.md")]

# A chapter by its number, the appendix, the API pages. "Chapter 4's", "chapters 12 to 14",
# "chapters 1–11" each start with the number the link takes.
MENTION = re.compile(
    r"\b[Cc]hapters? \d+|\b[Tt]he appendix\b|\bAPI appendix\b|\bAPI page\b|\bTraining at scale\b")
# Directives whose body is code, math or reStructuredText, not the page's prose.
NOT_PROSE = {"code-cell", "code-block", "code", "math", "eval-rst", "literalinclude", "mermaid"}

# Mentions left unlinked, each with why; an entry whose text is gone fails the test.
ALLOWED: dict[str, list[str]] = {}

_md = create_md_parser(MdParserConfig(enable_extensions=EXTENSIONS), RendererHTML)


def _prose_runs(text: str):
    """The runs of plain prose outside links, headings, code and roles, each as one string."""
    tokens = _md.parse(text)
    for i, token in enumerate(tokens):
        if token.type in ("fence", "colon_fence"):
            name = re.match(r"\{([^}]*)\}\s*(.*)", token.info.strip())
            if name and name.group(1) not in NOT_PROSE:
                yield name.group(2)  # the directive's title
                body = re.sub(r"\A(?:---\n.*?\n---\n|(?::[\w-]+:[^\n]*\n)*)", "", token.content, flags=re.S)
                yield from _prose_runs(body)
            continue
        if token.type != "inline" or (i and tokens[i - 1].type == "heading_open"):
            continue
        run, depth = [], 0
        for child in token.children or []:
            if child.type == "link_open":
                depth += 1
            elif child.type == "link_close":
                depth -= 1
            elif depth == 0 and child.type == "text":
                run.append(child.content)
                continue
            elif depth == 0 and child.type in ("softbreak", "hardbreak"):
                run.append(" ")
                continue
            if run:
                yield "".join(run)
                run = []
        if run:
            yield "".join(run)


def unlinked_mentions(text: str) -> list[tuple[str, str]]:
    """Each mention of a chapter, the appendix or the API page that is not a link's text, with its context."""
    return [(match.group(), run[max(0, match.start() - 30):match.end() + 30].strip())
            for run in _prose_runs(text) for match in MENTION.finditer(run)]


def test_the_check_finds_a_bare_mention_and_passes_a_link():
    text = ("As in chapter 4, and\nchapter 5's mask; see [chapter 6](06.ipynb), `chapter 7`,\n"
            "the appendix *Training at scale*, [the appendix](A1.ipynb).\n\n## Chapter 8\n\n"
            ":::{exercise}\n:label: ex\nRedo chapter 9.\n:::\n\n```{code-cell}\nchapter 10\n```\n")
    assert [mention for mention, _ in unlinked_mentions(text)] == [
        "chapter 4", "chapter 5", "the appendix", "Training at scale", "chapter 9"]


def _documents() -> list[tuple[str, str]]:
    docs = [(p.name, p.read_text(encoding="utf-8")) for p in PAGES]
    for path in toc_chapters():
        cells = [source(c) for c in load(path)["cells"] if c["cell_type"] == "markdown"]
        docs.append((path.name, "\n\n".join(cells)))
    return docs


@pytest.mark.parametrize("name,text", _documents(), ids=[name for name, _ in _documents()])
def test_every_mention_of_another_page_is_a_link(name, text):
    for allowed in ALLOWED.get(name, []):
        assert allowed in text, f"{name} no longer says {allowed!r}: drop it from ALLOWED"
        text = text.replace(allowed, "")
    found = [context for _, context in unlinked_mentions(text)]
    assert not found, (
        f"{name}: link these mentions to their page, e.g. [chapter 8](08_decoder.ipynb) in a chapter, "
        f"[chapter 8](chapters/08_decoder.ipynb) on a top-level page, [the API appendix](../api.md): {found}")


def test_every_link_to_a_page_of_the_book_finds_it():
    """A relative link names a file that exists (Sphinx would warn; Jupyter would show a dead link)."""
    for name, text in _documents():
        folder = ROOT if name.endswith(".md") else ROOT / "chapters"
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:|#", target):
                continue
            path = target.split("#")[0]
            assert any((folder / f"{path}{suffix}").is_file() for suffix in ("", ".md", ".ipynb")) or \
                re.fullmatch(r"[\w-]+", path), f"{name}: a link to {target}, which is no file of the book"
