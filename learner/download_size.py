"""Write into a lock how much its packages weigh: ``python learner/download_size.py LOCK WHEELS_DIR``.

``make lock`` downloads the learner lock's files for Linux x86-64 and Python 3.11 into
WHEELS_DIR (``pip download``), then runs this, which sums their sizes into a comment line of
the lock, ``# tx-download-bytes: total=N torch=N``. The learner's ``install.py`` reads it to
say how much it will download before it starts.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

LINE = re.compile(r"^# tx-download-bytes: .*\n", re.M)


def main(lock: Path, wheels: Path) -> None:
    files = sorted(p for p in wheels.iterdir() if p.is_file())
    if not files:
        raise SystemExit(f"download_size.py: {wheels} holds no downloaded files: run pip download into it first.")
    total = sum(p.stat().st_size for p in files)
    torch = sum(p.stat().st_size for p in files if p.name.lower().startswith("torch-"))
    if not torch:
        raise SystemExit(f"download_size.py: no torch wheel in {wheels}: the lock should name torch.")
    text = LINE.sub("", lock.read_text(encoding="utf-8"))
    line = f"# tx-download-bytes: total={total} torch={torch} (Linux x86-64, Python 3.11; written by make lock)\n"
    lines = text.splitlines(keepends=True)
    at = next((i for i, row in enumerate(lines) if not row.startswith("#")), len(lines))  # after the header comment
    lock.write_text("".join(lines[:at] + [line] + lines[at:]), encoding="utf-8")
    print(f"{lock}: {len(files)} files, {total / 1e6:,.0f} MB to download, torch {torch / 1e6:,.0f} MB")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__.splitlines()[0])
    main(Path(sys.argv[1]), Path(sys.argv[2]))
