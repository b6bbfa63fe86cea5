"""The process boundary: the only part of the grader that runs beside learner code.

* :mod:`~grader.engine.protocol`: the typed messages that cross the boundary
  (jobs, results, the step child's message kinds, limits, size caps);
* :mod:`~grader.engine.client`: the grading process's side, which starts the
  fork server and sends it step jobs;
* :mod:`~grader.engine.forkserver`: the fork server, a long-lived process that
  has LangGraph imported and forks step children, each running one step job
  or several of a submission in turn: :mod:`~grader.engine.scheduling`
  decides which steps run where, :mod:`~grader.engine.step_process` is one
  step child's life cycle, :mod:`~grader.engine.step_lines` reads and checks
  the lines it sends;
* :mod:`~grader.engine.child`: the step child, which imports the learner's
  module and runs the probes (:mod:`~grader.engine.probes`), sending back
  encoded observations (:mod:`~grader.engine.encode`);
* :mod:`~grader.engine.sandbox`, :mod:`~grader.engine.proctree`: bubblewrap
  and process-tree clean-up;
* :mod:`~grader.engine.report_files`: the learner's step-8 report files
  (``tool_report.json``/``.md``), read by the fork server once a step is over.

Words with a meaning of their own here (start pipe, wake-up pipe, chain...)
are defined once, in docs/architecture.md, "Glossary".

Nothing here judges, and nothing here imports :mod:`grader.checks`,
:mod:`grader.grading` or :mod:`grader.batch` (``tests/test_layout.py``):
the child decides nothing, it observes. The spec's facts come from
:mod:`grader.spec`.
"""
