"""The grading queue: stored attempts in, reports stored out, learner code never in this process.

:meth:`GradingQueue.put` takes the id of an attempt that is already stored
(``grader.service.db.Store.add_attempt`` commits first). One dispatcher
thread hands attempts to long-lived worker processes (``grader.batch.pool.WorkerPool``,
the batch's pool: each worker keeps its own warm fork server between attempts) that run
:func:`grader.batch.task.grade_task`, which runs the learner's module in the
engine's step processes. A worker that dies or runs over its time limit is
killed with its process group and replaced; the attempt finishes as ``error``
when the worker died (graded again after a delay) and as ``graded`` with the time-out as
feedback when the submission used its whole budget, as in ``batch``. With ``executor="dask"`` the same ``grade_task`` runs on a Dask
cluster instead.

Same code, same grade: with a seed key (``seed_key``) each attempt is graded
twice in its worker, on the fresh seed the learner is shown and on the
learner's hidden seed (:func:`counted_task`), whose score is stored as the one
that counts; a grader failure in either run makes the attempt an ``error``.

Fair share: waiting attempts are handed out round-robin across learners, and
one learner holds at most ``per_learner`` workers at once
(:mod:`grader.service.fairness`), so one learner's flood never delays a classmate.

Never stuck, never a grade by accident: a report the database would not take
(disk full, database down) is kept in memory and stored again with a growing
delay until it is (the attempt stays ``grading`` meanwhile and does not count
against the learner's limits: :meth:`GradingQueue.not_stored`); an attempt
the grading machinery failed on (``error``) is graded again after
``regrade_delays`` (then at the next start).

Exactly once: an attempt is claimed (``queued`` -> ``grading``) before it is
sent and its report is written by a conditional update that only finishes an
unfinished attempt, so no attempt is stored twice. On :meth:`start` every
stored attempt still ``queued`` or ``grading`` (the service stopped or was
killed before its report was stored) is queued again, oldest first.

Example::

    >>> from grader.service.db import Store
    >>> store = Store("sqlite:///tmp/a.sqlite")                      # doctest: +SKIP
    >>> with GradingQueue(store, jobs=2) as queue:                    # doctest: +SKIP
    ...     queue.put(store.add_attempt("ana", b"...", seed=1))
    ...     queue.wait_idle(60)
"""

from __future__ import annotations

import dataclasses
import hashlib
import heapq
import hmac
import logging
import queue as stdlib_queue
import threading
import time
from collections.abc import Callable
from functools import partial

from grader.batch.pool import WorkerPool  # the batch's pool: same kill and replace rules
from grader.batch.task import GradeTask, failed_report, grade_task, step_timeout, warm_engine
from grader.limits import SUBMISSION_TIMEOUT, WORKER_GRACE
from grader.messages import WORKER_DIED, cluster_failed, over_time
from grader.report import STEPS, FailureKind, failure_of
from grader.seeds import SeedPlan
from grader.service.db import ERROR, GRADED, Store
from grader.service.fairness import FairQueue, share_for

log = logging.getLogger("agtool.service")
POLL = 0.05  # seconds between looks at the pending count (wait_idle)
IDLE_WAIT = 1.0  # seconds the dispatcher waits when no worker answers; put() wakes it at once
RETRY_FIRST, RETRY_MOST = 0.5, 60.0  # seconds before storing a report again after a database failure, doubling
REGRADE_DELAYS = (5.0, 30.0, 120.0)  # seconds before each automatic regrade of an ``error``; then at the next start


def backoff(tries: int, first: float = RETRY_FIRST, most: float = RETRY_MOST) -> float:
    """Seconds to wait before try number ``tries + 1``: doubling from ``first``, at most ``most``.

    >>> [backoff(n) for n in range(9)]
    [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]
    """
    return min(most, first * 2**tries)


def status_of(report: dict) -> str:
    """``error`` when the grading machinery failed (a failure to retry, not the learner's), else ``graded``.

    A module that does not import is *graded* (zero points, the import error
    as feedback), and so is a submission over its whole time budget; a worker
    that died is an ``error``: stored without a score, graded again
    automatically (``regrade_delays``, then at the next start), never counted
    (the rule of :attr:`grader.report.Failure.retry`, as in ``batch --resume``).

    >>> status_of({"failure": {"kind": "grader", "message": "the grading process died"}})
    'error'
    >>> status_of({"error": "grading stopped: over the time limit of 60 s"}), status_of({"error": "SyntaxError"})
    ('graded', 'graded')
    """
    failure = failure_of(report)
    return ERROR if failure is not None and failure.retry else GRADED


def status_of_runs(runs: dict) -> str:
    """:func:`status_of` of both runs of an attempt: ``error`` when either failed (both are graded again).

    >>> failed = {"failure": {"kind": "grader", "message": "died"}}
    >>> status_of_runs({"feedback": {}, "grade": failed}), status_of_runs({"feedback": {}, "grade": None})
    ('error', 'graded')
    """
    reports = [r for r in (runs["feedback"], runs.get("grade")) if r is not None]
    return ERROR if any(status_of(r) == ERROR for r in reports) else GRADED


class KeyChanged(RuntimeError):
    """The seed key is not the one the stored counted grades were drawn with (the service does not start)."""


def check_key(store: Store, key: bytes) -> None:
    """Refuse a seed key other than the one the stored attempts were counted with: their grades would change.

    >>> store = Store("sqlite://"); a = store.add_attempt("ana", b"x", seed=1); _ = store.take(a)
    >>> _ = store.finish(a, "graded", {}, counted={}, fingerprint=fingerprint(b"k"))
    >>> check_key(store, b"k")
    >>> try:
    ...     check_key(store, b"other")
    ... except KeyChanged as exc:
    ...     print(str(exc)[:21])
    the seed key changed:
    """
    if store.fingerprints() - {fingerprint(key)}:
        raise KeyChanged(
            "the seed key changed: the counted grades stored would change. Restore the key file "
            "(or $AGTOOL_SEED_KEY) the service started with before"
        )


def fingerprint(key: bytes) -> str:
    """What the database keeps of the seed key: enough to notice a changed key, nothing to derive seeds.

    >>> fingerprint(b"k") == fingerprint(b"k") != fingerprint(b"other"), len(fingerprint(b"k"))
    (True, 16)
    """
    return hmac.new(key, b"fingerprint", hashlib.sha256).hexdigest()[:16]


def grade_attempt(item: tuple[int, GradeTask, GradeTask | None], grade_fn=None) -> dict:
    """Run in a worker: ``{"feedback": report, "grade": report or None}`` of ``(attempt id, shown, counted)``.

    The pool hands the whole item back with the result; the counted run
    (with a seed key) runs right after the shown one, in the same worker.

    >>> task = task_for(__import__("types").SimpleNamespace(id=1, learner="a", source=b"x", sha256="", seed=1))
    >>> runs = grade_attempt((1, task, None), grade_fn=lambda submission, **kw: 1/0)
    >>> runs["feedback"]["error"][:18], runs["grade"]
    ('the grader failed:', None)
    """
    counted = item[2] if len(item) > 2 else None
    return {
        "feedback": grade_task(item[1], grade_fn),
        "grade": None if counted is None else grade_task(counted, grade_fn),
    }


def task_for(attempt) -> GradeTask:
    """The picklable task of one stored attempt: its bytes, seed, and a share of the submission budget per step.

    >>> from types import SimpleNamespace as A
    >>> t = task_for(A(id=3, learner="ana", source=b"x", sha256="ab", seed=7))
    >>> t.display, round(t.timeout, 2)  # 60 s shared by 11 steps
    ('ana/attempt-3/tools.py', 5.45)
    """
    return GradeTask(
        learner=attempt.learner,
        display=f"{attempt.learner}/attempt-{attempt.id}/tools.py",
        source=attempt.source,
        sha256=attempt.sha256,
        seed=attempt.seed,
        timeout=step_timeout(SUBMISSION_TIMEOUT, len(STEPS)),
    )


def counted_task(task: GradeTask, plan: SeedPlan) -> GradeTask:
    """The counted run of a shown task: the same bytes on the learner's hidden seed (``grader.seeds.SeedPlan``).

    >>> from types import SimpleNamespace as A
    >>> shown = task_for(A(id=3, learner="ana", source=b"x", sha256="ab", seed=7))
    >>> counted_task(shown, SeedPlan(key=b"k")).seed == SeedPlan(key=b"k").grading("ana") != 7
    True
    """
    return dataclasses.replace(task, seed=plan.grading(task.learner), purpose="grade")


class GradingQueue:
    """Grade stored attempts on ``jobs`` worker processes (or a Dask cluster), storing each report once.

    ``sandbox`` is passed to every task ("none", "bwrap", "auto"; None: the
    workers' ``$AGTOOL_SANDBOX``). ``grade_fn`` replaces ``grader.grading.grade``
    in the workers (tests); it must be importable by name. ``on_finished(id)``
    is called in the dispatcher thread after a report is stored. ``per_learner``:
    workers one learner may hold at once (default: all but one). ``seed_key``
    (bytes): each attempt is also graded on its learner's hidden seed, and
    that run's score is the one stored (same code, same grade).
    """

    def __init__(
        self,
        store: Store,
        *,
        jobs: int = 2,
        sandbox: str | None = None,
        executor: str = "local",
        scheduler=None,
        grade_fn=None,
        on_finished: Callable[[int], None] | None = None,
        per_learner: int | None = None,
        regrade_delays: tuple[float, ...] = REGRADE_DELAYS,
        retry_first: float = RETRY_FIRST,
        seed_key: bytes | None = None,
    ):
        if executor not in ("local", "dask"):
            raise ValueError(f"unknown executor {executor!r}: use 'local' or 'dask'")
        if executor == "dask" and not scheduler:
            raise ValueError("--executor dask needs --scheduler ADDRESS")
        self.store, self.jobs, self.sandbox = store, max(1, jobs), sandbox
        self.executor, self.scheduler, self.grade_fn = executor, scheduler, grade_fn
        self.on_finished = on_finished
        self.plan = SeedPlan(key=seed_key) if seed_key else None
        self.fingerprint = fingerprint(seed_key) if seed_key else None
        # A keyed attempt is two gradings in one worker: each may use the whole submission budget.
        self.hard_limit = SUBMISSION_TIMEOUT * (2 if seed_key else 1) + WORKER_GRACE
        self._fair = FairQueue(per_learner or share_for(self.jobs))
        self._known: set[int] = set()  # queued, being graded or its report not stored yet: never sent twice
        self._learners: dict[int, str] = {}  # attempts being graded: whose
        self._unstored: dict[int, tuple] = {}  # id -> (learner, status, report, tries, when to try again)
        self._later: list[tuple] = []  # heap of (when, id, learner, requeue): attempts to queue again later
        self._regrades: dict[int, int] = {}  # id -> automatic regrades so far
        self.regrade_delays, self.retry_first = tuple(regrade_delays), retry_first
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.finished_count = 0
        self._pool: WorkerPool | None = None

    def _wake(self) -> None:
        with self._lock:
            pool = self._pool
        if pool is not None:
            pool.wake()  # the dispatcher hands the attempt to a free worker now, not after a poll

    # ------------------------------------------------------------------ public
    def start(self) -> GradingQueue:
        """Queue every stored unfinished attempt again, and each the grading machinery failed, then start grading.

        With a seed key: :class:`KeyChanged` when it is not the key of the stored
        counted grades; attempts graded before the key are queued for their counted run.
        """
        if self.plan is not None:
            check_key(self.store, self.plan.key)  # before anything is graded with it
            # Graded before the seed key: their counted grade comes from the same rule as everyone's.
            uncounted = self.store.requeue_uncounted()
            if uncounted:
                log.info("queueing %d attempt(s) graded before the seed key for their counted run", len(uncounted))
        errors = set(self.store.requeue_errors())
        again = self.store.unfinished_with_learners()  # the errors are queued again now: among these
        if again:
            log.info(
                "re-queueing %d stored attempt(s) not graded before the last stop (%d failed before)",
                len(again),
                len(errors),
            )
        for attempt_id, learner in again:
            self.put(attempt_id, learner)
        target = self._run_dask if self.executor == "dask" else self._run_local
        self._thread = threading.Thread(target=target, name="agtool-grading-queue", daemon=True)
        self._thread.start()
        return self

    def put(self, attempt_id: int, learner: str | None = None) -> None:
        """Queue a stored attempt of ``learner`` (default: read); a second put while it is pending is ignored."""
        if learner is None:
            learner = self.store.learner_of(attempt_id)
            if learner is None:
                return  # no such attempt
        with self._lock:
            if attempt_id in self._known:
                return
            self._known.add(attempt_id)
            self._fair.push(attempt_id, learner)
        self._wake()

    def not_stored(self) -> set[int]:
        """Attempts graded here whose report the database has not taken yet (they do not count against limits)."""
        with self._lock:
            return set(self._unstored)

    def scheduled(self) -> int:
        """Attempts waiting for a later regrade (or a retried claim), not counted by :meth:`pending`."""
        with self._lock:
            return len(self._later)

    def pending(self) -> int:
        """Attempts queued or being graded by this process."""
        with self._lock:
            return len(self._known)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is pending; False if ``timeout`` seconds passed first."""
        deadline = time.monotonic() + timeout
        while self.pending():
            if time.monotonic() > deadline:
                return False
            time.sleep(POLL)
        return True

    def stop(self) -> None:
        """Stop grading; attempts not finished stay stored as unfinished and are graded at the next start."""
        self._stop.set()
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def __enter__(self) -> GradingQueue:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ both executors
    def _next_task(self) -> tuple[int, GradeTask, GradeTask | None] | None:
        """Claim the next attempt in turn (:class:`FairQueue`); None when there is none right now."""
        while True:
            with self._lock:
                item = self._fair.pop()
            if item is None:
                return None
            attempt_id, learner = item
            try:
                attempt = self.store.take(attempt_id)  # claimed and read in one transaction
            except Exception:  # the database is down: try the claim again later, not only at the next start
                log.exception("could not claim attempt %s", attempt_id)
                self._release(attempt_id, learner)
                self._queue_later(attempt_id, learner, self.retry_first * 4, requeue=False)
                continue
            if attempt is None:
                self._release(attempt_id, learner)  # gone, or finished by an earlier run
                continue
            with self._lock:
                self._learners[attempt_id] = learner
            task = task_for(attempt)
            if self.sandbox:
                task = dataclasses.replace(task, sandbox=self.sandbox)
            return attempt_id, task, None if self.plan is None else counted_task(task, self.plan)

    def _finish(self, attempt_id: int, runs: dict) -> None:
        with self._lock:
            learner = self._learners.pop(attempt_id, None)
            if learner is not None:
                self._fair.done(learner)  # its worker is free for the next learner in turn
        self._store(attempt_id, learner, status_of_runs(runs), runs, 0)

    def _store(self, attempt_id: int, learner, status: str, runs: dict, tries: int) -> None:
        """Store both runs; when the database fails, keep them and try again after :func:`backoff` (never forget)."""
        counted = {} if runs.get("grade") is None else {"counted": runs["grade"], "fingerprint": self.fingerprint}
        try:
            stored = self.store.finish(attempt_id, status, runs["feedback"], **counted)
        except Exception:  # disk full, database down: the report is kept here until the database takes it
            log.exception("could not store the report of attempt %s (try %d); trying again", attempt_id, tries + 1)
            with self._lock:
                self._unstored[attempt_id] = (
                    learner,
                    status,
                    runs,
                    tries + 1,
                    time.monotonic() + backoff(tries, self.retry_first),
                )
            return
        with self._lock:
            self._unstored.pop(attempt_id, None)
            self._known.discard(attempt_id)
        if not stored:
            log.warning("attempt %s: report not stored (already finished by another run)", attempt_id)
            return
        self.finished_count += 1
        if status == ERROR:
            self._regrade_later(attempt_id, learner)
        if self.on_finished:
            self.on_finished(attempt_id)

    def _regrade_later(self, attempt_id: int, learner) -> None:
        """Grade an ``error`` again after the next of ``regrade_delays``; after the last, at the next start."""
        done = self._regrades.get(attempt_id, 0)
        if done >= len(self.regrade_delays):
            log.warning("attempt %s failed %d regrades; it is graded again at the next start", attempt_id, done)
            return
        self._regrades[attempt_id] = done + 1
        self._queue_later(attempt_id, learner, self.regrade_delays[done], requeue=True)

    def _queue_later(self, attempt_id: int, learner, delay: float, *, requeue: bool) -> None:
        with self._lock:
            heapq.heappush(self._later, (time.monotonic() + delay, attempt_id, learner, requeue))

    def _housekeeping(self) -> None:
        """Each dispatcher turn: store again the reports the database refused, queue again what is due."""
        now = time.monotonic()
        with self._lock:
            retry = [(k, v) for k, v in self._unstored.items() if v[4] <= now]
            due = []
            while self._later and self._later[0][0] <= now:
                due.append(heapq.heappop(self._later))
        for attempt_id, (learner, status, runs, tries, _when) in retry:
            self._store(attempt_id, learner, status, runs, tries)
        for _when, attempt_id, learner, requeue in due:
            try:
                if requeue and not self.store.requeue_error(attempt_id):
                    continue  # graded meanwhile (a restart), or gone
            except Exception:
                log.exception("could not queue attempt %s again; trying later", attempt_id)
                self._queue_later(attempt_id, learner, RETRY_MOST, requeue=requeue)
                continue
            self.put(attempt_id, learner)

    def _release(self, attempt_id: int, learner: str) -> None:
        with self._lock:
            self._fair.done(learner)
            self._known.discard(attempt_id)

    # ------------------------------------------------------------------ local worker processes
    def _run_local(self) -> None:
        # The batch's WorkerPool, fed by this queue: a free worker gets the next stored attempt,
        # claimed only then, so ``grading`` means a worker has it. Workers are forked, as for the
        # batch: spawn would re-import the caller's __main__ in every worker. This process has
        # other threads (tornado, SQLAlchemy's pool), but a worker only runs grade_task: it never
        # touches the database or the web server whose locks it may inherit, and Python resets
        # the import and logging locks in a forked child. The pool starts its workers in this
        # thread, so their parent-death signal fires when the service dies.
        # Real grading: each worker starts its fork server at once, so the first attempt
        # of a class does not wait for LangGraph's import (about 1 s) on top of its own work.
        prepare = partial(warm_engine, self.sandbox) if self.grade_fn is None else None
        pool = WorkerPool(
            partial(grade_attempt, grade_fn=self.grade_fn),
            jobs=self.jobs,
            hard_limit=self.hard_limit,
            on_lost=self._lost_runs,
            feed=self._next_task,
            prepare=prepare,
        )
        with self._lock:
            self._pool = pool
        try:
            with pool:
                while not self._stop.is_set():
                    try:
                        for item, runs in pool.poll(timeout=IDLE_WAIT):
                            self._finish(item[0], runs)
                        self._housekeeping()
                    except Exception:  # one bad turn (a database hiccup) must not stop grading for good
                        log.exception("grading queue: error in the dispatcher; going on")
                        time.sleep(1)
        finally:
            with self._lock:
                self._pool = None

    def _lost(self, item: tuple, timed_out: bool) -> dict:
        """The report of an attempt whose worker died (an ``error``) or ran over the time limit (its own)."""
        task = item[1]
        if timed_out:
            over = over_time(SUBMISSION_TIMEOUT)
            return failed_report(task.seed, task.display, over, kind=FailureKind.TIME).to_dict()
        return failed_report(task.seed, task.display, WORKER_DIED, kind=FailureKind.GRADER).to_dict()

    def _lost_runs(self, item: tuple, timed_out: bool) -> dict:
        """:meth:`_lost` for both runs of ``(attempt id, shown task, counted task or None)``."""
        counted = item[2] if len(item) > 2 else None
        return {
            "feedback": self._lost(item, timed_out),
            "grade": None if counted is None else self._lost((item[0], counted), timed_out),
        }

    # ------------------------------------------------------------------ Dask
    def _run_dask(self) -> None:
        try:
            from distributed import Client
        except ImportError:
            log.error("--executor dask needs Dask distributed: pip install 'agtool-lab[dask]'")
            raise
        client = self.scheduler if isinstance(self.scheduler, Client) else Client(self.scheduler)
        done: stdlib_queue.Queue = stdlib_queue.Queue()
        in_flight = 0
        try:
            while not self._stop.is_set():
                while in_flight < self.jobs * 4 and (item := self._next_task()) is not None:
                    future = client.submit(
                        grade_attempt,
                        item,
                        self.grade_fn,
                        pure=False,
                        retries=1,
                        key=f"agtool-service-{item[0]}-{time.monotonic_ns()}",
                    )
                    future.add_done_callback(lambda f, i=item: done.put((i, f)))
                    in_flight += 1
                self._housekeeping()
                try:
                    item, future = done.get(timeout=POLL)
                except stdlib_queue.Empty:
                    continue
                in_flight -= 1
                try:
                    runs = future.result()
                except Exception as exc:  # the cluster's failure, not the learner's: both runs are graded again
                    failed = failed_report(
                        item[1].seed, item[1].display, cluster_failed(exc), kind=FailureKind.GRADER
                    ).to_dict()
                    runs = {"feedback": failed, "grade": None if item[2] is None else failed}
                self._finish(item[0], runs)
        finally:
            if client is not self.scheduler:
                client.close()
