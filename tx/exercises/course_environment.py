"""The environment of a course's students and grader: ``requirements.txt`` and a ``Dockerfile``.

The course (``python -m tx.exercises course``) writes both from the book's lock files: the
learner edition's exact packages (``requirements-learner.lock``) and nbgrader with every
package it needs, as ``requirements.lock`` pins them, each with its hashes. ``tx`` itself is
not on PyPI: it comes from the learner edition's wheel, put beside the Dockerfile.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["lock_blocks", "course_requirements", "DOCKERFILE"]

_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==")


def lock_blocks(text: str) -> dict[str, tuple[str, set[str]]]:
    """``{package: (its block of the lock, the packages it is there for)}``: a pinned line, its
    hashes, and its ``# via`` lines, as ``uv pip compile`` writes them."""
    blocks: dict[str, tuple[str, set[str]]] = {}
    name, lines, via = None, [], set()
    for line in text.splitlines() + [""]:
        found = _NAME.match(line)
        if found or (not line.startswith((" ", "#")) and name):
            if name:
                blocks[name] = ("\n".join(lines), via)
            name, lines, via = (found.group(1).lower(), [line], set()) if found else (None, [], set())
            continue
        if name:
            lines.append(line)
            comment = line.strip().lstrip("#").strip()
            if comment.startswith("via "):
                comment = comment[4:]
            if comment and comment != "via" and not comment.startswith(("-r ", "-c ")):
                via.add(comment.split()[0].lower())
    return blocks


def course_requirements(root: Path) -> str:
    """``requirements.txt`` of a course: the learner lock's packages, and nbgrader's and the feedback's
    (latex2mathml) from the book's lock."""
    learner = lock_blocks((root / "requirements-learner.lock").read_text(encoding="utf-8"))
    book = lock_blocks((root / "requirements.lock").read_text(encoding="utf-8"))
    needed = {"nbgrader", "latex2mathml"}  # latex2mathml: the feedback's math (tx.exercises.feedback)
    while True:  # every package the lock has for nbgrader, or for one of those
        more = {name for name, (_, via) in book.items() if via & needed} - needed
        if not more:
            break
        needed |= more
    chosen = {name: block for name, (block, _) in learner.items()}
    chosen.update({name: book[name][0] for name in needed if name not in chosen})
    head = ("# The course's environment, for students and grader alike: the learner edition's packages\n"
            "# (requirements-learner.lock) and nbgrader's (requirements.lock), each pinned with its hashes.\n"
            "# pip install --require-hashes --no-deps -r requirements.txt "
            "--extra-index-url https://download.pytorch.org/whl/cpu\n"
            "# then tx from the learner edition's wheel: pip install --no-deps tx-*.whl\n")
    return head + "\n".join(chosen[name] for name in sorted(chosen)) + "\n"


DOCKERFILE = """\
# The course's environment, for a JupyterHub image or a grading machine: Python 3.11 (the
# version the book's lock files are for), the packages of requirements.txt, and tx from the
# learner edition's wheel (unzip learner-edition.zip and put its tx-*.whl beside this file).
#   docker build -t transformer-course .
FROM python:3.11-slim
COPY requirements.txt /tmp/requirements.txt
RUN pip install --no-cache-dir --require-hashes --no-deps -r /tmp/requirements.txt \\
        --extra-index-url https://download.pytorch.org/whl/cpu
COPY tx-*.whl /tmp/
RUN pip install --no-cache-dir --no-deps /tmp/tx-*.whl && rm /tmp/tx-*.whl /tmp/requirements.txt
# Grade as a user who owns nothing else (teachers.md, "Marks a student cannot game").
RUN useradd --create-home grader
USER grader
WORKDIR /home/grader
"""
