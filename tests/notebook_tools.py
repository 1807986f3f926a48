"""Reading the chapter notebooks for the hygiene and learner-edition tests."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"


def toc_chapters() -> list[Path]:
    """Every chapters/*.ipynb that _toc.yml lists, in order."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])]
    return [ROOT / f"{f}.ipynb" for f in files if f.startswith("chapters/")]


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def tags(cell: dict) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


EXERCISE = re.compile(r"^(```|:::)\{exercise\}", re.M)


def role(cell: dict) -> str | None:
    """Which part of an exercise a cell is: exercise, stub, solution-start, solution, solution-end, check."""
    text = source(cell).lstrip()
    if cell["cell_type"] == "markdown":
        if EXERCISE.search(text):
            return "exercise"
        for name in ("solution-start", "solution-end"):
            if text.startswith(f"```{{{name}}}") or text.startswith(f":::{{{name}}}"):
                return name
        return None
    for name in ("stub", "solution", "check"):
        if name in tags(cell):
            return name
    return None
