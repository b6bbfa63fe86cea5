"""agtool-lab's auto-grader: randomised, isolated, per-step checks of a learner's tools.py.

The packages say where code runs:

* :mod:`grader.engine`: the process boundary; the only code that runs beside
  learner code (in the step child), and the client that talks to it;
* :mod:`grader.checks`: judging, in the grading process, from the spec
  (:mod:`grader.spec`) and the observations;
* :mod:`grader.grading`: :func:`grade`, which ties the two together;
* :mod:`grader.batch`: a class's grading and its outputs;
* :mod:`grader.report`, :mod:`grader.render`: the report and its renderers.

This face loads nothing until a name is asked for (PEP 562), so
``import grader.report`` does not start the engine.

Example::

    >>> import grader
    >>> grader.grade.__module__, grader.Report.__module__
    ('grader.grading', 'grader.report')
"""

from __future__ import annotations

from grader.lazy import lazy_face

__getattr__, __all__ = lazy_face(
    __name__,
    {
        "grade": "grader.grading",
        "Report": "grader.report",
        "CheckResult": "grader.report",
        "CHECKS": "grader.checks.registry",
    },
)
