"""The classroom grading service (``agtool-grade serve``, extra ``service``): a JupyterHub service.

Learners submit their ``tools.py`` from the notebook; each attempt is stored
(``db``), graded in worker processes (``queue``: learner code never runs in
the service's process; ``fairness`` shares the workers between learners),
and shown to the learner and to instructors through
a JSON API and pages (``app``, ``pages``, ``classview``); the course policy
is applied to stored attempts by ``attempt_policy``; the class's downloads are
:mod:`grader.outputs`' own functions (``exports`` names and caches them).
Instructor actions (extensions, extra attempts, overrides, regrades,
regrade requests) are recorded by ``actions_db``, checked and applied by
``actions``, served by ``action_handlers`` and shown by ``action_pages``.
``command`` holds the ``serve`` options (``options``: their plain values);
``serve`` runs it all; ``hubauth`` caches the hub's answers about tokens.

May import: ``grader.batch``, ``grader.outputs``, ``grader.course`` and
everything below them, and ``grader.engine.sandbox`` (the start-up check of
the isolation); nothing imports this package but the command line.
"""
