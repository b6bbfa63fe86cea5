"""Grade a whole class: find the submissions, grade them in batch workers, keep every learner's record.

Nothing here runs learner code; each task goes to :func:`grader.grading.grade`,
which runs it in the engine's step processes. The modules, in the order a
batch uses them:

* :mod:`~grader.batch.discovery`: find the submissions (folders, glob, zip);
* :mod:`~grader.batch.task`: one learner's grading task, run in a batch worker;
* :mod:`~grader.batch.pool` / :mod:`~grader.batch.dask_executor`: the executors;
* :mod:`~grader.batch.records`: the saved result of each learner;
* :mod:`~grader.batch.run`: :func:`run_batch`, which ties them together and
  writes the class outputs (:mod:`grader.outputs`) from the records;
* :mod:`~grader.batch.gradescope`: Gradescope's autograder entry point.

``from grader.batch import run_batch`` loads :mod:`grader.batch.run` only
when asked (PEP 562), so ``grader.batch.gradescope`` can be used on a core
install, without pandas or matplotlib.

Example::

    >>> from grader.batch import sanitize_learner_id
    >>> sanitize_learner_id("ana maria")
    'ana_maria'
"""

from __future__ import annotations

from grader.lazy import lazy_face

__getattr__, __all__ = lazy_face(
    __name__,
    {
        "run_batch": "grader.batch.run",
        "BatchResult": "grader.batch.run",
        "discover": "grader.batch.discovery",
        "sanitize_learner_id": "grader.outputs.learner_ids",
        "UnsafeArchive": "grader.batch.discovery",
        "load_records": "grader.batch.records",
    },
)
