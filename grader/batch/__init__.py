"""Class outputs: grade a whole class and write what instructors and LMSs read.

Nothing here runs learner code; each task goes to :func:`grader.grading.grade`,
which runs it in the engine's step processes. The modules, in the order a
batch uses them:

* :mod:`~grader.batch.discovery`: find the submissions (folders, glob, zip);
* :mod:`~grader.batch.task`: one learner's grading task, run in a batch worker;
* :mod:`~grader.batch.pool` / :mod:`~grader.batch.dask_executor`: the executors;
* :mod:`~grader.batch.records`: the saved result of each learner;
* :mod:`~grader.batch.run`: :func:`run_batch`, which ties them together;
* :mod:`~grader.batch.gradebook`, :mod:`~grader.batch.plots`,
  :mod:`~grader.batch.gradescope`: the class outputs, from the records.

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

__getattr__, __all__ = lazy_face(__name__, {
    "run_batch": "grader.batch.run",
    "BatchResult": "grader.batch.run",
    "discover": "grader.batch.discovery",
    "sanitize_learner_id": "grader.batch.discovery",
    "UnsafeArchive": "grader.batch.discovery",
    "load_records": "grader.batch.records",
})
