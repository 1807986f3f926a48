"""The API pages' promises that the source itself can keep: every field of a public dataclass
says what it is for, and every module is on one of the two API pages.

The fields are read with ``ast``: Sphinx documents a field by the ``#:`` comment on its line
(or a string right under it), and a field with neither shows on the page as a bare name.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[1]
TX = BOOK / "tx"


def _is_dataclass(node: ast.ClassDef) -> bool:
    def name(d: ast.expr) -> str:
        d = d.func if isinstance(d, ast.Call) else d
        return d.attr if isinstance(d, ast.Attribute) else getattr(d, "id", "")

    return any(name(d) == "dataclass" for d in node.decorator_list)


def undocumented_fields(source: str) -> list[str]:
    """``Class.field`` for each field of a public dataclass with no ``#:`` comment and no docstring."""
    lines = source.splitlines()
    missing = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.ClassDef) and _is_dataclass(node)) or node.name.startswith("_"):
            continue
        for i, statement in enumerate(node.body):
            if not isinstance(statement, ast.AnnAssign) or not isinstance(statement.target, ast.Name):
                continue
            following = node.body[i + 1] if i + 1 < len(node.body) else None
            has_docstring = (isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                             and isinstance(following.value.value, str))
            if "#:" not in lines[statement.lineno - 1] and not has_docstring:
                missing.append(f"{node.name}.{statement.target.id}")
    return missing


def test_the_field_check_sees_a_bare_field():
    source = ("from dataclasses import dataclass\n@dataclass\nclass A:\n"
              "    x: int  #: what x is\n    y: int = 0\n    z: int = 1\n    '''what z is'''\n")
    assert undocumented_fields(source) == ["A.y"]


@pytest.mark.parametrize("path", sorted(TX.rglob("*.py")), ids=lambda p: str(p.relative_to(TX)))
def test_every_dataclass_field_says_what_it_is_for(path):
    missing = undocumented_fields(path.read_text(encoding="utf-8"))
    assert not missing, f"{path.relative_to(BOOK)}: fields with no '#:' comment: {missing}"


def test_every_module_is_on_one_api_page():
    """api.md documents the library, api_internals.md the checkers and the book's tooling: each module once."""
    pages = {name: (BOOK / f"{name}.md").read_text(encoding="utf-8") for name in ("api", "api_internals")}
    found = {name: re.findall(r"^\.\. automodule:: (\S+)", text, re.M) for name, text in pages.items()}
    everywhere = found["api"] + found["api_internals"]
    modules = {".".join(("tx", *p.relative_to(TX).with_suffix("").parts)).removesuffix(".__init__")
               for p in TX.rglob("*.py") if not p.stem.startswith("_") or p.stem == "__init__"}
    modules -= {"tx"}  # the package itself: its one function, tx.device, is documented alone
    leaves = {m for m in modules if not m.endswith("__main__")}
    assert sorted(m for m in leaves if m not in everywhere) == []
    assert len(everywhere) == len(set(everywhere)), "a module is documented twice"
    assert all(m.startswith("tx.exercises") or m in {"tx.progress", "tx.training_record"}
               for m in found["api_internals"]), found["api_internals"]
    # the index at the top of the API page lists its modules, in the page's order
    index = re.search(r"\.\. module-index::\n\n((?:   \S+\n)+)", pages["api"])
    assert index and index.group(1).split() == found["api"]


def _api_modules() -> list[str]:
    """The modules api.md documents, in its order."""
    return re.findall(r"^\.\. automodule:: (\S+)", (BOOK / "api.md").read_text(encoding="utf-8"), re.M)


def _sphinx_config() -> dict:
    import yaml

    return yaml.safe_load((BOOK / "_config.yml").read_text(encoding="utf-8"))["sphinx"]["config"]


@pytest.fixture(scope="module")
def api_html(tmp_path_factory) -> str:
    """api.md's modules rendered by Sphinx's autodoc with the book's smart-quotes setting, as one page.

    Only what this test needs of the book's configuration: the page's own directives
    (_ext/book_site.py) and the theme are left out, the text of the docstrings is the same.
    """
    import io

    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace, patch_docutils

    src = tmp_path_factory.mktemp("api")
    conf = {"extensions": ["sphinx.ext.autodoc"], "autodoc_member_order": "bysource",
            "autodoc_default_options": {"members": True}}
    if "smartquotes_action" in _sphinx_config():
        conf["smartquotes_action"] = _sphinx_config()["smartquotes_action"]
    (src / "conf.py").write_text("".join(f"{k} = {v!r}\n" for k, v in conf.items()))
    (src / "index.rst").write_text("API\n===\n\n" + "".join(f".. automodule:: {m}\n\n" for m in _api_modules()))
    with patch_docutils(str(src)), docutils_namespace():
        app = Sphinx(str(src), str(src), str(src / "html"), str(src / "doctrees"), "html",
                     status=io.StringIO(), warning=io.StringIO())
        app.build()
    return (src / "html" / "index.html").read_text(encoding="utf-8")


def test_command_lines_on_the_api_page_keep_their_double_dashes(api_html):
    """``--beam`` in a docstring must not become "–beam" (an en dash): a copied command would fail."""
    import html

    text = html.unescape(re.sub(r"<[^>]+>", "", api_html))
    options = set()
    for module in _api_modules():
        path = TX / Path(*module.split(".")[1:])
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and ast.get_docstring(node):
                options |= set(re.findall(r"(?<![\w-])--([a-z][\w-]*)", ast.get_docstring(node)))
    assert {"beam", "runtime", "force", "quantize", "tsv"} <= options  # the usage lines are still found
    dashed = sorted(o for o in options if f"\u2013{o}" in text or f"\u2014{o}" in text)
    assert not dashed, f"options shown with an en or em dash on the API page: {dashed}"
    for usage in ("[--beam K] [--runtime torch|onnx]", "[--force] [--quantize int8]"):
        assert usage in text


def test_indented_blocks_in_docstrings_are_literal(api_html):
    """An indented formula or command after a plain paragraph is a block quote, its lines run
    together; after ``::`` it is a literal block, each line its own."""
    quotes = re.findall(r"<blockquote>(.*?)</blockquote>", api_html, re.S)
    assert not quotes, f"block quotes on the API page (end the paragraph before with '::'): {quotes}"
    blocks = [re.sub(r"<[^>]+>", "", block).splitlines()
              for block in re.findall(r"<pre>(.*?)</pre>", api_html, re.S)]
    formulas = ["PE[pos, 2i]   = sin(pos / 10000^(2i / d_model))", "PE[pos, 2i+1] = cos(pos / 10000^(2i / d_model))"]
    assert formulas in blocks, "the two positional-encoding formulas are no longer the two lines of one literal block"
