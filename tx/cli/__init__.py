"""The commands, one module each; the teaching code they run lives in the modules above them.

=============================================  ===========================  ============================
command                                        module                       runs
=============================================  ===========================  ============================
``python -m tx.train [--tsv FILE]``             :mod:`tx.cli.train`          :func:`tx.train.fit`
``python -m tx.lm_train --translate``           :mod:`tx.cli.lm_train`       :func:`tx.lm_train.fit_lm`
=============================================  ===========================  ============================

``python -m tx.train`` and ``python -m tx.lm_train`` stay the commands' names: the packages'
``__main__.py`` (``tx/train/__main__.py``, ``tx/lm_train/__main__.py``) hand over to these
modules, which import the packages, never the other way. The other
commands are small enough to sit in their own modules: ``python -m tx.translate``,
``python -m tx.export`` and ``python -m tx.exercises learner``.
"""
