"""``python -m tx.exercises learner OUTDIR``: see :mod:`tx.exercises.learner`."""

from .learner import main

main()
