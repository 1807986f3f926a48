"""The learner edition: every chapter with the solution cells removed and outputs cleared.

A chapter marks each exercise's parts with cell tags: ``stub`` (the learner's cell,
ending in ``raise NotImplementedError``), ``solution`` (the reference answer, between
the ``solution-start`` and ``solution-end`` directives) and ``check`` (calls a checker
in :mod:`tx.exercises`). The learner edition keeps the stub and the check and drops
the solution with its two directive cells.
"""

from __future__ import annotations

import argparse
import json
import zipfile
from pathlib import Path
from typing import Any

__all__ = ["is_solution_cell", "strip_solutions", "write_learner_edition", "main"]

CHAPTERS = Path(__file__).resolve().parents[2] / "chapters"


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def is_solution_cell(cell: dict[str, Any]) -> bool:
    """True for a solution code cell and for the solution-start / solution-end directive cells."""
    if "solution" in cell.get("metadata", {}).get("tags", []):
        return True
    text = _source(cell).lstrip()
    return cell["cell_type"] == "markdown" and (
        text.startswith("```{solution-start}") or text.startswith("```{solution-end}")
        or text.startswith(":::{solution-start}") or text.startswith(":::{solution-end}")
    )


def strip_solutions(notebook: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``notebook`` (nbformat JSON) without solutions, outputs or execution counts."""
    cells = []
    for cell in notebook["cells"]:
        if is_solution_cell(cell):
            continue
        cell = json.loads(json.dumps(cell))
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
        cells.append(cell)
    return {**notebook, "cells": cells}


def write_learner_edition(out_dir: str | Path, chapters: str | Path = CHAPTERS, zip_path: str | Path | None = None) -> list[Path]:
    """Write every ``chapters/*.ipynb`` without solutions into ``out_dir``; optionally zip them too.

    Refuses to write into the chapters folder itself, so the solutions are never overwritten.
    """
    chapters, out_dir = Path(chapters).resolve(), Path(out_dir).resolve()
    if out_dir == chapters:
        raise ValueError(f"{out_dir} is the chapters folder: choose another OUTDIR so the solutions are kept.")
    sources = sorted(chapters.glob("*.ipynb"))
    if not sources:
        raise FileNotFoundError(f"no notebooks in {chapters}")
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sources:
        notebook = strip_solutions(json.loads(path.read_text(encoding="utf-8")))
        target = out_dir / path.name
        target.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(target)
    if zip_path is not None:
        zip_path = Path(zip_path)
        zip_path.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as zf:
            for target in written:
                zf.write(target, f"tx-book-learner-edition/{target.name}")
    return written


def main(argv: list[str] | None = None) -> None:
    """``python -m tx.exercises learner OUTDIR [--zip FILE]``."""
    parser = argparse.ArgumentParser(prog="python -m tx.exercises", description="Tools for the book's exercises.")
    sub = parser.add_subparsers(dest="command", required=True)
    learner = sub.add_parser("learner", help="write the chapters without solutions")
    learner.add_argument("out_dir", type=Path)
    learner.add_argument("--chapters", type=Path, default=CHAPTERS)
    learner.add_argument("--zip", type=Path, dest="zip_path", help="also write a zip of the notebooks here")
    args = parser.parse_args(argv)
    written = write_learner_edition(args.out_dir, args.chapters, args.zip_path)
    print(f"wrote {len(written)} learner notebooks to {args.out_dir}" + (f" and {args.zip_path}" if args.zip_path else ""))
