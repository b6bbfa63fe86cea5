"""The process boundary: the only part of the grader that runs beside learner code.

* :mod:`~grader.engine.protocol`: the typed messages that cross the boundary
  (jobs, results, the step child's message kinds, limits, size caps);
* :mod:`~grader.engine.client`: the grading process's side, which starts the
  fork server and sends it step jobs;
* :mod:`~grader.engine.server`: the fork server, a long-lived process that
  has LangGraph imported and forks one step child per step job;
* :mod:`~grader.engine.child`: the step child, which imports the learner's
  module and runs the probes (:mod:`~grader.engine.probes`), sending back
  encoded observations (:mod:`~grader.engine.encode`);
* :mod:`~grader.engine.sandbox`, :mod:`~grader.engine.proctree`: bubblewrap
  and process-tree clean-up.

Nothing here judges, and nothing here imports :mod:`grader.checks`,
:mod:`grader.grading` or :mod:`grader.batch` (``tests/test_layout.py``):
the child decides nothing, it observes. The spec's facts come from
:mod:`grader.spec`.
"""
