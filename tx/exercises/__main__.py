"""``python -m tx.exercises learner OUTDIR`` (:mod:`tx.exercises.learner`) and
``python -m tx.exercises course OUTDIR`` (:mod:`tx.exercises.course`)."""

import sys

if sys.argv[1:2] == ["course"]:
    from .course import main

    main(sys.argv[2:])
else:
    from .learner import main

    main()
