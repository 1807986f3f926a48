"""Run the book's notebooks for its build, several at a time, into the build's notebook cache.

``make book`` runs this before ``jupyter-book build``. Jupyter Book executes the notebooks of
a build one after another; on a machine with two cores that leaves one idle for the whole
of the longest part of the build. This script empties the build's cache
(``_build/.jupyter_cache``), runs every notebook given, ``--jobs`` at a time, each in a fresh
kernel in its own folder, with the build's settings (``_config.yml``: no errors allowed, the
per-cell timeout) and the build's environment (``TX_EXPLORER_STATIC``, ``TX_LIVE_DIR``; see
``_ext/book_site.py``), and stores each executed notebook in the cache. The build
(``execute_notebooks: cache``) then takes the outputs from there; a notebook missing from the
cache it would execute itself.

The cache is emptied first, so every ``make book`` runs every notebook, as
``execute_notebooks: force`` did: the pages show what the code does today.

After a notebook's last cell, its kernel draws each of the notebook's explorers once more
(``tx.explorer.redraw_shown``), as a learner's control change after Run All does: a later
cell that breaks an explorer's ``draw`` fails the build. That cell is not stored.

A notebook that raises stops the script at once with its traceback and exit status 1.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for the annotations: _execute imports it in the worker that runs a notebook
    import nbformat

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "_build" / ".jupyter_cache"  # Jupyter Book's default for execute.cache
LIVE = ROOT / "_build" / "live"  # _config.yml's book_site_live_dir
# Run after a notebook's last cell, then dropped: every explorer still draws (tx/explorer.py).
AFTER_LAST_CELL = "import tx.explorer\ntx.explorer.redraw_shown()"


def _execute(task: tuple[str, int]) -> tuple[str, nbformat.NotebookNode, float, str | None]:
    """One notebook run top to bottom in a fresh kernel, in the notebook's folder."""
    import nbformat
    from jupyter_cache.executors.utils import single_nb_execution

    path, timeout = task
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(AFTER_LAST_CELL))
    result = single_nb_execution(nb, cwd=str(Path(path).parent), timeout=timeout, allow_errors=False)
    nb.cells.pop()  # the cache holds the notebook as its file has it
    return path, nb, result.time, result.exc_string if result.err is not None else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--jobs", type=int, default=2, help="notebooks run at once (default 2)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell (_config.yml's execute.timeout)")
    parser.add_argument("--cache", type=Path, default=CACHE, help=f"the notebook cache (default {CACHE})")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    missing = [str(p) for p in args.notebooks if not p.is_file()]
    if missing:
        parser.error(f"no such notebook: {', '.join(missing)}")
    # Imported after the arguments are read, so that a mistyped command fails at once:
    # these bring Sphinx and jupyter-cache's database layer, seconds on a busy machine.
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    from book_site import set_kernel_environment  # this folder, _ext/

    # Notebooks run --jobs at a time share the machine's cores: each kernel gets its share
    # of threads (one, for two at a time on two cores; a chapter that fixes its own thread
    # count still does), and a thread that waits for its partner sleeps rather than spins
    # (OpenMP's default), or it burns the core another kernel needs. (Read by each kernel's
    # PyTorch and OpenMP as it starts; a value the caller set is kept.)
    threads = max(1, len(os.sched_getaffinity(0)) // args.jobs)
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    os.environ.setdefault("MKL_NUM_THREADS", str(threads))
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    set_kernel_environment(LIVE)  # what the build's own kernels see
    shutil.rmtree(args.cache, ignore_errors=True)
    cache = get_cache(str(args.cache))
    # The longest first, so that the runs end together: by the Run All times measured on the
    # CI machine (bench/run_all_times.json); a notebook not measured goes last.
    times_file = ROOT / "bench" / "run_all_times.json"
    times = json.loads(times_file.read_text(encoding="utf-8"))["chapters"] if times_file.is_file() else {}
    paths = sorted((str(p.resolve()) for p in args.notebooks),
                   key=lambda p: -times.get(Path(p).name, {}).get("run_all_s", 0.0))
    began = time.perf_counter()
    # A process pool that survives its workers' death (concurrent.futures): to stop the build
    # at the first failing notebook, the others' workers are killed, which would leave a
    # multiprocessing.Pool waiting forever on a queue lock a dead worker held.
    pool = ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn"))
    try:
        for done in as_completed([pool.submit(_execute, (p, args.timeout)) for p in paths]):
            path, nb, seconds, error = done.result()
            name = os.path.relpath(path, ROOT)
            if error is not None:
                print(f"{name}: a cell raised; the build stops here.\n{error}", file=sys.stderr, flush=True)
                pool.shutdown(wait=False, cancel_futures=True)
                for worker in multiprocessing.active_children():  # their kernels follow them
                    worker.kill()
                return 1
            record = cache.add_nb_to_project(path)
            cache.cache_notebook_bundle(CacheBundleIn(nb, record.uri, data={"execution_seconds": seconds}),
                                        check_validity=False, overwrite=True)
            print(f"{name}: ran in {seconds:.1f} s", flush=True)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    print(f"{len(paths)} notebooks in {time.perf_counter() - began:.0f} s, {args.jobs} at a time", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
