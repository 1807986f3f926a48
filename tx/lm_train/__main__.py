"""``python -m tx.lm_train``: the command lives in :mod:`tx.cli.lm_train` (this package is the
training a chapter teaches; the command, run as ``__main__``, imports it, not the other way)."""

from ..cli.lm_train import main

main()
