"""How long Run All takes for each notebook of the learner edition, recorded in bench/run_all_times.json.

Each notebook of the learner edition (``python -m tx.exercises learner``: solutions out,
every check failing with its hint) runs from the top in a fresh kernel with nbclient, as
Run All does in JupyterLab. The time recorded is the wall time from the first cell's start
to the last cell's reply, as nbclient stamps them in the cells' metadata (the kernel's own
start is not counted); the kernel's CPU time is recorded beside it, which a busy machine
inflates less. The chapter pages show the wall time at their exercises (``_ext/book_site.py``
reads the JSON when the book is built), so re-measure on the CI machine, quiet, and commit:

    PYTHONPATH=$PWD .venv/bin/python bench/run_all_times.py              # every notebook
    PYTHONPATH=$PWD .venv/bin/python bench/run_all_times.py 11 13        # some, merged into the JSON
    PYTHONPATH=$PWD .venv/bin/python bench/run_all_times.py --under-load # flag the figures as taken on a busy machine
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "run_all_times.json"


def machine() -> dict[str, object]:
    """What the figures were measured on."""
    import torch

    cpu = platform.processor() or platform.machine()
    try:  # Linux: the CPU's model name
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "system": platform.platform(), "python": platform.python_version(),
            "torch": torch.__version__, "torch_threads": torch.get_num_threads()}


def _stamp(cell: nbformat.NotebookNode, key: str) -> float | None:
    value = cell.get("metadata", {}).get("execution", {}).get(key)
    if not value:
        return None
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def run_all(path: Path, workdir: Path, timeout: int) -> dict[str, float | None]:
    """Run ``path`` top to bottom in a fresh kernel; its wall time (first cell to last reply) and the kernel's CPU time.

    A cell still running after ``timeout`` seconds stops the run: the notebook then took at
    least as long as it ran, recorded as ``at_least_s`` (and ``run_all_s`` None).
    """
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=False, record_timing=True,
                            resources={"metadata": {"path": str(workdir)}})
    with client.setup_kernel():
        pid = client.km.provisioner.pid if client.km.provisioner else None  # the kernel's process
        began = time.time()
        try:
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index)
        except CellTimeoutError:
            cpu = _cpu_seconds(pid)
            return {"run_all_s": None, "at_least_s": round(time.time() - began, 1),
                    "kernel_cpu_s": round(cpu, 1) if cpu is not None else None}
        cpu = _cpu_seconds(pid)
    code = [c for c in nb.cells if c.cell_type == "code"]
    began = min(t for c in code if (t := _stamp(c, "iopub.execute_input")) is not None)
    ended = max(t for c in code if (t := _stamp(c, "shell.execute_reply")) is not None)
    return {"run_all_s": round(ended - began, 1), "kernel_cpu_s": round(cpu, 1) if cpu is not None else None}


def _cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of process ``pid`` so far (Linux), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, TypeError):
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", help="notebook name prefixes (11, A1); all by default")
    parser.add_argument("--under-load", action="store_true",
                        help="record that the machine was busy with other work: the figures are too high")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--timeout", type=int, default=1800, help="seconds a cell may run before the run stops")
    args = parser.parse_args()
    from tx.exercises.learner import write_learner_edition

    record = json.loads(args.out.read_text()) if args.out.exists() and args.chapters else {"chapters": {}}
    load = os.getloadavg()
    record.update({
        "what": "wall seconds of Run All for each learner-edition notebook in a fresh kernel, first cell to last "
                "reply (bench/run_all_times.py); kernel_cpu_s is the kernel process's CPU time",
        "machine": machine(),
        "measured": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
        "load_average_at_start": [round(x, 2) for x in load],
        "under_load": args.under_load,
    })
    with tempfile.TemporaryDirectory() as tmp:
        written, _ = write_learner_edition(Path(tmp) / "edition")
        notebooks = sorted(p for p in written if p.suffix == ".ipynb"
                           and (not args.chapters or any(p.name.startswith(c) for c in args.chapters)))
        if not notebooks:
            sys.exit(f"no learner notebook starts with {args.chapters}")
        for path in notebooks:
            began = time.perf_counter()
            times = run_all(path, path.parent, args.timeout)
            record["chapters"][path.name] = times
            took = f"{times['run_all_s']:.1f} s" if times["run_all_s"] is not None else \
                f"over {times['at_least_s']:.0f} s (a cell timed out)"
            print(f"{path.name}: Run All {took} (kernel CPU {times['kernel_cpu_s']} s; "
                  f"{time.perf_counter() - began:.1f} s with the kernel's start)", flush=True)
            record["chapters"] = dict(sorted(record["chapters"].items()))
            args.out.write_text(json.dumps(record, indent=1) + "\n")  # after each: a long run keeps what it measured
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
