"""``python -m tx.train``: the command lives in :mod:`tx.cli.train` (this package is the
training a chapter teaches; the command, run as ``__main__``, imports it, not the other way)."""

from ..cli.train import main

main()
