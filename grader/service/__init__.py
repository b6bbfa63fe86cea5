"""The classroom grading service (``agtool-grade serve``, extra ``service``): a JupyterHub service.

Learners submit their ``tools.py`` from the notebook; each attempt is stored
(``db``), graded in worker processes (``queue``: learner code never runs in
the service's process), and shown to the learner and to instructors through
a JSON API and pages (``app``, ``pages``, ``classview``). ``cli`` holds the
``serve`` options; ``server`` runs it all.

May import: ``grader.batch`` and everything below it; nothing imports this
package but the command line.
"""
