"""_ext/book_site.py's repository links, both ways: the built site has only one of them.

The site as built (repository.url empty) is checked page by page in tests/site; the case of
a set repository would need a second build, so the function that decides is tested here.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _extension(name: str):
    """One of the book's Sphinx extensions in _ext/, loaded from its file."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "_ext" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def book_site():
    return _extension("book_site")


def _options(url: str) -> dict:
    # What Jupyter Book makes of _config.yml's repository, html and launch_buttons sections.
    return {"repository_url": url, "repository_branch": "main", "use_repository_button": False,
            "use_issues_button": True, "use_edit_page_button": True,
            "launch_buttons": {"binderhub_url": "https://mybinder.org", "notebook_interface": "jupyterlab",
                               "thebe": False}}


@pytest.mark.parametrize("url", ["", "   ", None])
def test_no_repository_no_button_and_no_launch(book_site, url):
    options = book_site.repository_links(_options(url))
    assert not any(options[key] for key in book_site.REPOSITORY_BUTTONS)
    assert "binderhub_url" not in options["launch_buttons"]
    assert options["launch_buttons"]["notebook_interface"] == "jupyterlab"  # the rest is kept


def test_a_repository_gets_its_button_and_binder(book_site):
    url = "https://github.com/ann/tx-book"
    options = book_site.repository_links(_options(url))
    assert options["repository_url"] == url and options["use_repository_button"] is True
    assert options["launch_buttons"]["binderhub_url"] == "https://mybinder.org"


def test_the_given_options_are_not_changed(book_site):
    given = _options("")
    book_site.repository_links(given)
    assert given == _options("")


def test_the_home_page_names_the_repository_only_when_set():
    """intro.md's clone step, rendered as MyST renders its substitutions (Jinja2), both ways."""
    import re

    import jinja2

    steps = [e for e in re.findall(r"\{\{.*?\}\}", (ROOT / "intro.md").read_text(encoding="utf-8"), re.S)
             if "repository_url" in e]
    # the first screen's Binder sentence, git among the needs, and the clone step
    assert len(steps) == 3, steps
    render = jinja2.Environment().from_string("".join(steps)).render
    url = "https://github.com/ann/tx-book"
    with_repo = render(repository_url=url, repository_branch="main")
    assert f"git clone {url} && cd tx-book" in with_repo and "Binder" in with_repo
    assert "`git`" in with_repo
    without = render(repository_url="", repository_branch="main")
    assert "git clone" not in without and "your-org" not in without and "http" not in without
    assert "Binder" not in without and "git" not in without


def test_live_download_bytes_count_what_a_block_fetches(book_site, tmp_path):
    import json

    ort = tmp_path / "vendor" / "ort"
    ort.mkdir(parents=True)
    # the page fetches the binary gzip-compressed; the uncompressed one is not fetched
    for name, size in [("ort.wasm.min.js", 10), ("ort-wasm-simd-threaded.mjs", 20),
                       ("ort-wasm-simd-threaded.wasm.gz", 300), ("ort-wasm-simd-threaded.wasm", 1200),
                       ("ort.all.min.js", 9999)]:
        (ort / name).write_bytes(b"x" * size)
    (tmp_path / "vendor" / "tokenizers").mkdir()
    (tmp_path / "vendor" / "tokenizers" / "tokenizers.min.mjs").write_bytes(b"x" * 40)
    words, pieces = tmp_path / "live" / "tx-live" / "words", tmp_path / "live" / "tx-live" / "pieces"
    words.mkdir(parents=True)
    pieces.mkdir(parents=True)
    (words / "manifest.json").write_text(json.dumps({"files": {"encoder": "e.onnx", "decoder": "d.onnx"},
                                                     "vocab_kind": "word"}))
    for name, size in [("e.onnx", 1000), ("d.onnx", 2000), ("vocab.json", 50), ("unused.bin", 7777)]:
        (words / name).write_bytes(b"x" * size)
    (pieces / "manifest.json").write_text(json.dumps({"files": {"encoder": "e.onnx", "decoder": "d.onnx"},
                                                      "vocab_kind": "bpe", "vocab_files": ["s.json", "t.json"]}))
    for name, size in [("e.onnx", 100), ("d.onnx", 200), ("s.json", 5), ("t.json", 6)]:
        (pieces / name).write_bytes(b"x" * size)
    sizes = book_site.live_download_bytes(tmp_path / "vendor", tmp_path / "live")
    manifest, bpe_manifest = (words / "manifest.json").stat().st_size, (pieces / "manifest.json").stat().st_size
    # no file the block does not fetch; a subword model's block fetches tokenizers.js as well
    assert sizes == {"runtime": 330, "words": manifest + 3050, "pieces": bpe_manifest + 311 + 40}


def test_an_appendix_numbers_its_figures_and_exercises_apart_from_chapter_1(book_site):
    """Sphinx counts what an unnumbered part holds 1, 2, ...: the appendix's figures read as chapter 1's (issue 24)."""
    from types import SimpleNamespace

    env = SimpleNamespace(
        toc_fignumbers={
            "chapters/01_high_level_look": {"figure": {"fig-a": (1, 1)}},
            "chapters/A1_training_at_scale": {"figure": {"b": (2,), "a": (1,)}, "exercise": {"ex": (1,), "ey": (2,)}},
            "api": {"code-block": {"c": (1,)}},
        },
        toc_secnumbers={"chapters/01_high_level_look": {"": (1,)}},
    )
    assert book_site.appendix_numbers(None, env) == []
    a1 = env.toc_fignumbers["chapters/A1_training_at_scale"]
    assert a1 == {"figure": {"a": ("A1", 1), "b": ("A1", 2)}, "exercise": {"ex": ("A1", 1), "ey": ("A1", 2)}}
    assert ".".join(map(str, a1["figure"]["b"])) == "A1.2"  # as Sphinx's writers join a number
    assert env.toc_fignumbers["chapters/01_high_level_look"]["figure"]["fig-a"] == (1, 1)  # chapters keep theirs
    assert env.toc_fignumbers["api"]["code-block"]["c"] == (1,)


def test_an_appendix_numbers_its_sections_as_a_chapter_does(book_site):
    """A1's title reads A1, its sections A1.1, A1.2 and their subsections A1.1.1 (a reader asked to cite them)."""
    from types import SimpleNamespace

    from docutils import nodes
    from sphinx import addnodes

    def entry(anchor, *children):
        paragraph = addnodes.compact_paragraph("", "", nodes.reference("", "", anchorname=anchor))
        return nodes.list_item("", paragraph, *children)

    toc = nodes.bullet_list("", entry("", nodes.bullet_list(
        "", entry("#one-batch", nodes.bullet_list("", entry("#a-few-steps"))), entry("#mixed-precision"))))
    title = nodes.title("", "Training at scale")
    env = SimpleNamespace(toc_fignumbers={}, toc_secnumbers={"chapters/01_high_level_look": {"": (1,)}},
                          tocs={"chapters/A1_training_at_scale": toc, "chapters/01_high_level_look": toc.deepcopy()},
                          titles={"chapters/A1_training_at_scale": title}, longtitles={})
    book_site.appendix_numbers(None, env)
    assert title["secnumber"] == ["A1"]  # the page's <title> reads "A1. Training at scale", as its heading
    assert env.toc_secnumbers["chapters/A1_training_at_scale"] == {
        "": ("A1",), "#one-batch": ("A1", 1), "#a-few-steps": ("A1", 1, 1), "#mixed-precision": ("A1", 2)}
    assert env.toc_secnumbers["chapters/01_high_level_look"] == {"": (1,)}  # a chapter keeps Sphinx's numbers
    numbered = [r["secnumber"] for r in toc.findall(nodes.reference)]
    assert numbered == [["A1"], ["A1", 1], ["A1", 1, 1], ["A1", 2]]  # the page's contents list shows them


def test_the_formula_stylesheet_keeps_every_rule_whole():
    """_ext/static_math.py's rules, read back from its own stylesheet: a brace in a glyph's
    content does not cut its rule, so the rule after it (a space's) is kept."""
    static_math = _extension("static_math")
    css = ('mjx-c.mjx-c7B::before {\n  padding: 0.75em 0.5em 0.25em 0;\n  content: "{";\n}\n\n'
           'mjx-c.mjx-c20::before {\n  padding: 0 0.25em 0 0;\n  content: " ";\n}\n'
           'mjx-c.mjx-c5C::before { content: "\\\\"; }\n@media print { mjx-c { color: black; } }\n')
    rules = static_math.css_rules(css)
    assert [r.split("{")[0].strip() for r in rules] == [
        "mjx-c.mjx-c7B::before", "mjx-c.mjx-c20::before", "mjx-c.mjx-c5C::before", "@media print"]
    assert rules[0].endswith('content: "{";\n}') and rules[3].endswith("} }")


def test_the_icon_script_leaves_every_page_and_the_site(book_site, tmp_path):
    """The theme's 1.49 MB icon script goes, the page's other scripts stay, and each icon, now a
    character of the icon font, is hidden from screen readers as the script's SVGs were."""
    from types import SimpleNamespace

    scripts = tmp_path / "_static" / "scripts"
    scripts.mkdir(parents=True)
    for name in ("fontawesome.js", "fontawesome.js.map", "fontawesome.js.LICENSE.txt", "bootstrap.js"):
        (scripts / name).write_text("//")
    icon = ('<!-- So that users can add custom icons -->\n'
            '  <script defer src="../_static/scripts/fontawesome.js?digest=1"></script>\n  ')
    head = ('<link href="../_static/styles/theme.css?digest=1" rel="stylesheet" />\n'
            '  {}<link rel="preload" as="script" href="../_static/scripts/bootstrap.js?digest=1" />\n')
    body = ('<button aria-label="Search"><i class="fa-solid fa-magnifying-glass"></i></button>'
            '<i class="theme-switch fa-solid fa-sun fa-lg" data-mode="light"></i>'
            '<i class="fab fa-github" aria-hidden="true"></i><i class="fancy"></i>'
            '<button><span class="fa-solid fa-bars"></span></button>')
    hidden = ('<button aria-label="Search"><i class="fa-solid fa-magnifying-glass" aria-hidden="true"></i></button>'
              '<i class="theme-switch fa-solid fa-sun fa-lg" aria-hidden="true" data-mode="light"></i>'
              '<i class="fab fa-github" aria-hidden="true"></i><i class="fancy"></i>'
              '<button><span class="fa-solid fa-bars" aria-hidden="true"></span></button>')
    page = tmp_path / "chapters" / "a.html"
    page.parent.mkdir()
    page.write_text(head.format(icon) + body)
    app = SimpleNamespace(outdir=str(tmp_path), builder=SimpleNamespace(format="html"))
    book_site.drop_icon_script(app, None)
    assert page.read_text() == head.format("") + hidden
    assert sorted(p.name for p in scripts.iterdir()) == ["bootstrap.js"]
    book_site.drop_icon_script(app, None)  # a second build: nothing more changes
    assert page.read_text() == head.format("") + hidden
    book_site.drop_icon_script(app, RuntimeError("a failed build"))  # nothing to do, nothing raised
