"""nbgrader's feedback pages, readable offline: the math in them written as MathML.

nbgrader's feedback template loads MathJax from a CDN to typeset the notebook's ``$...$``, so
a student who opens the page offline, or behind a network that blocks the CDN, reads raw TeX.
The course's ``nbgrader_config.py`` adds :class:`MathAsMathML` to ``generate_feedback``: it
rewrites each Markdown cell's math as MathML (``latex2mathml``), which every current browser
draws itself, and the course's own ``templates/base/mathjax.html.j2`` loads nothing.
"""

from __future__ import annotations

import html
import re
from typing import Any

from nbgrader.preprocessors import NbGraderPreprocessor

__all__ = ["MathAsMathML", "math_as_mathml", "NO_MATHJAX"]

# Code (fenced blocks, then inline spans) is left as it is; math is $$...$$ (a display) or $...$
# (inline: no space inside either dollar, and not a price: "costs $5 and $6").
_CODE = re.compile(r"(^```.*?^```[ \t]*$|`[^`\n]+`)", re.S | re.M)
_MATH = re.compile(r"\$\$(?P<display>.+?)\$\$|(?<![\\$\w])\$(?P<inline>[^\s$](?:[^$\n]*?[^\s\\$])?)\$(?!\d)",
                   re.S)

NO_MATHJAX = """\
{#- The course's feedback pages: their math is MathML already (tx.exercises.feedback), so the
    page loads no MathJax, from the internet or elsewhere. The page's own styles go here, the
    one place of nbgrader's feedback template that the course's templates replace: a hint
    wraps on a narrow screen. -#}
{%- macro mathjax(url="") -%}
<style>
math[display="block"] { margin: 0.8em 0; }
math { font-size: 1.1em; }
.output_area pre { white-space: pre-wrap; overflow-wrap: anywhere; }
</style>
{%- endmacro %}
"""
"""The course's ``templates/base/mathjax.html.j2``, in place of nbconvert's, which loads MathJax."""


def _mathml(tex: str, display: bool) -> str:
    from latex2mathml.converter import convert

    try:
        return convert(tex.strip(), display="block" if display else "inline")
    except Exception:  # noqa: BLE001 - TeX the converter does not know stays readable as TeX
        return f"<code>{html.escape(tex)}</code>"


def math_as_mathml(markdown: str) -> str:
    """``markdown`` with every ``$...$`` and ``$$...$$`` outside code written as MathML."""

    def rewrite(text: str) -> str:
        return _MATH.sub(lambda m: _mathml(m.group("display") or m.group("inline"), m.group("display") is not None),
                         text)

    pieces = _CODE.split(markdown)
    return "".join(piece if i % 2 else rewrite(piece) for i, piece in enumerate(pieces))


class MathAsMathML(NbGraderPreprocessor):
    """``generate_feedback``'s step that writes each Markdown cell's math as MathML."""

    def preprocess_cell(self, cell: Any, resources: Any, index: int) -> tuple[Any, Any]:
        if cell.cell_type == "markdown":
            cell.source = math_as_mathml(cell.source)
        return cell, resources
