"""Run a batch's grading tasks on a Dask distributed cluster.

``agtool-grade batch ... --executor dask --scheduler tcp://host:8786`` sends
each :class:`grader.batch.task.GradeTask` (the learner's source bytes travel with
it, so workers need no shared file system) to the cluster. Each Dask worker
process grades with ``grader.grading.grade`` and so keeps its own warm runner
between tasks. The parent writes every result file and builds the outputs,
exactly as with the local pool, so both executors give the same files.

Time limits: learner code runs in the grader's child processes (forked by
the warm runner, a plain subprocess of the Dask worker), which the grader
kills on its per-step ``timeout``; the Dask worker itself runs no learner
code, so unlike the local pool there is no need to kill a worker.

Example::

    >>> from distributed import LocalCluster                         # doctest: +SKIP
    >>> with LocalCluster(n_workers=2, processes=True) as cluster:    # doctest: +SKIP
    ...     run_batch("class/", "out/", executor="dask", scheduler=cluster.scheduler_address)
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

from grader.batch.task import failed_report, grade_task
from grader.messages import cluster_failed
from grader.report import FailureKind


def run_on_dask(tasks: list, *, scheduler, grade_fn=None) -> Iterator[tuple[object, dict]]:
    """Grade ``tasks`` on the cluster at ``scheduler`` (an address or a ``distributed.Client``).

    Yields ``(task, report dict)`` in completion order. A task that fails on
    the cluster (a worker lost twice, an unexpected error) yields a report
    where every check failed with that reason, so it costs one row only.
    """
    try:
        from distributed import Client, as_completed
    except ImportError as exc:
        raise RuntimeError(
            "--executor dask needs Dask distributed: pip install 'agtool-lab[dask]' "
            "(or, in a checkout, pip install -e '.[dask]')"
        ) from exc

    if not tasks:
        return
    own_client = not isinstance(scheduler, Client)
    client = Client(scheduler) if own_client else scheduler
    try:
        futures = {
            client.submit(
                grade_task,
                task,
                grade_fn,
                pure=False,
                retries=1,
                key=f"agtool-grade-{task.learner}-{uuid.uuid4().hex[:8]}",
            ): task
            for task in tasks
        }
        for future in as_completed(futures):
            task = futures[future]
            try:
                report = future.result()
            except Exception as exc:  # the cluster's failure, not the learner's
                report = failed_report(
                    task.seed,
                    task.display,
                    cluster_failed(exc),
                    steps=task.steps,
                    only=task.only,
                    kind=FailureKind.GRADER,
                ).to_dict()
            future.release()
            yield task, report
    finally:
        if own_client:
            client.close()
