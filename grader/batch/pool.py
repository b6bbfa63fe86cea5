"""A local pool of long-lived worker processes that survives the tasks it runs, and takes tasks while it runs.

Each worker keeps its state between tasks (for the batch grader: its own fork
server, with LangGraph imported). A worker that dies, or that has not answered ``hard_limit``
seconds after it got its task, is killed with its whole process group and
replaced; only that task's result is lost, and ``on_lost`` stands in for it.
Unlike ``concurrent.futures.ProcessPoolExecutor``, a dead worker does not
break the pool, and a stuck one can be killed.

:class:`WorkerPool` is the pool itself: :meth:`~WorkerPool.submit` queues a
task at any time (before or while it runs), or a ``feed`` callable hands
one out the moment a worker is free (the grading service claims the next
stored attempt only then); :meth:`~WorkerPool.poll` waits for results.
:func:`run_pool` runs a fixed list of tasks on one (``agtool-grade batch``).

Example::

    >>> with WorkerPool(abs, jobs=2, hard_limit=10, on_lost=lambda task, timed_out: None) as pool:
    ...     pool.submit(-1)
    ...     first = pool.poll()
    ...     pool.submit(-2)                       # a task given while the pool runs
    ...     second = pool.poll()
    >>> first, second
    ([(-1, 1)], [(-2, 2)])
    >>> results = dict(run_pool([1, 2, 3], jobs=2, hard_limit=10, work=abs,
    ...                         on_lost=lambda task, timed_out: None))
    >>> results == {1: 1, 2: 2, 3: 3}
    True
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import wait
from typing import Any

from grader.engine.proctree import die_with_parent

# Parent-side ends of every worker's pipe (and of each pool's wake-up pipe). A
# forked worker inherits them and must close them: otherwise it keeps its
# siblings' pipes open and no worker ever sees end-of-file when the pool's
# process dies.
_PARENT_ENDS: set = set()

# In a worker process: the cores its pool leaves each worker (0: not a pool worker).
_lanes = 0


def worker_lanes() -> int:
    """In a pool's worker: how many step children its gradings should run at once; 0 elsewhere.

    The workers already keep the cores busy: a submission's steps in more
    step children at once would only add processes (see :mod:`grader.grading`).

    >>> worker_lanes()
    0
    """
    return _lanes


def _worker_main(conn, work: Callable[[Any], Any], prepare: Callable[[], Any] | None = None, lanes: int = 0) -> None:
    global _lanes
    # Own process group, so a time-out kills this worker and whatever it forked.
    os.setsid()
    _lanes = lanes
    die_with_parent()  # a worker must not outlive the pool's process
    for end in list(_PARENT_ENDS):
        end.close()
    # Inherited streams may be a terminal, a test runner's pipe or a notebook
    # kernel's; a worker has nothing to say, and must not hold them open.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    sys.stdout = sys.stderr = open(os.devnull, "w")
    try:
        if prepare is not None:
            try:
                prepare()  # e.g. start the fork server now, not when the first task is already waiting
            except Exception:
                pass
        while True:
            try:
                task = conn.recv()
            except (EOFError, OSError):
                return
            result = work(task)
            try:
                conn.send(result)
            except (BrokenPipeError, OSError):
                return  # the pool is gone
    finally:
        # A forked worker skips atexit: stop this worker's fork server by hand.
        engine_client = sys.modules.get("grader.engine.client")
        if engine_client is not None:
            engine_client.close()


class _Worker:
    def __init__(self, ctx, work: Callable[[Any], Any], prepare: Callable[[], Any] | None = None, lanes: int = 0):
        self.conn, child = ctx.Pipe()
        _PARENT_ENDS.add(self.conn)
        self.proc = ctx.Process(target=_worker_main, args=(child, work, prepare, lanes), name="agtool-batch-worker")
        self.proc.start()
        child.close()
        self.task: Any = None
        self.deadline = 0.0

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, 9)
        except (ProcessLookupError, PermissionError):
            self.proc.kill()  # it had not reached setsid() yet: no group of its own
        self.proc.join(timeout=5)
        _PARENT_ENDS.discard(self.conn)
        self.conn.close()


class _WakePipe:
    """A pipe :meth:`WorkerPool.wake` writes a byte to, so a waiting :meth:`~WorkerPool.poll` returns at once."""

    def __init__(self):
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self.write_fd, False)
        self.closed = False

    def fileno(self) -> int:
        return self.read_fd

    def wake(self) -> None:
        try:
            os.write(self.write_fd, b"w")
        except (BlockingIOError, OSError):
            pass  # full (already woken) or closed

    def drain(self) -> None:
        try:
            while os.read(self.read_fd, 4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            for fd in (self.read_fd, self.write_fd):
                try:
                    os.close(fd)
                except OSError:
                    pass


def start_context():
    """The multiprocessing context workers start with: fork where there is one (spawn re-imports ``__main__``)."""
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    return multiprocessing.get_context(method)


class WorkerPool:
    """``jobs`` long-lived worker processes running ``work(task)``; tasks can be given at any time.

    A worker that dies, or has not answered ``hard_limit`` seconds after it got
    its task, is killed with its process group and replaced; that task's
    result is ``on_lost(task, timed_out)``. ``feed()``, if given, is called
    for a task whenever a worker is free and nothing submitted is waiting
    (``None``: nothing to do now), so a caller can decide what runs next at
    the last moment. ``prepare()``, if given, runs in each worker once it has
    started, before its first task (a service starts its fork servers so).
    Every method but :meth:`wake` must be called from the
    thread that started the pool: its workers are started there, and a
    worker's parent-death signal follows that thread.
    """

    def __init__(
        self,
        work: Callable[[Any], Any],
        *,
        jobs: int,
        hard_limit: float,
        on_lost: Callable[[Any, bool], Any],
        feed: Callable[[], Any] | None = None,
        prepare: Callable[[], Any] | None = None,
    ):
        self.work, self.jobs, self.hard_limit = work, max(1, int(jobs)), hard_limit
        # Step children a worker's grading runs at once: the cores the workers leave.
        self.lanes = max(1, (os.cpu_count() or 1) // self.jobs)
        self.on_lost, self.feed, self.prepare = on_lost, feed, prepare
        self._pending: deque = deque()
        self._workers: list[_Worker] = []
        self._ctx = None
        self._wake: _WakePipe | None = None
        self._lock = threading.Lock()  # only wake() comes from other threads

    # --------------------------------------------------------------- life
    def start(self) -> WorkerPool:
        """Start the worker processes (done by the first :meth:`poll` if not called)."""
        if self._ctx is None:
            self._ctx = start_context()
            with self._lock:
                self._wake = _WakePipe()
                _PARENT_ENDS.add(self._wake)
            self._workers = [self._new_worker() for _ in range(self.jobs)]
        return self

    def _new_worker(self) -> _Worker:
        return _Worker(self._ctx, self.work, self.prepare, self.lanes)

    def close(self) -> None:
        """Kill every worker (a task still running is dropped, not reported)."""
        for w in self._workers:
            w.kill()
        self._workers = []
        with self._lock:
            if self._wake is not None:
                _PARENT_ENDS.discard(self._wake)
                self._wake.close()
                self._wake = None
        self._ctx = None

    def __enter__(self) -> WorkerPool:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    # --------------------------------------------------------------- tasks
    def submit(self, task: Any) -> None:
        """Queue ``task``; it goes to the first free worker, in the order given."""
        self._pending.append(task)

    def wake(self) -> None:
        """Make a :meth:`poll` that is waiting return now (safe from any thread: new work has arrived)."""
        with self._lock:
            if self._wake is not None:
                self._wake.wake()

    def pending(self) -> int:
        """Tasks submitted and not yet given to a worker."""
        return len(self._pending)

    def busy(self) -> int:
        """Workers running a task now."""
        return sum(1 for w in self._workers if w.task is not None)

    def _next(self) -> Any:
        if self._pending:
            return self._pending.popleft()
        return self.feed() if self.feed is not None else None

    def _give_next(self, worker: _Worker) -> None:
        """Send an idle worker the next task, starting its deadline."""
        if worker.task is not None:
            return
        task = self._next()
        if task is None:
            return
        worker.task, worker.deadline = task, time.monotonic() + self.hard_limit
        try:
            worker.conn.send(task)
        except (BrokenPipeError, OSError):
            pass  # the worker died while idle: recv() reports EOF

    def poll(self, timeout: float | None = None) -> list[tuple[Any, Any]]:
        """Give free workers tasks, then wait for results: ``[(task, result), ...]`` (may be empty).

        Waits until a worker answers, one runs past its deadline, :meth:`wake`
        is called, or ``timeout`` seconds pass (``None``: no limit while a
        task runs; with nothing running it returns at once). A worker that
        answers gets its next task before this returns, so it works while the
        caller stores the result.
        """
        self.start()
        for w in self._workers:
            self._give_next(w)
        busy = [w for w in self._workers if w.task is not None]
        if not busy and timeout is None:
            return []
        wait_for = timeout
        if busy:
            to_deadline = max(0.0, min(w.deadline for w in busy) - time.monotonic())
            wait_for = to_deadline if timeout is None else min(timeout, to_deadline)
        ready = set(wait([w.conn for w in busy] + [self._wake], timeout=wait_for))
        if self._wake in ready:
            self._wake.drain()
        now = time.monotonic()
        out = []
        for i, w in enumerate(self._workers):
            task = w.task
            if task is None:
                continue
            if w.conn in ready:
                try:
                    result = w.conn.recv()
                except (EOFError, OSError):
                    timed_out = False
                else:
                    w.task = None
                    # Its next task first: the worker grades while the caller stores this result.
                    self._give_next(w)
                    out.append((task, result))
                    continue
            elif now >= w.deadline:
                timed_out = True
            else:
                continue
            w.kill()
            self._workers[i] = self._new_worker()
            out.append((task, self.on_lost(task, timed_out)))
        return out


def run_pool(
    tasks: Iterable[Any],
    *,
    jobs: int,
    hard_limit: float,
    work: Callable[[Any], Any],
    on_lost: Callable[[Any, bool], Any],
    pool: WorkerPool | None = None,
) -> Iterator[tuple[Any, Any]]:
    """Run ``work(task)`` on ``jobs`` workers (no more than there are tasks); yield ``(task, result)`` as each finishes.

    A worker that dies, or has not answered ``hard_limit`` seconds after it got
    its task, is killed with its process group and replaced; that task yields
    ``on_lost(task, timed_out)`` instead. ``pool``: a pool the caller started
    earlier (and closes), used instead of a new one.
    """
    pending = list(tasks)
    if pool is None:
        pool = WorkerPool(work, jobs=max(1, min(jobs, len(pending))), hard_limit=hard_limit, on_lost=on_lost)
        with pool:
            yield from _drain(pool, pending)
    else:
        yield from _drain(pool, pending)


def _drain(pool: WorkerPool, tasks: list[Any]) -> Iterator[tuple[Any, Any]]:
    for task in tasks:
        pool.submit(task)
    while pool.pending() or pool.busy():
        yield from pool.poll()
