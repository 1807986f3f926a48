"""_ext/execute_chapters.py: the book's notebooks run in parallel into the cache the build reads."""

from __future__ import annotations

import os
import subprocess
import sys

import nbformat
from jupyter_cache import get_cache

from notebook_tools import ROOT

SCRIPT = ROOT / "_ext" / "execute_chapters.py"


def _notebook(path, *cells):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def _run(*args, env=None):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=env)


def test_every_notebook_is_cached_as_the_build_looks_it_up(tmp_path):
    cache_dir = tmp_path / "cache"
    (cache_dir / "stale").mkdir(parents=True)  # a cache left by an earlier build is emptied
    a = _notebook(tmp_path / "a.ipynb", "import os\nprint(os.environ['TX_EXPLORER_STATIC'], os.getcwd())",
                  "print(os.environ['TX_TRAINING_RECORD'])")
    b = _notebook(tmp_path / "b.ipynb", "import os\nprint(os.environ['OMP_NUM_THREADS'])")
    # a caller that fixed no thread count: each of the 2 kernels gets half of the cores
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    done = _run(a, b, "--jobs", 2, "--cache", cache_dir, env=env)
    assert done.returncode == 0, done.stderr
    assert not (cache_dir / "stale").exists()
    cache = get_cache(str(cache_dir))
    # myst-nb's cache mode finds a notebook by its code, as read from its file
    outputs = {}
    for path in (a, b):
        record = cache.match_cache_notebook(nbformat.read(path, as_version=4))
        _, merged = cache.merge_match_into_notebook(nbformat.read(path, as_version=4))
        outputs[path.name] = merged.cells[0].outputs[0]["text"]
        assert record.data["execution_seconds"] > 0
    # the build's environment, and each notebook in its own folder
    assert outputs["a.ipynb"] == f"1 {tmp_path}\n"
    # the cell run after the last one (every explorer drawn again) is not stored
    assert [len(cache.merge_match_into_notebook(nbformat.read(p, as_version=4))[1].cells) for p in (a, b)] == [2, 1]
    # each training run recorded where the JupyterLab test replays it (tests/lab/conftest.py)
    _, merged = cache.merge_match_into_notebook(nbformat.read(a, as_version=4))
    assert merged.cells[1].outputs[0]["text"] == f"{ROOT / '_build' / 'training-record'}\n"
    assert outputs["b.ipynb"] == f"{max(1, len(os.sched_getaffinity(0)) // 2)}\n"
    assert "2 notebooks in" in done.stdout


def test_a_failure_stops_the_build_with_its_traceback_and_the_notebooks_still_running(tmp_path):
    # Two at a time: one fails while the other is still asleep. The script prints the failing
    # cell's traceback and stops without waiting for the other (before this, a killed pool
    # worker could leave it waiting forever). The failure is the one a learner met in chapter
    # 14: every cell runs, but the last one rebinds a name the explorer's draw reads, so the
    # explorer, drawn again after the last cell as a control change after Run All draws it,
    # fails (tx.explorer.redraw_shown).
    slow = _notebook(tmp_path / "slow.ipynb",
                     "import pathlib, time\ntime.sleep(30)\npathlib.Path('finished').write_text('1')")
    bad = _notebook(tmp_path / "bad.ipynb",
                    "import matplotlib.pyplot as plt\nimport tx.explorer\ntop = 1.0\n"
                    "def draw(k):\n    fig, ax = plt.subplots()\n    ax.bar([0], [k / top])\n    return fig",
                    "tx.explorer.explore(draw, k=tx.explorer.Grid([1, 2]))",
                    "top = 'a name reused below the explorer'")
    done = _run(slow, bad, "--jobs", 2, "--cache", tmp_path / "cache")
    assert done.returncode == 1
    assert "bad.ipynb: a cell raised" in done.stderr and "ExplorerError" in done.stderr
    assert "explorer draw drew its state {'k': 1} when its cell ran, but no longer" in done.stderr
    assert not (tmp_path / "finished").exists(), "the script waited for the other notebook to end"


def test_bad_arguments_say_what_is_wrong(tmp_path):
    done = _run(tmp_path / "missing.ipynb", "--cache", tmp_path / "cache")
    assert done.returncode == 2 and "no such notebook" in done.stderr
    done = _run(_notebook(tmp_path / "ok.ipynb", "1"), "--jobs", 0, "--cache", tmp_path / "cache")
    assert done.returncode == 2 and "--jobs must be at least 1" in done.stderr
