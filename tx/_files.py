"""The files tx writes: each lands whole or not at all, and says which format version wrote it.

Checkpoints, training states and the book's training records all go through
:func:`atomic_write`, so none of them can be left half-written over a good file, and an
overwritten file keeps its mode (a checkpoint made private with ``chmod 600`` stays so).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

FORMAT_VERSION = 1
"""The format of the checkpoints tx writes (metadata key ``format_version``; a file without one is 1).
Raise it when a file written from now on would not load in the tx of today."""


class NewerFormatError(ValueError):
    """A file this tx is too old to read: a newer tx wrote it."""


@contextmanager
def atomic_write(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` to write the whole file to; it then replaces ``path`` in one rename.

    An error in the ``with`` block (or a crash) leaves the old file whole and no temporary file.
    The new file is flushed to disk before the rename; it keeps the mode of the file it replaces,
    and a new file gets the mode every new file gets (0666 less the umask), whatever mode the
    library that wrote it chose (safetensors makes its files 0600).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # one per process: two runs may write one path
    try:
        tmp.unlink(missing_ok=True)  # a killed run's leftover would keep its own mode
        tmp.open("xb").close()
        mode = stat.S_IMODE((path if path.exists() else tmp).stat().st_mode)
        yield tmp
        os.chmod(tmp, mode)
        with tmp.open("r+b") as f:
            os.fsync(f.fileno())  # the bytes reach the disk before the name does: no empty file after a power cut
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def check_format_version(path: str | os.PathLike, metadata: dict[str, str]) -> None:
    """Refuse a file whose ``format_version`` is newer than this tx's, saying how to update."""
    version = metadata.get("format_version", "1")  # files written before versions existed are version 1
    if not version.isdigit():
        raise ValueError(f"{path} has damaged metadata (format_version {version!r} is not a whole number); "
                         "restore the file from a copy or write it again.")
    if int(version) > FORMAT_VERSION:
        raise newer_tx(path, f"format version {version}; this tx reads version {FORMAT_VERSION} and older")


def newer_tx(path: str | os.PathLike, what: str) -> NewerFormatError:
    """The error for a file a newer tx wrote: ``what`` this tx does not know, and how to update."""
    return NewerFormatError(
        f"{path} was written by a newer tx ({what}). Update tx to read it: git pull in your copy "
        "of the book (or pip install -U tx where tx came from a package), then load it again."
    )
