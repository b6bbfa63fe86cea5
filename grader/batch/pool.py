"""A local pool of long-lived worker processes that survives the tasks it runs.

Each worker keeps its state between tasks (for the batch grader: its own fork
server, with LangGraph imported). A worker that dies, or that has not answered ``hard_limit``
seconds after it got its task, is killed with its whole process group and
replaced; only that task's result is lost, and ``on_lost`` stands in for it.
Unlike ``concurrent.futures.ProcessPoolExecutor``, a dead worker does not
break the pool, and a stuck one can be killed.

Example::

    >>> from functools import partial
    >>> results = dict(run_pool([1, 2, 3], jobs=2, hard_limit=10, work=abs,
    ...                         on_lost=lambda task, timed_out: None))
    >>> results == {1: 1, 2: 2, 3: 3}
    True
"""
from __future__ import annotations

import multiprocessing
import os
import sys
import time
from collections import deque
from multiprocessing.connection import wait
from typing import Any, Callable, Iterable, Iterator

from grader.engine.proctree import die_with_parent

# Parent-side ends of every worker's pipe. A forked worker inherits them and
# must close them: otherwise it keeps its siblings' pipes open and no worker
# ever sees end-of-file when the pool's process dies.
_PARENT_ENDS: set = set()


def _worker_main(conn, work: Callable[[Any], Any]) -> None:
    # Own process group, so a time-out kills this worker and whatever it forked.
    os.setsid()
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
    def __init__(self, ctx, work: Callable[[Any], Any]):
        self.conn, child = ctx.Pipe()
        _PARENT_ENDS.add(self.conn)
        self.proc = ctx.Process(target=_worker_main, args=(child, work), name="agtool-batch-worker")
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


def _give_next(worker: _Worker, pending: deque, hard_limit: float) -> None:
    """Send an idle worker the next pending task, starting its deadline."""
    if worker.task is None and pending:
        worker.task, worker.deadline = pending.popleft(), time.monotonic() + hard_limit
        try:
            worker.conn.send(worker.task)
        except (BrokenPipeError, OSError):
            pass  # the worker died while idle: recv() reports EOF


def run_pool(tasks: Iterable[Any], *, jobs: int, hard_limit: float, work: Callable[[Any], Any],
             on_lost: Callable[[Any, bool], Any]) -> Iterator[tuple[Any, Any]]:
    """Run ``work(task)`` on ``jobs`` workers; yield ``(task, result)`` as each finishes.

    A worker that dies, or has not answered ``hard_limit`` seconds after it got
    its task, is killed with its process group and replaced; that task yields
    ``on_lost(task, timed_out)`` instead.
    """
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    ctx = multiprocessing.get_context(method)
    pending = deque(tasks)
    workers = [_Worker(ctx, work) for _ in range(max(1, min(jobs, len(pending))))]
    try:
        while pending or any(w.task is not None for w in workers):
            for w in workers:
                _give_next(w, pending, hard_limit)
            busy = [w for w in workers if w.task is not None]
            wait_for = max(0.0, min(w.deadline for w in busy) - time.monotonic())
            ready = set(wait([w.conn for w in busy], timeout=wait_for))
            now = time.monotonic()
            for i, w in enumerate(workers):
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
                        _give_next(w, pending, hard_limit)
                        yield task, result
                        continue
                elif now >= w.deadline:
                    timed_out = True
                else:
                    continue
                w.kill()
                workers[i] = _Worker(ctx, work)
                yield task, on_lost(task, timed_out)
    finally:
        for w in workers:
            w.kill()
