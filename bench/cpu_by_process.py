"""Where a command's CPU goes: every process's CPU time, summed by kind (kernels, Chromium, pip...).

bench/cpumeter.sh says how much CPU the whole machine spent on a command; this says on what.
It samples /proc once a second while the command runs and keeps each process's last reading of
user + system time (less what it had used before the command started), so a process that lives
under a second may be missed. Linux only.

    python bench/cpu_by_process.py --out /tmp/cpu.json -- make test

prints the CPU-seconds of each kind, largest first, and writes every process's to --out.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import threading

TICK = os.sysconf("SC_CLK_TCK")

# (what the command line holds, the kind it is counted as), first match wins
KINDS = [
    ("--type=renderer", "Chromium renderers"),
    ("--type=gpu-process", "Chromium GPU process"),
    ("chromium", "Chromium, other processes"),
    ("ipykernel", "Jupyter kernels"),
    ("jupyterlab", "JupyterLab server"),
    ("jupyter-book", "jupyter-book (Sphinx)"),
    ("import sys;exec(eval(sys.stdin.readline()))", "pytest-xdist workers"),
    ("multiprocessing", "multiprocessing children (build pool, DDP)"),
    ("tests/site", "pytest, site tests"),
    ("tests/lab", "pytest, JupyterLab test"),
    (" pip ", "pip"),
    ("-m pip", "pip"),
    ("playwright", "Playwright driver"),
    ("npm", "npm"),
    ("torchrun", "torchrun"),
    ("-m tx.", "python -m tx.* commands"),
    ("pytest", "pytest, unit tests (and their subprocesses)"),
]


def kind(command: str) -> str:
    for needle, name in KINDS:
        if needle in command:
            return name
    return "other: " + command.split(" ")[0].rsplit("/", 1)[-1][:40]


def sample(seen: dict, base: dict, first: bool) -> None:
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                command = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if not command:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        key = (pid, fields[19])  # the pid and the process's start time
        cpu = (int(fields[11]) + int(fields[12])) / TICK
        if first:
            base[key] = cpu
        seen[key] = (command, cpu - base.get(key, 0.0))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="write every process's CPU-seconds here (JSON)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to measure after --, e.g. -- make test")
    seen: dict = {}
    base: dict = {}
    sample(seen, base, first=True)
    done = threading.Event()

    def loop() -> None:
        while not done.wait(1.0):
            sample(seen, base, first=False)

    sampler = threading.Thread(target=loop, daemon=True)
    sampler.start()
    status = subprocess.call(command)
    done.set()
    sampler.join()
    sample(seen, base, first=False)
    me = str(os.getpid())
    processes = sorted(((c, round(s, 2)) for (pid, _), (c, s) in seen.items() if pid != me and s > 0),
                       key=lambda p: -p[1])
    totals = collections.Counter()
    for c, s in processes:
        totals[kind(c)] += s
    for name, seconds in totals.most_common():
        print(f"{seconds:8.1f} CPU-s  {name}")
    print(f"{sum(totals.values()):8.1f} CPU-s  in all")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"command": command, "totals": totals.most_common(), "processes": processes}, f, indent=1)
    return status


if __name__ == "__main__":
    sys.exit(main())
