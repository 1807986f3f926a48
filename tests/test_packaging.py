"""The wheel that `pip install .` (or an install from the repository's URL) builds holds all of tx."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory) -> set[str]:
    """Build the wheel from a copy of what the build reads (so no build/ or egg-info lands in the clone)."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "tx", src / "tx", ignore=shutil.ignore_patterns("__pycache__", "*.tmp"))
    out = tmp_path_factory.mktemp("wheel")
    # Offline: the installed setuptools builds it, no download, no dependencies fetched.
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation",
                           "--no-index", "-q", "-w", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (wheel,) = out.glob("tx-*.whl")
    return set(zipfile.ZipFile(wheel).namelist())


def test_wheel_holds_every_module_of_every_subpackage(wheel_names):
    expected = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tx").rglob("*.py")}
    assert "tx/exercises/ch01.py" in expected
    assert expected <= wheel_names, sorted(expected - wheel_names)


def test_wheel_holds_every_checkpoint(wheel_names):
    expected = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tx" / "checkpoints").glob("*.safetensors")}
    assert expected and expected <= wheel_names, sorted(expected - wheel_names)


def test_wheel_holds_nothing_of_the_book_or_tests(wheel_names):
    assert not {n for n in wheel_names if n.startswith(("tests/", "chapters/", "bench/"))}
