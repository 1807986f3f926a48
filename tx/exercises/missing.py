"""A check cell whose answer is not defined says why in one line, in Jupyter.

When an answer cell fails (a syntax error, say), the function it defines never exists, and the
check cell below it stops on Python's ``NameError`` before any checker runs: a traceback
where the chapter promised a hint. Imported in IPython, :mod:`tx.exercises` installs a
handler for ``NameError`` that, in a check cell only (one that calls ``tx.exercises....check_...(``),
shows one line instead: the name, and what happened to the cell that should have defined it
("the cell that defines it has a SyntaxError on line 2 (...)"). Every other ``NameError`` shows IPython's own
traceback, and a handler someone else installed is left in place.
"""

from __future__ import annotations

import functools
import linecache
import re
from typing import Any, Callable

__all__ = ["hint", "install"]

_CHECK = re.compile(r"\btx\.exercises\.\w+\.check_\w+\(")


def hint(name: str, cell: str, history: list[str]) -> str | None:
    """The one line for ``NameError: name`` raised in ``cell``, given the cells run before it
    (oldest first); None when ``cell`` is not a check cell that reads ``name``."""
    if not _CHECK.search(cell) or not re.search(rf"\b{re.escape(name)}\b", cell):
        return None
    defines = re.compile(rf"^[ \t]*(?:def|class)[ \t]+{re.escape(name)}\b|^{re.escape(name)}[ \t]*=", re.M)
    source = next((earlier for earlier in reversed(history) if defines.search(earlier)), None)
    if source is None:
        return (f"{name} is not defined: write it in the answer cell above (its stub names it), run that "
                "cell, then this one.")
    try:
        compile(source, "<answer cell>", "exec")
    except SyntaxError as error:
        return (f"{name} is not defined: the cell that defines it has a {type(error).__name__} on line "
                f"{error.lineno} ({error.msg}); fix it, run it without errors, then run this cell.")
    return (f"{name} is not defined: the cell that defines it stopped on an error before it got there; "
            "run it without errors, then this cell.")


def _show(frame_of: Callable[[BaseException], tuple[str, int] | None], failed: type[Exception], shell: Any,
          etype: type, value: BaseException, tb: Any, tb_offset: int | None = None) -> None:
    frame = frame_of(value)
    cell = "".join(linecache.getlines(frame[0])) if frame else ""
    history = [str(c) for c in shell.user_ns.get("In", [])]
    if history and cell and history[-1].strip() == cell.strip():  # IPython keeps the running cell in In too
        history.pop()
    said = hint(getattr(value, "name", None) or "", cell, history)
    if said is None:
        stb = shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)
    else:
        stb = failed(said)._render_traceback_()  # as a failed check shows
    shell._showtraceback(etype, value, stb)


def install(frame_of: Callable[[BaseException], tuple[str, int] | None], failed: type[Exception]) -> None:
    """In IPython, show a check cell's missing answer as :func:`hint` says (once; no other handler
    replaced). ``frame_of(error)`` is the ``(file, line)`` of the learner's code the error came
    through (:func:`tx.exercises.learners_frame`): the check cell's; ``failed`` is
    :class:`tx.exercises.CheckFailed`, whose one red line the hint is shown as."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None or shell.custom_exceptions:
        return
    shell.set_custom_exc((NameError,), functools.partial(_show, frame_of, failed))
