"""One learner's grading task: picklable data in, ``Report.to_dict()`` out, in a batch worker.

Learner code never runs in the worker: :func:`grade_task` hands the
task's bytes, as a :class:`grader.locate.Submission` named by the learner's
path, to ``grader.grading.grade``, which runs them in the engine's step
processes: no file is written, and the report needs no rewriting. A failure
is typed (:class:`grader.report.Failure`); its text is in :mod:`grader.messages`.
The same function runs in the local pool and on a Dask worker.

Example::

    >>> step_timeout(60, 8)
    7.5
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from grader.batch.pool import worker_lanes
from grader.checks.registry import checks_for
from grader.engine.client import shared_client
from grader.grading import STEP_TIMEOUT, grade
from grader.limits import MIN_STEP_TIMEOUT
from grader.locate import Submission

# GRADER_FAILED and WORKER_DIED: re-exported for the batch's modules (grader.batch.gradescope reads one here).
from grader.messages import GRADER_FAILED, WORKER_DIED, grader_failed  # noqa: F401
from grader.report import CheckResult, Failure, FailureKind, Report
from grader.settings import Settings, current

# SUBMISSION_TIMEOUT (a submission's budget) and MIN_STEP_TIMEOUT: grader.limits says why.

GradeFn = Callable[..., Report]


@dataclass(frozen=True)
class GradeTask:
    """Everything a worker needs to grade one learner, as picklable data.

    The source bytes travel with the task, so what is graded is exactly what
    was hashed, and a remote Dask worker needs no shared file system.
    """

    learner: str
    display: str
    source: bytes
    sha256: str
    seed: int
    steps: tuple[int, ...] | None = None
    only: tuple[str, ...] | None = None
    timeout: float | None = None  # per step, as grade() takes it
    sandbox: str | None = None  # "none", "bwrap" or "auto"; None: $AGTOOL_SANDBOX of the worker
    # "grade": the grade that counts; "feedback": the run a learner is shown when the
    # class has a seed key (grader.seeds), on other cases than the grade's.
    purpose: str = "grade"


def step_timeout(budget: float | None, n_steps: int) -> float | None:
    """Share a submission's time budget between its steps, capped by the grader's own default.

    So a module that hangs in every step still finishes inside its budget,
    with the points of the steps that did not hang.

    >>> step_timeout(60, 8), step_timeout(2, 8)
    (7.5, 0.5)
    """
    if not budget:
        return None
    return max(MIN_STEP_TIMEOUT, min(STEP_TIMEOUT, budget / max(1, n_steps)))


def failed_report(seed: int, path: str, message: str, *, kind: FailureKind | str, steps=None, only=None) -> Report:
    """A report where every selected check failed with ``message`` (used when grading could not run).

    ``kind`` says who failed (:class:`grader.report.FailureKind`): every
    caller says it, none is read back from the message's words.

    >>> r = failed_report(1, "ana/tools.py", "the grading process died", only=["step1/names"], kind="grader")
    >>> r.failure.retry, r.error, r.score, [c.message for c in r.checks]
    (True, 'the grading process died', 0, ['the grading process died'])
    """
    checks = [
        CheckResult(
            id=c.id,
            step=c.step,
            passed=False,
            points=0,
            max_points=c.points,
            title=c.title,
            message=message,
            hint=c.hint,
        )
        for c in checks_for(list(steps) if steps else None, list(only) if only else None)
    ]
    return Report(seed=seed, path=path, checks=checks, failure=Failure(kind, message))


def grade_task(task: GradeTask, grade_fn: GradeFn | None = None, settings: Settings | None = None) -> dict:
    """Grade one task in the calling process and return ``Report.to_dict()``.

    Learner code never runs here: ``grade`` runs it in child processes, from
    the task's bytes (no file is written); the report names the module by
    ``task.display``. ``grade_fn`` replaces ``grade`` (tests: it gets the
    :class:`grader.locate.Submission` and the selection, no settings);
    ``settings`` default to this process's, with the task's sandbox mode.
    An exception of the grader costs this one report, a failure of kind
    ``grader`` (graded again, never counted).

    >>> task = GradeTask("ana", "ana/tools.py", b"X = 1", "", seed=3, only=("step1/names",))
    >>> grade_task(task, grade_fn=lambda submission, **kw: 1 / 0)["failure"]["kind"]
    'grader'
    """
    submission = Submission(task.source, task.display)
    selection = dict(
        steps=list(task.steps) if task.steps else None,
        only=list(task.only) if task.only else None,
        seed=task.seed,
        timeout=task.timeout,
    )
    if grade_fn is None:
        grade_fn, selection["settings"] = grade, task_settings(task, settings)
    try:
        report = grade_fn(submission, **selection)
    except Exception as exc:  # a grader bug must cost one row, not the batch
        report = failed_report(
            task.seed, task.display, grader_failed(exc), steps=task.steps, only=task.only, kind=FailureKind.GRADER
        )
    return report.to_dict()


def task_settings(task: GradeTask, settings: Settings | None = None) -> Settings:
    """The settings a task is graded with: ``settings`` (default: this process's), in the task's sandbox mode.

    In a pool's worker, the steps of one grading run in as many step children
    at once as the pool leaves it cores (:func:`grader.batch.pool.worker_lanes`),
    unless the settings say how many.

    >>> task_settings(GradeTask("a", "a/tools.py", b"", "", 1, sandbox="bwrap"), Settings()).sandbox
    'bwrap'
    """
    settings = settings or current()
    changes: dict = {"sandbox": task.sandbox} if task.sandbox else {}
    if settings.parallel_steps is None and worker_lanes():
        changes["parallel_steps"] = worker_lanes()
    return settings.with_values(**changes) if changes else settings


def warm_engine(sandbox: str | None = None) -> None:
    """Start this process's fork server now (in ``sandbox`` mode) without waiting for it.

    A :class:`grader.batch.pool.WorkerPool` worker's ``prepare``: a service's
    workers sit idle until the first submission, which then need not wait
    for a fork server to import LangGraph.

    Example (in a worker process; it starts a fork server)::

        >>> warm_engine("none")  # doctest: +SKIP
    """
    shared_client(sandbox or current().sandbox or None).prestart()
