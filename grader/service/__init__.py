"""The classroom grading service (``agtool-grade serve``, extra ``service``): a JupyterHub service.

Learners submit their ``tools.py`` from the notebook; each attempt is stored
(``db``), graded in worker processes (``queue``: learner code never runs in
the service's process; ``fairness`` shares the workers between learners),
and shown to the learner and to instructors through
a JSON API (the ``api`` package) and pages (the ``handlers`` package; every
page a Jinja template of ``templates/`` with autoescape, drawn from the plain
data of ``pages``, ``code_pages``, ``action_pages`` and ``lti_pages``;
``layout`` holds the one environment); ``app`` only wires the routes, and
``base`` is what every handler shares. The course policy is applied to
stored attempts by ``attempt_policy``; the class's downloads are
:mod:`grader.outputs`' own functions (``exports`` names and caches them).
Instructor actions (extensions, extra attempts, overrides, regrades,
regrade requests) are recorded by ``actions_db`` and checked and applied by
``actions``.
``command`` holds the ``serve`` options (``options``: their plain values);
``serve`` runs it all; ``hubauth`` caches the hub's answers about tokens.

May import: ``grader.batch``, ``grader.outputs``, ``grader.course`` and
everything below them, and ``grader.engine.sandbox`` (the start-up check of
the isolation); nothing imports this package but the command line.
"""
