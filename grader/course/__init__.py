"""Course policy: the course file (due dates, late credit, attempt limits, weights) and what it credits.

* :mod:`grader.course.policy`: load and validate the course file, and
  :func:`~grader.course.policy.credit`: which attempt counts, its raw and
  credited score, and why; a course of several assignments
  (:class:`~grader.course.policy.Course`, :func:`~grader.course.policy.load_course`)
  credits each assignment's steps under its own dates
  (:func:`~grader.course.policy.credit_assignment`).

The lowest floor of the class's side: the class outputs (:mod:`grader.outputs`,
LMS files and similarity included) carry its credit; it imports none of them.
Nothing here runs learner code: it reads reports and times.

Example::

    >>> from grader.course.policy import parse_policy
    >>> parse_policy('[assignment]\\ndue = 2026-03-01T23:59:00Z\\n').counts
    'best'
"""
