"""Deciding which steps run where, and when: :class:`StepScheduler`, the fork server's loop over one request.

Without ``chain``, each step job has a step child of its own, and every one
imports at once. With ``chain``, the jobs of one submission are split into
at most ``parallel`` runs of consecutive jobs (:func:`chains`), and one step
child runs a run's jobs one after another. The first run starts alone: its
first import decides for the others (a quick import lets them start; a slow
one spreads the steps over step children of their own, which import at
once; a failed one is every step's result). ``parallel`` bounds the step
children past their import (the learner's work, which competes for the
cores); an imported step waits in its child for a byte on its start pipe.

The life cycle of one step child is :class:`grader.engine.step_process.StepProcess`'s.

Example (in the fork server only: it forks, and ends by killing every descendant)::

    >>> results = StepScheduler(jobs, parallel=2, chain=True).run()  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import selectors
import shutil
import time
from collections.abc import Callable
from typing import Any, cast

from grader.engine.proctree import kill_descendants
from grader.engine.protocol import IMPORTED, StepJob, StepResult
from grader.engine.step_process import StepProcess

# The longest the fork server goes without reading a running step child's
# result pipe (seconds); the step child's wake-up pipe wakes it sooner (see StepProcess).
RESULT_TICK = 0.05
# How often to look for the end of step children without a pidfd (old kernels), in seconds.
NO_PIDFD_TICK = 0.01


class StepScheduler:
    """The step children of one request: which jobs each runs, which may work now, what each step gave."""

    def __init__(
        self,
        jobs: list[StepJob],
        *,
        parallel: int = 1,
        chain: bool = False,
        on_result: Callable[[int, StepResult], None] | None = None,
    ):
        self.jobs, self.slots, self.on_result = jobs, max(parallel, 1), on_result
        self.results: list[StepResult | None] = [None] * len(jobs)
        runs = chains(jobs, parallel) if chain else [[i] for i in range(len(jobs))]
        # With ``chain``, the first run starts alone, the others wait for its import (``later``).
        self.waiting, self.later = (runs[:1], runs[1:]) if chain else (runs, [])
        self.chain = chain
        self.first: StepProcess | None = None  # the step child of the first run (with ``chain``)
        self.running: list[StepProcess] = []
        self.scratches: list[str] = []
        self.sel = selectors.DefaultSelector()

    def run(self, leftovers: list[str] | None = None) -> list[StepResult]:
        """Run every job; each step's result in job order.

        Scratch folders are removed before returning, or appended to
        ``leftovers`` for the caller to remove later. Every process the jobs
        started is dead when this returns.
        """
        try:
            while self.waiting or self.running:
                self._start_waiting()
                self._start_work_in_free_slots()
                self._wait()
                for child in self.running:  # whatever woke us: deadlines and ends are judged on every line sent
                    child.read_results()
                for child in list(self.running):
                    self._look_at(child)
        finally:
            self._clean_up(leftovers)
        # The loop ends when no step waits or runs: every job was given its result (_done), none is None.
        return cast(list[StepResult], self.results)

    def _done(self, index: int, result: StepResult) -> None:
        self.results[index] = result
        if self.on_result is not None:
            self.on_result(index, result)

    def _spawn(self, jobs: list[StepJob], indices: list[int], carry: StepResult | None = None) -> StepProcess:
        child = StepProcess(jobs, self.sel, indices=indices, carry=carry)
        self.running.append(child)
        self.scratches.append(child.scratch)
        return child

    def _start_waiting(self) -> None:
        # Every step child imports at once; ``parallel`` bounds the steps past
        # their import: an honest import that sleeps or reads a file would
        # otherwise make the steps wait for each other's imports in turn.
        while self.waiting:
            indices = self.waiting.pop(0)
            child = self._spawn([self.jobs[i] for i in indices], indices)
            if self.first is None and self.chain:
                self.first = child

    def _start_work_in_free_slots(self) -> None:
        working = sum(c.working for c in self.running)
        for child in self.running:
            if working >= self.slots:
                break
            if child.waits_to_start:
                child.start()
                working += 1

    def _wait(self) -> None:
        """Wait for a wake-up, a child's end, a deadline or the next tick; stop watching the fds that ended."""
        wake = min(min(c.deadline, c.judge_import_at()) for c in self.running)
        # At least every RESULT_TICK: a step child whose wake-up pipe is closed or full still gets read.
        wait = min(max(wake - time.monotonic(), 0), RESULT_TICK)
        if not all(c.pidfd is not None for c in self.running):
            wait = min(wait, NO_PIDFD_TICK)  # no pidfd: poll for the children's end
        for key, _ in self.sel.select(wait):
            if key.data() < 0:  # EOF (or refused): stop watching this fd
                self.sel.unregister(key.fileobj)

    def _let_later_runs_start(self, one_by_one: bool = False) -> None:
        """The runs waiting for the first one's import start now (each job alone with ``one_by_one``)."""
        self.waiting += [[i] for run in self.later for i in run] if one_by_one else self.later
        self.later = []

    def _look_at(self, child: StepProcess) -> None:
        if child.slow_import(time.monotonic()):  # the steps after it must not wait for its imports in turn
            self.waiting += [[i] for i in child.split_off()]
            if child is self.first:
                self._let_later_runs_start(one_by_one=True)
        elif child.channel_errors and child.position < len(child.jobs) - 1:
            # Its channel is not to be trusted to say when the step is over: the
            # step child ends after this step, a new one runs the steps after it.
            self.waiting.append(child.split_off())
        if child is self.first and self.later and child.imported_at is not None:
            self._let_later_runs_start()  # a quick import: the other runs start now
        if child.step_over:  # a chained step said done: its result now, the next one starts
            others = [c for c in self.running if c is not child]
            # Its next step may run its probes once imported, without asking again, when
            # no other step child waits for a slot and one is free (one wake-up less a step).
            free = sum(c.working for c in others) < self.slots and not any(c.waits_to_start for c in others)
            self._done(*child.end_step(start_at_import=free))
        if child.poll_ended():
            self._ended(child)

    def _ended(self, child: StepProcess) -> None:
        self.running.remove(child)
        rest = child.rest()
        result = child.finish(self.sel, alone=not self.running and not self.waiting and not self.later and not rest)
        if result is not None and child.resume_at:
            # A fresh probe changed the step child: a new one runs the rest of the step.
            job = dataclasses.replace(child.job, first_probe=child.resume_at)
            self._spawn([job] + [self.jobs[i] for i in rest], [child.index] + rest, carry=result)
            return
        if result is not None:
            self._done(child.index, result)
        first = child is self.first
        if first and self.later and result is not None and IMPORTED not in {m.get("type") for m in result.messages}:
            # The module did not import (or its import was killed): every
            # step gets that result, and no other process starts.
            for i in rest + [i for run in self.later for i in run]:
                self._done(i, result)
            rest, self.later = [], []
        if rest:
            self.waiting.append(rest)
        if first and self.later:  # it ended after importing: the others go on
            self._let_later_runs_start()

    def _clean_up(self, leftovers: list[str] | None) -> None:
        for child in self.running:  # only after an exception in this process
            try:
                child.finish(self.sel, alone=True)
            except Exception:  # keep cleaning up: the descendants are killed below
                pass
        self.sel.close()
        kill_descendants()
        if leftovers is None:
            for folder in self.scratches:
                shutil.rmtree(folder, ignore_errors=True)
        else:
            leftovers.extend(self.scratches)


def chains(jobs: list[StepJob], parallel: int) -> list[list[int]]:
    """Job indices in at most ``parallel`` runs of consecutive jobs that one step child may run in turn.

    Only jobs with the same source, limits and probe function share a step
    child (one submission's steps), split as evenly as their probe counts allow.

    >>> job = lambda n, src="": StepJob(step=n, source_b64=src, probes=({},) * n, nonce=str(n))
    >>> chains([job(1), job(2), job(3), job(4)], 2)
    [[0, 1, 2], [3]]
    >>> chains([job(1), job(2, "x")], 2)
    [[0], [1]]
    """
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, job in enumerate(jobs):
        groups.setdefault((job.source_b64, job.limits, job.probe_function), []).append(i)
    runs: list[list[int]] = []
    for indices in groups.values():
        lanes = max(min(parallel, len(indices)), 1)
        weights = [len(jobs[i].probes) + 1 for i in indices]
        share, total = sum(weights) / lanes, 0.0
        run: list[int] = []
        for i, weight in zip(indices, weights):
            if run and total + weight / 2 > share * (len(runs) % lanes + 1) and len(runs) % lanes < lanes - 1:
                runs.append(run)
                run = []
            run.append(i)
            total += weight
        runs.append(run)
    return runs
