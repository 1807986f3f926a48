"""tx's own source in a page: the code a chapter shows is the code the tests run."""

from __future__ import annotations

from typing import Any

__all__ = ["show_source"]


def show_source(obj: Any) -> Any:
    """tx's own source code for ``obj`` as a highlighted block: a page shows the code the tests run.

    ``obj`` may be a method (``tx.MultiHeadAttention.forward``), to show only the part a chapter
    teaches; its class indentation is removed.
    """
    import inspect
    import textwrap

    from IPython.display import Code

    return Code(textwrap.dedent(inspect.getsource(obj)), language="python")
