"""Math typeset when the book is built: the pages carry finished formulas, and no MathJax.

A local Sphinx extension (``_config.yml``, ``sphinx.local_extensions``), the book's HTML math
renderer in place of ``sphinx.ext.mathjax``. MathJax 3 runs once, in node, while Sphinx writes
the pages (``typeset_math.js``, from the npm packages ``make vendor`` installs), and each
formula goes into its page as MathJax's CommonHTML output, what MathJax in the browser made
before, with its MathML beside it for screen readers. A reader's browser downloads no
typesetting script (MathJax's was 1.2 MB a page, and typesetting a chapter's formulas took
about a CPU-second), formulas are in place at the first paint, and none is a Tab stop.

The markup around each formula is ``sphinx.ext.mathjax``'s: a ``span.math`` inline, a
``div.math`` displayed, with its number and permalink; ``_ext/static/tx-math.js`` still fits
wide display equations to a phone. The glyphs' stylesheet, with ``@font-face`` rules for
MathJax's fonts (served from ``_static/mathjax/fonts/``), is written at the end of the build
to ``_static/tx-math.css``, which every page links. A formula that is not valid TeX stops the
build with its page and its TeX.
"""

from __future__ import annotations

import atexit
import json
import shutil
import subprocess
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.locale import _
from sphinx.util.math import get_node_equation_number

HERE = Path(__file__).resolve().parent
STYLESHEET = "tx-math.css"
FONTS = "mathjax/fonts"  # under _static/, from `make vendor`; relative to the stylesheet


class Typesetter:
    """MathJax in a node process: TeX in, CommonHTML out, one formula at a time."""

    def __init__(self, mathjax: Path) -> None:
        node = shutil.which("node")
        if node is None:
            raise ExtensionError("node is not on PATH: the book's math is typeset with MathJax in node "
                                 "(install Node.js, as `make vendor` needs it for npm).")
        if not (mathjax / "node-main.js").is_file():
            raise ExtensionError(f"{mathjax} has no MathJax: run `make vendor` (`make book` does) before "
                                 "building the book.")
        self.process = subprocess.Popen([node, str(HERE / "typeset_math.js"), str(mathjax), FONTS],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        atexit.register(self.close)

    def ask(self, request: dict) -> dict:
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise ExtensionError("MathJax stopped (its message is above).")
        return json.loads(line)

    def typeset(self, tex: str, display: bool) -> str:
        reply = self.ask({"tex": tex, "display": display})
        if "error" in reply:
            raise ValueError(reply["error"])
        return reply["html"]

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=30)


def _typesetter(app: Sphinx) -> Typesetter:
    if getattr(app, "_tx_typesetter", None) is None:
        app._tx_typesetter = Typesetter(Path(app.confdir, app.config.static_math_mathjax_dir))
    return app._tx_typesetter


def _typeset(translator, node: nodes.Element, tex: str, display: bool) -> str:
    try:
        return _typesetter(translator.builder.app).typeset(tex, display)
    except ValueError as error:
        where = f"{node.source}:{node.line}" if node.source else translator.builder.current_docname
        raise ExtensionError(f"{where}: the formula {tex!r} is not valid TeX: {error}") from None


def visit_math(self, node: nodes.math) -> None:
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate nohighlight"))
    self.body.append(_typeset(self, node, node.astext(), display=False) + "</span>")
    raise nodes.SkipNode


def visit_displaymath(self, node: nodes.math_block) -> None:
    # sphinx.ext.mathjax's markup: the number and its permalink, then the formula
    self.body.append(self.starttag(node, "div", CLASS="math notranslate nohighlight"))
    if node["number"] and not node["nowrap"]:
        self.body.append(f'<span class="eqno">({get_node_equation_number(self, node)})')
        self.add_permalink_ref(node, _("Link to this equation"))
        self.body.append("</span>")
    if node["nowrap"]:  # an amsmath environment, as written
        tex = node.astext()
    else:
        # more than one equation (a blank line between): aligned, as sphinx.ext.mathjax does
        parts = [p for p in node.astext().split("\n\n") if p.strip()]
        parts = [rf"\begin{{split}}{p}\end{{split}}" if r"\\" in p else p for p in parts]
        tex = r"\begin{aligned}" + r"\\".join(parts) + r"\end{aligned}" if len(parts) > 1 else parts[0]
    self.body.append(_typeset(self, node, tex, display=True) + "</div>\n")
    raise nodes.SkipNode


def css_rules(css: str) -> list[str]:
    """The stylesheet's top-level rules, each whole. A brace inside a quoted string (the
    glyph of "{" is ``content: "{"``) or inside a nested block does not end a rule: a pattern
    that thought it did split that glyph's rule in two and dropped the next one, the space's,
    so that every space of a ``\\text{...}`` vanished."""
    rules, start, depth, quote, i = [], 0, 0, None, 0
    while i < len(css):
        c = css[i]
        if quote:
            if c == "\\":
                i += 1  # an escaped character, a quote too
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                rules.append(css[start:i + 1].strip())
                start = i + 1
        i += 1
    return rules


def write_stylesheet(app: Sphinx, exception: Exception | None) -> None:
    """_static/tx-math.css: the glyphs of every formula typeset, added to what an earlier
    build of the same folder wrote (a build that writes only the changed pages typesets
    only theirs)."""
    typesetter = getattr(app, "_tx_typesetter", None)
    if exception is not None or app.builder.format != "html":
        if typesetter is not None:
            typesetter.close()
        return
    path = Path(app.outdir, "_static", STYLESHEET)
    rules = dict.fromkeys(css_rules(path.read_text(encoding="utf-8"))) if path.exists() else {}
    if typesetter is not None:
        css = typesetter.ask({"css": True})["css"]
        typesetter.close()
        rules.update(dict.fromkeys(css_rules(css)))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n\n".join(rules) + "\n", encoding="utf-8")


def setup(app: Sphinx) -> dict:
    app.add_config_value("static_math_mathjax_dir", "_build/npm/node_modules/mathjax/es5", "env", [str])
    # _config.yml's html_math_renderer names it
    app.add_html_math_renderer("tx_static", (visit_math, None), (visit_displaymath, None))
    app.add_css_file(STYLESHEET)
    app.connect("build-finished", write_stylesheet)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": False}

