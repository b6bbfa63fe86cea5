"""Course policy: the course file (due dates, late credit, attempt limits, weights), LMS exports, similarity.

* :mod:`grader.course.policy`: load and validate the course file, and
  :func:`~grader.course.policy.credit`: which attempt counts, its raw and
  credited score, and why;
* :mod:`grader.course.lms`: Canvas and Moodle grade import CSVs from a roster;
* :mod:`grader.course.similarity`: pairs of submissions sharing unusually much code.

Nothing here runs learner code: it reads reports, times and source text.

Example::

    >>> from grader.course.policy import parse_policy
    >>> parse_policy('[assignment]\\ndue = 2026-03-01T23:59:00Z\\n').counts
    'best'
"""
