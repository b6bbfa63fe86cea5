"""One learner's grading task: picklable data in, ``Report.to_dict()`` out, in a batch worker.

Learner code never runs in the worker: :func:`grade_task` calls
``grader.grading.grade``, which runs it in the engine's step processes.
The same function runs in the local pool and on a Dask worker.

Example::

    >>> step_timeout(60, 8)
    7.5
"""
from __future__ import annotations

import os
import shlex
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from grader.batch.pool import SCRATCH_ENV
from grader.checks.registry import checks_for
from grader.engine.client import close as close_shared_client, shared_client
from grader.engine.sandbox import SANDBOX_ENV
from grader.escape import shell_join
from grader.grading import REPLAY_PATH_WORD, STEP_TIMEOUT, grade
from grader.report import CheckResult, Report

SUBMISSION_TIMEOUT = 60.0  # seconds per submission, shared between its steps; a correct module needs well under one
MIN_STEP_TIMEOUT = 0.5  # below this a correct step can miss its limit on a busy machine

# Errors of the grading machinery, not of the learner: --resume grades these
# learners again instead of keeping the failed row.
GRADER_FAILED = "the grader failed: "
WORKER_DIED = "the grading process died"
CLUSTER_FAILED = "grading failed on the Dask cluster: "
RETRY_ON_RESUME = (GRADER_FAILED, WORKER_DIED, CLUSTER_FAILED)

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


def failed_report(seed: int, path: str, message: str, *, steps=None, only=None) -> Report:
    """A report where every selected check failed with ``message`` (used when grading could not run)."""
    checks = [
        CheckResult(id=c.id, step=c.step, passed=False, points=0, max_points=c.points,
                    title=c.title, message=message, hint=c.hint)
        for c in checks_for(list(steps) if steps else None, list(only) if only else None)
    ]
    return Report(seed=seed, path=path, checks=checks, error=message)


def grade_task(task: GradeTask, grade_fn: GradeFn | None = None) -> dict:
    """Grade one task in the calling process and return ``Report.to_dict()``.

    Learner code never runs here: ``grade`` runs it in child processes. The
    report's paths name the learner's original file, not the scratch copy.
    """
    grade_fn = grade_fn or grade
    _use_sandbox(task.sandbox)
    file, scratch = _scratch_copy(task.learner, task.source)
    try:
        report = grade_fn(file, steps=list(task.steps) if task.steps else None,
                          only=list(task.only) if task.only else None,
                          seed=task.seed, timeout=task.timeout)
    except Exception as exc:  # a grader bug must cost one row, not the batch
        report = failed_report(task.seed, str(file), f"{GRADER_FAILED}{type(exc).__name__}: {exc}",
                               steps=task.steps, only=task.only)
    finally:
        _remove_scratch(file, scratch)
    display = Path(task.display)
    return _rebase(report.to_dict(), {str(file): task.display, str(file.parent): str(display.parent)})


def _scratch_copy(learner: str, source: bytes) -> tuple[Path, Path]:
    """``source`` written to ``.../<learner>/tools.py``, a path with no symbolic link in it, and the folder to remove.

    A pool worker (:data:`grader.batch.pool.SCRATCH_ENV`) makes the learner's
    folder in a folder of its own inside its pool's, which the pool removes;
    elsewhere it goes in a new temporary folder. Both are in the resolved
    temporary folder, so ``grade()``, which may name the file by its resolved
    path, names it by this very path (one path to replace in the report).
    Directory calls cost more than the rest here (~0.3 ms each on ext4 under
    load): a pool worker makes and removes one folder a learner, not two.

    >>> file, scratch = _scratch_copy("ana", b"x = 1\\n")
    >>> file.name, file.parent.name, file.read_bytes(), file == file.resolve()
    ('tools.py', 'ana', b'x = 1\\n', True)
    >>> _remove_scratch(file, scratch); scratch.exists()
    False
    """
    shared = os.environ.get(SCRATCH_ENV)
    if shared:
        home = Path(shared) / f"worker-{os.getpid()}"
    else:
        home = Path(tempfile.mkdtemp(prefix="agtool-batch-", dir=os.path.realpath(tempfile.gettempdir())))
    folder = home / learner
    try:
        folder.mkdir(parents=True)
    except FileExistsError:  # what a failed removal left: graded on a folder of its own bytes only
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
    file = folder / "tools.py"
    file.write_bytes(source)
    return file, folder if shared else home


def _remove_scratch(file: Path, scratch: Path) -> None:
    """Remove ``file`` and its folders up to ``scratch``: a call each, or a full walk if grading left more in them."""
    try:
        file.unlink()
        folder = file.parent
        folder.rmdir()
        while folder != scratch:
            folder = folder.parent
            folder.rmdir()
    except OSError:
        shutil.rmtree(scratch, ignore_errors=True)


def warm_engine(sandbox: str | None = None) -> None:
    """Start this process's fork server now (in ``sandbox`` mode) without waiting for it.

    A :class:`grader.batch.pool.WorkerPool` worker's ``prepare``: a service's
    workers sit idle until the first submission, which then need not wait
    for a fork server to import LangGraph.

    Example (in a worker process; it starts a fork server)::

        >>> warm_engine("none")  # doctest: +SKIP
    """
    _use_sandbox(sandbox)
    shared_client().prestart()


def _use_sandbox(mode: str | None) -> None:
    """Make this process's warm runner use ``mode`` (restarting it if it runs another one)."""
    if mode and os.environ.get(SANDBOX_ENV, "none") != mode:
        os.environ[SANDBOX_ENV] = mode
        close_shared_client()  # the next grade() starts a warm parent in the new mode


def _rebase(data, replacements: dict[str, str]):
    """Replace scratch paths by the learner's paths in every string of ``data`` (changed in place, and returned).

    A ``reproduce`` command that names the scratch copy is rebuilt for the
    learner's path instead: its words are split and quoted again, since an
    upload named ``x_$(id>PWNED.txt)_tools.py`` pasted into the quoted line
    unquoted is a command that runs.

    >>> _rebase({"reproduce": "agtool-grade check /tmp/s/tools.py --seed 1", "message": "in /tmp/s/tools.py"},
    ...         {"/tmp/s/tools.py": "a b/$(id)_tools.py"})["reproduce"]
    "agtool-grade check 'a b/$(id)_tools.py' --seed 1"
    """
    # A report has ~1,000 strings and few hold a scratch path: each is searched
    # for the shortest paths only (every other one contains one of them) and
    # left alone, not copied, when none is in it.
    markers = tuple(old for old in replacements if not any(other != old and other in old for other in replacements))
    return _rebase_in(data, replacements, markers)


def _rebase_in(data, replacements: dict[str, str], markers: tuple[str, ...]):
    """:func:`_rebase` below ``data``, which holds a scratch path only where a string holds one of ``markers``."""
    if isinstance(data, str):
        return _replace_paths(data, replacements) if _holds(data, markers) else data
    if isinstance(data, dict):
        entries = data.items()
    elif isinstance(data, list):
        entries = enumerate(data)
    else:
        return data
    for key, value in entries:
        if value.__class__ is str:
            if _holds(value, markers):
                data[key] = (_rebase_command(value, replacements) if key == "reproduce"
                             else _replace_paths(value, replacements))
        elif isinstance(value, (dict, list)):  # not a call for each number of every check
            _rebase_in(value, replacements, markers)
    return data


def _holds(text: str, markers: tuple[str, ...]) -> bool:
    for marker in markers:  # a loop, not any(): this runs for every string of a report
        if marker in text:
            return True
    return False


def _replace_paths(text: str, replacements: dict[str, str]) -> str:
    for old, new in replacements.items():
        text = text.replace(old, new)
    return text


def _rebase_command(command: str, replacements: dict[str, str]) -> str:
    """``command`` with each word that is a scratch path replaced whole, then quoted for the shell again."""
    if not command:
        return command
    try:
        words = shlex.split(command)
    except ValueError:  # not a command line the grader wrote (a fake grade_fn's text): paths replaced in place
        return _replace_paths(command, replacements)
    words = [replacements.get(word, word) for word in words]
    return shell_join(words, paths=[REPLAY_PATH_WORD] if len(words) > REPLAY_PATH_WORD else [])
