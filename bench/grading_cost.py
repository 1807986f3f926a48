"""What grading a class costs: seconds of one core per submission, assignment by assignment.

    python bench/grading_cost.py [--repeat 3] [--out bench/grading_cost.json]

For each assignment of the course (written from chapters/ into a temporary folder), the
grader's process for it starts once (``start_s``: the assignment's read-only cells, torch and
tx imported) and then grades ``--repeat`` submissions with the instructor's solutions, the
dearest kind (every check runs to the end, its hidden tests on the course's own inputs
included; a wrong answer stops at its first failure):
``solved_s`` is their mean wall time on one thread, about the CPU time the grader and its
sandboxes use, as they take turns. nbgrader's own work per notebook comes on top and is not
measured here. Run it on a quiet machine (OMP_NUM_THREADS=1, as `make course` runs).
teachers.md quotes the result (through _ext/book_site.py).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/grading_cost.json")
    args = parser.parse_args()
    from tx.exercises import course_check
    from tx.exercises.course import write_course

    results, work = {}, Path(tempfile.mkdtemp(prefix="tx-grading-cost-"))
    write_course(work / "course", ROOT / "chapters")
    course_check._run_nbgrader(["generate_assignment", "*", "--force"], work / "course")
    for a in sorted(p.name for p in (work / "course/release").iterdir()):
        # One grader per measurement, run as a child so that its CPU (and its sandboxes') is counted.
        code = f"""
import json, sys, time, resource
from pathlib import Path
from tx.exercises import course_check as cc
def _role(cell):  # as the gradebook would say: the answers, the checks, the rest read-only
    meta = cell["metadata"].get("nbgrader", dict())
    return "answer" if meta.get("solution") else "check" if meta.get("grade") else "given"
from tx.exercises.grading import Limits, grade_cells
release = json.loads(next(Path({str(work)!r}, "course/release/{a}").glob("*.ipynb")).read_text())
source = json.loads(next(Path({str(work)!r}, "course/source/{a}").glob("*.ipynb")).read_text())
nb = cc._submission(release, cc._exercises(release, source), cc.SOLVED)
# a check runs as the gradebook holds it, its hidden tests (the course's own inputs) included
teachers = {{c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"]) for c in source["cells"]
            if c["cell_type"] == "code" and c["metadata"].get("nbgrader", dict()).get("grade")}}
def _source(cell):
    meta = cell["metadata"].get("nbgrader", dict())
    return teachers[meta["grade_id"]] if meta.get("grade") else "".join(cell["source"])
cells = [dict(index=i, role=_role(c), source=_source(c), points=1.0) for i, c in enumerate(nb["cells"])
         if c["cell_type"] == "code"]
def cpu():
    u, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime + c.ru_utime + c.ru_stime
from tx.exercises import grading
master = grading._Master()
zygote = grading._Zygote(master, [c for c in cells if c["role"] == "given"])
spent = []
for _ in range({args.repeat}):
    before = cpu(); t = time.perf_counter(); zygote.grade(cells, Limits())
    spent.append(time.perf_counter() - t)
zygote.close()
master.close()
print(json.dumps(spent))
"""
        before = cpu_of_children()
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={**os.environ, "OMP_NUM_THREADS": "1"})
        total_cpu = cpu_of_children() - before
        grading_wall = json.loads(out.stdout.strip().splitlines()[-1])
        solved = sum(grading_wall) / len(grading_wall)
        results[a] = {"solved_s": round(solved, 2), "start_s": round(total_cpu - sum(grading_wall), 2)}
        print(a, results[a], flush=True)
    shutil.rmtree(work, ignore_errors=True)
    record = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
              "date": time.strftime("%Y-%m-%d"), "repeat": args.repeat, "assignments": results,
              "solved_s_max": max(r["solved_s"] for r in results.values()),
              "solved_s_total": round(sum(r["solved_s"] for r in results.values()), 1)}
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
