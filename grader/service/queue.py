"""The grading queue: stored attempts in, reports stored out, learner code never in this process.

:meth:`GradingQueue.put` takes the id of an attempt that is already stored
(``grader.service.db.Store.add_attempt`` commits first). One dispatcher
thread hands attempts to long-lived worker processes (``grader.batch.pool``'s
workers: each keeps its own warm fork server between attempts) that run
:func:`grader.batch.task.grade_task`, which runs the learner's module in the
engine's step processes. A worker that dies or runs over its time limit is
killed with its process group and replaced, and that attempt finishes as
``error``. With ``executor="dask"`` the same ``grade_task`` runs on a Dask
cluster instead.

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
import logging
import multiprocessing
import queue as stdlib_queue
import threading
import time
from collections import deque
from functools import partial
from multiprocessing.connection import wait
from typing import Callable

from grader.batch.pool import _Worker  # the batch pool's worker: same kill and replace rules
from grader.batch.run import GRACE
from grader.batch.task import (CLUSTER_FAILED, RETRY_ON_RESUME, SUBMISSION_TIMEOUT, WORKER_DIED, GradeTask,
                               failed_report, grade_task, step_timeout)
from grader.report import STEPS
from grader.service.db import ERROR, GRADED, Store

log = logging.getLogger("agtool.service")
POLL = 0.05  # seconds the dispatcher waits for a worker before looking for new attempts


def status_of(report: dict) -> str:
    """``error`` when the grading machinery failed (not the learner's code), else ``graded``.

    A module that does not import is *graded* (zero points, the import error
    as feedback); a worker that died is an ``error`` the learner did not cause.

    >>> status_of({"error": "the grading process died"}), status_of({"error": "SyntaxError: ..."})
    ('error', 'graded')
    """
    error = report.get("error") or ""
    return ERROR if error.startswith(RETRY_ON_RESUME) or error.startswith("grading stopped:") else GRADED


def task_for(attempt) -> GradeTask:
    """The picklable task of one stored attempt: its bytes, seed, and a share of the submission budget per step.

    >>> from types import SimpleNamespace as A
    >>> t = task_for(A(id=3, learner="ana", source=b"x", sha256="ab", seed=7))
    >>> t.display, t.timeout
    ('ana/attempt-3/tools.py', 7.5)
    """
    return GradeTask(learner=attempt.learner, display=f"{attempt.learner}/attempt-{attempt.id}/tools.py",
                     source=attempt.source, sha256=attempt.sha256, seed=attempt.seed,
                     timeout=step_timeout(SUBMISSION_TIMEOUT, len(STEPS)))


class GradingQueue:
    """Grade stored attempts on ``jobs`` worker processes (or a Dask cluster), storing each report once.

    ``sandbox`` is passed to every task ("none", "bwrap", "auto"; None: the
    workers' ``$AGTOOL_SANDBOX``). ``grade_fn`` replaces ``grader.grading.grade``
    in the workers (tests); it must be importable by name. ``on_finished(id)``
    is called in the dispatcher thread after a report is stored.
    """

    def __init__(self, store: Store, *, jobs: int = 2, sandbox: "str | None" = None,
                 executor: str = "local", scheduler=None, grade_fn=None,
                 on_finished: "Callable[[int], None] | None" = None):
        if executor not in ("local", "dask"):
            raise ValueError(f"unknown executor {executor!r}: use 'local' or 'dask'")
        if executor == "dask" and not scheduler:
            raise ValueError("--executor dask needs --scheduler ADDRESS")
        self.store, self.jobs, self.sandbox = store, max(1, jobs), sandbox
        self.executor, self.scheduler, self.grade_fn = executor, scheduler, grade_fn
        self.on_finished = on_finished
        self.hard_limit = SUBMISSION_TIMEOUT + GRACE
        self._incoming: stdlib_queue.Queue = stdlib_queue.Queue()
        self._known: set[int] = set()  # queued or being graded here: never sent twice by this process
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: "threading.Thread | None" = None
        self.finished_count = 0

    # ------------------------------------------------------------------ public
    def start(self) -> "GradingQueue":
        """Queue every stored unfinished attempt again, then start grading."""
        again = self.store.unfinished()
        if again:
            log.info("re-queueing %d stored attempt(s) not graded before the last stop", len(again))
        for attempt_id in again:
            self.put(attempt_id)
        target = self._run_dask if self.executor == "dask" else self._run_local
        self._thread = threading.Thread(target=target, name="agtool-grading-queue", daemon=True)
        self._thread.start()
        return self

    def put(self, attempt_id: int) -> None:
        """Queue a stored attempt (a second put of the same id while it is pending is ignored)."""
        with self._lock:
            if attempt_id in self._known:
                return
            self._known.add(attempt_id)
        self._incoming.put(attempt_id)

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
        if self._thread is not None:
            self._thread.join(timeout=30)

    def __enter__(self) -> "GradingQueue":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ both executors
    def _next_task(self) -> "tuple[int, GradeTask] | None":
        """Claim the next queued attempt; None when there is none right now."""
        while True:
            try:
                attempt_id = self._incoming.get_nowait()
            except stdlib_queue.Empty:
                return None
            attempt = self.store.get(attempt_id)
            if attempt is None or not self.store.claim(attempt_id):
                self._forget(attempt_id)  # gone, or finished by an earlier run
                continue
            task = task_for(attempt)
            if self.sandbox:
                task = dataclasses.replace(task, sandbox=self.sandbox)
            return attempt_id, task

    def _finish(self, attempt_id: int, report: dict) -> None:
        try:
            stored = self.store.finish(attempt_id, status_of(report), report)
        except Exception:  # the database is down: the attempt stays unfinished, the next start grades it
            log.exception("could not store the report of attempt %s", attempt_id)
            stored = False
        if not stored:
            log.warning("attempt %s: report not stored (already finished, or no database)", attempt_id)
        self._forget(attempt_id)
        if stored:
            self.finished_count += 1
            if self.on_finished:
                self.on_finished(attempt_id)

    def _forget(self, attempt_id: int) -> None:
        with self._lock:
            self._known.discard(attempt_id)

    # ------------------------------------------------------------------ local worker processes
    def _run_local(self) -> None:
        # fork, as the batch pool does: spawn would re-import the caller's __main__ in every
        # worker. This process has other threads (tornado, SQLAlchemy's pool), but a worker only
        # runs grade_task: it never touches the database or the web server whose locks it may
        # inherit, and Python resets the import and logging locks in a forked child. Workers are
        # started by this thread, so their parent-death signal fires when the service dies.
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        ctx = multiprocessing.get_context(method)
        work = partial(grade_task, grade_fn=self.grade_fn)
        workers = [_Worker(ctx, work) for _ in range(self.jobs)]
        try:
            while not self._stop.is_set():
                try:
                    self._step_local(ctx, work, workers)
                except Exception:  # one bad turn (a database hiccup) must not stop grading for good
                    log.exception("grading queue: error in the dispatcher; going on")
                    time.sleep(1)
        finally:
            for w in workers:
                w.kill()

    def _step_local(self, ctx, work, workers: list) -> None:
        """One turn: give idle workers attempts, wait a moment, store what came back, replace the dead."""
        for w in workers:
            if w.task is None:
                self._send(w)
        busy = [w for w in workers if w.task is not None]
        if not busy:
            time.sleep(POLL)
            return
        ready = set(wait([w.conn for w in busy], timeout=POLL))
        now = time.monotonic()
        for i, w in enumerate(workers):
            if w.task is None:
                continue
            attempt_id, task = w.task
            if w.conn in ready:
                try:
                    report = w.conn.recv()
                except (EOFError, OSError):
                    report = None
                else:
                    w.task = None
                    self._send(w)  # grading goes on while this report is stored
                    self._finish(attempt_id, report)
                    continue
                message = WORKER_DIED
            elif now >= w.deadline:
                message = f"grading stopped: over the time limit of {SUBMISSION_TIMEOUT:g} s"
            else:
                continue
            w.kill()
            workers[i] = _Worker(ctx, work)
            self._finish(attempt_id, failed_report(task.seed, task.display, message).to_dict())

    def _send(self, worker: _Worker) -> None:
        item = self._next_task()
        if item is None:
            return
        worker.task, worker.deadline = item, time.monotonic() + self.hard_limit
        try:
            worker.conn.send(item[1])
        except (BrokenPipeError, OSError):
            pass  # it died while idle: the next wait() sees end-of-file and replaces it

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
                    attempt_id, task = item
                    future = client.submit(grade_task, task, self.grade_fn, pure=False, retries=1,
                                           key=f"agtool-service-{attempt_id}-{time.monotonic_ns()}")
                    future.add_done_callback(lambda f, a=attempt_id, t=task: done.put((a, t, f)))
                    in_flight += 1
                try:
                    attempt_id, task, future = done.get(timeout=POLL)
                except stdlib_queue.Empty:
                    continue
                in_flight -= 1
                try:
                    report = future.result()
                except Exception as exc:  # the cluster's failure, not the learner's
                    report = failed_report(task.seed, task.display,
                                           f"{CLUSTER_FAILED}{type(exc).__name__}: {exc}").to_dict()
                self._finish(attempt_id, report)
        finally:
            if client is not self.scheduler:
                client.close()

