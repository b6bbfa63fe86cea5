"""The fork server: serve step jobs in bounded step children, several steps of a submission each.

This module is what runs inside the fork server (``python -I``, a clean
environment, started by :class:`grader.engine.client.EngineClient`). :func:`serve`
imports LangGraph and the grader's probes once (the *warm* state every step
child inherits) and then serves requests, one JSON line in (a list of step
jobs and how many may run at once), one JSON line out per finished step, over
its stdin/stdout (the wire format is :mod:`grader.engine.protocol`'s). For
each job it:

1. forks a step child that runs :func:`grader.engine.child.run_steps`
   (learner code runs only there) for one job, or for several jobs of one
   submission in turn (``chain``, see :func:`run_jobs`);
2. reads the step child's result pipe (JSON lines, size-capped,
   shape-checked, nonce-checked; never pickle) and its stdout/stderr capture
   pipe (capped *while* reading: excess bytes are drained and dropped);
3. enforces the wall-clock timeout, then SIGKILLs the step child's process
   group, and at the end of the request **every other descendant** -- the
   fork server is a child subreaper, so a grandchild that called ``setsid()``
   and was orphaned becomes its child, and ``/proc`` lists it -- and reaps
   them;
4. answers with a :class:`~grader.engine.protocol.StepResult`: the messages,
   the output, exit status or signal, whether the step timed out, and the
   elapsed time.

The process-tree cleanup lives in :mod:`grader.engine.proctree`, the engine
client in :mod:`grader.engine.client`.

Example (what the fork server does for one request; only in a process of its
own, because it ends by killing every descendant of the calling process)::

    >>> results = run_jobs([StepJob(step=1, source_b64="", probes=(), nonce="n1")])  # doctest: +SKIP
    >>> [m["type"] for m in results[0].messages], results[0].exit_status  # doctest: +SKIP
    (['imported', 'done'], 0)
"""
from __future__ import annotations

import base64
import dataclasses
import errno
import gc
import json
import os
import selectors
import shutil
import signal
import sys
import tempfile
import time
from typing import Callable

from grader.engine import cgroups, confine
from grader.engine.hugepages import collapse_heap
from grader.engine.lines import Received, forget_line, plain_run, result_line, write_bytes, write_line
from grader.engine.proctree import become_subreaper, kill_descendants, kill_group
from grader.engine.protocol import (CHANGED, DONE, FINAL_TYPES, IMPORTED, MAX_MESSAGE_BYTES, MAX_TOTAL_MESSAGE_BYTES,
                                    MESSAGE_TYPES, OBS, PRERELEASED, RUN, TRACE_MISMATCH, Message, StepJob, StepResult,
                                    claimed_runs, jobs_from_request)
from grader.engine.reports import names_report_files, resolve_report_files
from grader.engine.sharedpages import memoize_builtin_signatures

TRUNCATED_MARK = "\n[... output truncated]\n"
# A step whose import took longer (seconds) runs the steps after it in step
# children of their own, which import at once, not one after another in its own.
CHAIN_IMPORT_SECONDS = 0.25
# The longest the fork server goes without reading a running step child's
# result pipe (seconds); the step child's bell wakes it sooner (see _StepChild).
RESULT_TICK = 0.05
# What step children need, imported once here. Not grader.checks: judging
# happens in the client, never where learner code runs.
PRELOAD = ("langgraph.graph", "grader.engine.probes", "grader.engine.encode", "grader.spec",
           # Imported by LangGraph's first run of a graph with conditional edges, which the
           # tiny warm-up graph below does not have: each step child would import them itself.
           "langchain_core.tracers.context", "langchain_core.tracers.run_collector",
           "langchain_core.tracers.stdout")


def serve() -> None:
    """Main loop of the fork server: one request per stdin line, result lines on stdout.

    A request is ``{"request": id, "sources": [base64, ...], "jobs": [StepJob.to_json(), ...], "parallel": n,
    "chain": bool}`` (:func:`~grader.engine.protocol.request_to_json`: each job names its source by index)
    (``chain``: one step child may run several of the jobs, see :func:`run_jobs`).
    Each job's result is written as soon as that step is over
    (``{"type": "result", "request": id, "index": i, "result": {...}}``),
    then ``{"type": "done", "request": id}``: if a step kills this process,
    the results already written still count.

    Example (how :class:`grader.engine.client.EngineClient` starts it; it takes over
    this process's stdin and stdout)::

        $ python -I -c "from grader.engine.server import serve; serve()"
        {"type": "ready", "pid": 4242, "preloaded": [...], "scratch": "/tmp/agtool-warm-..."}
    """
    become_subreaper()
    _confine_server()
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    # Keep the protocol on private fds; fds 0 and 1 become /dev/null so that a
    # stray print (ours or a library's) can never corrupt a result line.
    channel_in = os.fdopen(os.dup(0), "rb")
    channel_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    # No collection while LangGraph is imported (it makes objects by the
    # hundred thousand, and the young generations were walked again and again):
    # one collection after it. 0.63 s instead of 0.67 s to ready, measured.
    gc.disable()
    preloaded = _preload()
    # Children would otherwise have their first garbage collection walk (and
    # so copy, page by page) every object LangGraph left in this process.
    # Frozen without a collection first: one found 841 garbage objects after
    # the preload and cost 90 ms of every cold start (measured).
    gc.freeze()
    gc.enable()
    # Only with $AGTOOL_HUGEPAGES=1: the huge pages do not outlast the first
    # grading, and the collapse delays a cold start (see grader.engine.hugepages).
    hugepages = collapse_heap()
    global _scratch_base
    # Every step's scratch folder lives under this one, so whoever outlives
    # this process (the client, if it is killed) can remove them all at once.
    _scratch_base = tempfile.mkdtemp(prefix="agtool-warm-")
    write_line(channel_out, {"type": "ready", "pid": os.getpid(), "preloaded": preloaded,
                              "scratch": _scratch_base, "hugepages": hugepages})
    try:
        _serve_requests(channel_in, channel_out)
    finally:
        kill_descendants()
        shutil.rmtree(_scratch_base, ignore_errors=True)
        _release_server_group()


def _serve_requests(channel_in, channel_out: int) -> None:
    for line in channel_in:
        leftovers: list[str] = []
        request_id = None
        try:
            request = json.loads(line)
            request_id = request.get("request")

            def report(index: int, result: StepResult) -> None:  # as soon as a step is over
                write_bytes(channel_out, result_line(request_id, index, result))

            jobs = jobs_from_request(request)
            run_jobs(jobs, parallel=int(request.get("parallel", 1)), chain=request.get("chain") is True,
                     leftovers=leftovers, on_result=report)
            reply = {"type": "done", "request": request_id}
        except BrokenPipeError:  # the client is gone: nothing left to serve
            break
        except Exception as exc:  # a malformed request: say so, keep serving
            reply = {"type": "done", "request": request_id, "infra_error": f"{type(exc).__name__}: {exc}"}
        try:
            write_line(channel_out, reply)
        except BrokenPipeError:
            break
        for folder in leftovers:  # after answering: the client need not wait for the disk
            shutil.rmtree(folder, ignore_errors=True)


def _stop_on_sigterm(signum, frame) -> None:
    kill_descendants()  # a step still running dies with us, escaped grandchildren included
    if _scratch_base:
        shutil.rmtree(_scratch_base, ignore_errors=True)
    _release_server_group()
    os._exit(0)


_scratch_base: "str | None" = None  # set by serve()


def run_job(job: StepJob, *, leftovers: "list[str] | None" = None) -> StepResult:
    """Run one step job: see :func:`run_jobs`.

    Example (in the fork server: it kills every descendant of the calling process)::

        >>> run_job(StepJob(step=1, source_b64="", probes=(), nonce="n1")).timed_out  # doctest: +SKIP
        False
    """
    return run_jobs([job], leftovers=leftovers)[0]


def run_jobs(jobs: "list[StepJob]", *, parallel: int = 1, chain: bool = False,
             leftovers: "list[str] | None" = None,
             on_result: "Callable[[int, StepResult], None] | None" = None) -> "list[StepResult]":
    """Run step jobs in step children, at most ``parallel`` past their import at a time; watch, clean up, describe each.

    Without ``chain``, each job has a step child of its own, and every one
    imports at once. With ``chain``, jobs of one submission (same source,
    limits and probe function) are split into at most ``parallel`` runs of
    consecutive jobs, and one step child runs a run's jobs one after another
    (:func:`grader.engine.child.run_steps`: a new import per step): a
    process per step costs more than most steps' work. A step child that
    dies, overruns or says it changed ends its step only; the jobs after it
    go to a new step child.

    Each step has its own deadline: its job's ``import_timeout`` from its
    start until it says it imported, then each probe's own bound within
    the job's ``timeout`` for all its probes (see ``Limits``).
    When a step child ends, its process group is killed; when the last one ends,
    every remaining descendant is (a grandchild that escaped its group
    cannot be told apart from a sibling step's, so it waits for the end).
    Scratch folders are removed before returning, or appended to
    ``leftovers`` for the caller to remove later. ``on_result(index,
    result)`` is called as each step is over. Every process the jobs started
    is dead when this returns.
    """
    results: "list[StepResult | None]" = [None] * len(jobs)
    waiting = _chains(jobs, parallel) if chain else [[i] for i in range(len(jobs))]
    # With ``chain``, the first run starts alone: its first import decides
    # for the others (see the docstring).
    held, waiting = waiting[1:] if chain else [], waiting[:1] if chain else waiting
    head: "_StepChild | None" = None
    running: "list[_StepChild]" = []
    scratches: list[str] = []
    sel = selectors.DefaultSelector()

    def done(index: int, result: StepResult) -> None:
        results[index] = result
        if on_result is not None:
            on_result(index, result)

    try:
        while waiting or running:
            # Every step child imports at once; ``parallel`` bounds the steps past
            # their import (the learner's work, which competes for the cores):
            # an honest import that sleeps or reads a file would otherwise make
            # the steps wait for each other's imports in turn. A step that has
            # imported waits in its child for a byte on its go pipe.
            while waiting:
                indices = waiting.pop(0)
                running.append(_StepChild([jobs[i] for i in indices], sel, indices=indices))
                scratches.append(running[-1].scratch)
                head = running[-1] if head is None and chain else head
            working = sum(c.released for c in running)
            for child in running:
                if working >= max(parallel, 1):
                    break
                if child.imported_at is not None and not child.released:
                    child.release()
                    working += 1
            wake = min(min(c.deadline, c.judge_import_at()) for c in running)
            # At least every RESULT_TICK: a step child whose bell is closed or full still gets read.
            wait = min(max(wake - time.monotonic(), 0), RESULT_TICK)
            if not all(c.pidfd is not None for c in running):
                wait = min(wait, 0.01)  # no pidfd (old kernels): poll for the children's end
            for key, _ in sel.select(wait):
                if key.data() < 0:  # EOF (or refused): stop watching this fd
                    sel.unregister(key.fileobj)
            for child in running:  # whatever woke us: deadlines and ends are judged on every line sent
                child.read_results()
            for child in list(running):
                if child.slow_import(time.monotonic()):  # the steps after it must not wait for its imports in turn
                    waiting += [[i] for i in child.split_off()]
                    if child is head:
                        waiting += [[i] for run in held for i in run]
                        held = []
                elif child.channel_errors and child.position < len(child.jobs) - 1:
                    # Its channel is not to be trusted to say when the step is over: the
                    # step child ends after this step, a new one runs the steps after it.
                    waiting.append(child.split_off())
                if child is head and held and child.imported_at is not None:
                    waiting += held  # a quick import: the other runs start now
                    held = []
                if child.step_over:  # a chained step said done: its result now, the next one starts
                    others = [c for c in running if c is not child]
                    # Its next step may run its probes once imported, without asking again, when
                    # no other step child waits for a slot and one is free (one wake-up less a step).
                    free = (sum(c.released for c in others) < max(parallel, 1)
                            and not any(c.imported_at is not None and not c.released for c in others))
                    done(*child.end_step(prerelease=free))
                if child.poll_ended():
                    running.remove(child)
                    rest = child.rest()
                    result = child.finish(sel, alone=not running and not waiting and not held and not rest)
                    if result is not None and child.resume_at:
                        # A fresh probe changed the step child: a new one runs the rest of the step.
                        job = dataclasses.replace(child.job, first_probe=child.resume_at)
                        running.append(_StepChild([job] + [jobs[i] for i in rest], sel,
                                                  indices=[child.index] + rest, carry=result))
                        scratches.append(running[-1].scratch)
                        continue
                    if result is not None:
                        done(child.index, result)
                    if child is head and held and result is not None and IMPORTED not in _types(result):
                        # The module did not import (or its import was killed): every
                        # step gets that result, and no other process starts.
                        for i in rest + [i for run in held for i in run]:
                            done(i, result)
                        rest, held = [], []
                    if rest:
                        waiting.append(rest)
                    if child is head and held:  # it ended after importing: the others go on
                        waiting += held
                        held = []
    finally:
        for child in running:  # only after an exception in this process
            try:
                child.finish(sel, alone=True)
            except Exception:  # keep cleaning up: the descendants are killed below
                pass
        sel.close()
        kill_descendants()
        if leftovers is None:
            for folder in scratches:
                shutil.rmtree(folder, ignore_errors=True)
        else:
            leftovers.extend(scratches)
    return results


def _chains(jobs: "list[StepJob]", parallel: int) -> "list[list[int]]":
    """Job indices in at most ``parallel`` runs of consecutive jobs that one step child may run in turn.

    Only jobs with the same source, limits and probe function share a step
    child (one submission's steps), split as evenly as their probe counts allow.

    >>> job = lambda n, src="": StepJob(step=n, source_b64=src, probes=({},) * n, nonce=str(n))
    >>> _chains([job(1), job(2), job(3), job(4)], 2)
    [[0, 1, 2], [3]]
    >>> _chains([job(1), job(2, "x")], 2)
    [[0], [1]]
    """
    groups: "dict[tuple, list[int]]" = {}
    for i, job in enumerate(jobs):
        groups.setdefault((job.source_b64, job.limits, job.probe_function), []).append(i)
    chains: "list[list[int]]" = []
    for indices in groups.values():
        lanes = max(min(parallel, len(indices)), 1)
        weights = [len(jobs[i].probes) + 1 for i in indices]
        share, run, total = sum(weights) / lanes, [], 0.0
        for i, weight in zip(indices, weights):
            if run and total + weight / 2 > share * (len(chains) % lanes + 1) and len(chains) % lanes < lanes - 1:
                chains.append(run)
                run = []
            run.append(i)
            total += weight
        chains.append(run)
    return chains


class _StepChild:
    """One forked step child running one step job, or several in turn: its pipes, its deadline, what it sent."""

    # Its phases (set in __init__ and as messages arrive; here for objects
    # the tests build without a process).
    imported_at: "float | None" = None
    released = False
    _prereleased = False
    step_over = False
    in_flight = True
    _import_judged = True
    probe_started = 0.0
    work_deadline = deadline = float("inf")

    def __init__(self, jobs: "list[StepJob]", sel: selectors.BaseSelector, *, indices: "list[int]",
                 carry: "StepResult | None" = None):
        """``carry``: what an earlier step child sent of the first job (it resumes at ``first_probe``)."""
        from grader.engine import child as child_module

        self.jobs, self.indices, self.position = list(jobs), list(indices), 0
        self.limits = self.jobs[0].limits
        self.output_cap = self.limits.output_bytes
        self.exit_status: "int | None" = None
        self.signal: "int | None" = None
        self.cpu_seconds = 0.0  # of the step's own process (not of what it forked)
        self._cpu_used = 0.0  # by the steps already over (a chain's)
        self._status: "int | None" = None  # raw wait status once reaped
        self._more = True  # the step child has not said it ends after its current step
        self._begin_step()
        if carry is not None:
            self._carry(carry)

        code = _compiled(self.jobs[0].source_b64)
        self.scratch = tempfile.mkdtemp(prefix="agtool-step-", dir=_scratch_base)
        self.confinement = _step_confinement(self.scratch, self.limits)  # cgroup, scratch budget
        result_r, result_w = os.pipe()
        output_r, output_w = os.pipe()
        go_r, go_w = os.pipe()
        bell_r, bell_w = os.pipe()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        child_module.GraderModules.prepare()  # the step child need not walk sys.modules itself
        pid = os.fork()
        if pid == 0:  # the step child: never returns
            try:
                os.close(result_r)
                os.close(output_r)
                os.close(go_w)
                os.close(bell_r)
                os.set_blocking(bell_w, False)  # a full bell is rung enough: never wait on it
                self.confinement.enter()  # before any learner code: group, priority, read-only, no caps
                child_module.run_steps(tuple(self.jobs), scratch=self.scratch, result_fd=result_w,
                                       output_fd=output_w, code=code, go_fd=go_r, bell_fd=bell_w)
            finally:
                os._exit(70)
        os.close(result_w)
        os.close(output_w)
        os.close(go_r)
        os.close(bell_w)
        self._go_fd: "int | None" = go_w
        self.pid, self._result_fd, self._output_fd, self._bell_fd = pid, result_r, output_r, bell_r
        for fd in (result_r, output_r, bell_r):
            os.set_blocking(fd, False)
        # The result pipe is read when the bell rings (and at every wake-up of
        # run_jobs), not at every line: see grader.engine.child.run_steps. The
        # learner's output is read as it comes, so that printing never waits.
        sel.register(bell_r, selectors.EVENT_READ, self._rung)
        sel.register(output_r, selectors.EVENT_READ, self._read_output)
        self.pidfd = _pidfd_open(pid)
        self._exit_seen = self.pidfd is None  # with a pidfd, wait4 only once it said the child exited
        if self.pidfd is not None:
            sel.register(self.pidfd, selectors.EVENT_READ, self._ended)  # wakes us; poll_ended() reaps

    def _begin_step(self) -> None:
        """Start the bookkeeping of the job at ``position``."""
        job = self.jobs[self.position]
        self.job, self.index = job, self.indices[self.position]
        self.nonce, self.n_probes = job.nonce, len(job.probes)
        self.messages: list[Message] = []
        self._resolved = 0  # messages whose report files were read
        self.channel_errors: list[str] = []
        self.timed_out = False
        self.killed = 0
        self.output_dropped = 0
        self._output = bytearray()
        self._pending = bytearray()
        self._total = 0
        # The step child's messages come in one order: imported, obs 0..n-1,
        # done (or a lone import_error / fatal). Anything else is refused.
        self._last_type = ""
        self._next_index = 0
        # The body-run trace since the last observation, counted here: the
        # step child's own counts can be wound back by the module, these cannot.
        self._runs: "dict[str, int]" = {}
        self.released = self.step_over = self._import_judged = self._resumed = self._prereleased = False
        self.resume_at = 0  # a fresh probe changed the step child: probes from here go to a new one
        self._carried_hits: "tuple[str, ...]" = ()
        self.in_flight = True
        self.started = time.monotonic()
        # The deadline follows the step's phases (see Limits): the import has
        # its own bound; once it is over, each probe has its own, within the
        # step's budget for all of them. It moves as the step's messages arrive.
        self.deadline = self.started + self.limits.import_timeout
        self.imported_at: "float | None" = None
        self.work_deadline = float("inf")
        self.probe_started = self.started
        self.timeout_phase = ""
        self.phase_seconds = 0.0

    def _carry(self, earlier: StepResult) -> None:
        """Go on from where an earlier step child left the first job: its messages, output and clock."""
        self.messages = list(earlier.messages)
        self.channel_errors = list(earlier.channel_errors)
        self._output = bytearray(earlier.output.encode("utf-8", errors="replace")[:self.output_cap])
        self.output_dropped = int(earlier.output_truncated)
        self.killed = earlier.killed_descendants
        self._carried_hits = tuple(earlier.limits_hit)
        self._cpu_used = -earlier.cpu  # this step's CPU so far counts in its result
        self._next_index = self.job.first_probe
        self._resolved = len(self.messages)  # their report files were read in the earlier scratch folder
        self.started = time.monotonic() - earlier.elapsed
        self._resumed = True

    def end_step(self, *, prerelease: bool = False) -> "tuple[int, StepResult]":
        """(A chained step said ``done``.) Its result; let the step child begin its next step, if any.

        With ``prerelease`` the next step runs its probes as soon as it has
        imported (:data:`~grader.engine.protocol.PRERELEASED`); its work's
        clock starts when its ``imported`` message is read.

        The step child waits meanwhile: what the step left running in its
        group is killed, its report files are read, the limits it hit are
        taken and its scratch folder is emptied before the next step begins.
        """
        self.step_over = False
        self._drain(self._read_output)
        self._resolve_reports()
        self.killed, hits = self.confinement.next_step(self.pid)
        cpu = _process_cpu(self.pid)
        result = self._result(exit_status=0, signal=None, cpu=max(cpu - self._cpu_used, 0.0), limits_hit=hits)
        self._cpu_used = max(cpu, self._cpu_used)
        index = self.index
        self.position += 1
        if self._more and self.position < len(self.jobs):
            self._begin_step()
            try:
                os.write(self._go_fd, PRERELEASED if prerelease else b"n")
            except OSError:  # the step child is gone: poll_ended() will say how
                pass
            if prerelease:
                self.released = self._prereleased = True
                if self.position == len(self.jobs) - 1:  # nothing more to say to it
                    self._close_go()
        else:
            # No step in flight: the step child ends by itself (a few seconds'
            # grace, then it is killed); the jobs it did not begin go to a new one.
            self.in_flight = False
            self.deadline = time.monotonic() + 5.0
            self._close_go()
        return index, result

    def slow_import(self, now: float) -> bool:
        """True once, as soon as the step's import has taken more than ``CHAIN_IMPORT_SECONDS``."""
        if self._import_judged:
            return False
        took = (self.imported_at if self.imported_at is not None else now) - self.started
        self._import_judged = self.imported_at is not None or took > CHAIN_IMPORT_SECONDS
        return took > CHAIN_IMPORT_SECONDS

    def judge_import_at(self) -> float:
        """When :meth:`slow_import` has to be asked (infinity once it answered)."""
        return float("inf") if self._import_judged else self.started + CHAIN_IMPORT_SECONDS

    def split_off(self) -> "list[int]":
        """Take the jobs after the current one away from this step child; their indices."""
        rest = self.indices[self.position + 1:]
        del self.jobs[self.position + 1:], self.indices[self.position + 1:]
        if self.released:  # it has its go byte: the end of the pipe tells it to end after this step
            self._close_go()
        return rest

    def rest(self) -> "list[int]":
        """(The step child ended.) The indices of the jobs it did not begin, for a new step child."""
        return self.indices[self.position + (1 if self.in_flight else 0):]

    def release(self) -> None:
        """Let the imported step run its probes (one byte on its go pipe); their time limits start now."""
        self._start_work()
        try:
            os.write(self._go_fd, b"g")
        except OSError:  # the step child is gone: poll_ended() will say how
            pass
        if self.position == len(getattr(self, "jobs", ())) - 1:  # nothing more to say to it
            self._close_go()

    def _start_work(self) -> None:
        self.released = True
        self.probe_started = time.monotonic()
        self.work_deadline = self.probe_started + self.limits.timeout
        self._probe_deadline()

    def _probe_deadline(self) -> None:
        limits = getattr(self, "limits", None)  # none on bookkeeping-only objects of the tests
        if limits is not None:
            self.deadline = min(self.work_deadline, self.probe_started + limits.per_probe)

    def _close_go(self) -> None:
        if self._go_fd is not None:
            os.close(self._go_fd)
            self._go_fd = None

    _exit_seen = True  # (no pidfd: ask the kernel every time)

    def _ended(self) -> int:
        """(The pidfd is readable: the step child exited.) Stop watching it; poll_ended() reaps."""
        self._exit_seen = True
        return -1

    def poll_ended(self) -> bool:
        """Reap the step child if it exited; mark it timed out past its deadline. True when it is over."""
        if self._status is None and self._exit_seen:
            pid, status, usage = os.wait4(self.pid, os.WNOHANG)
            if pid:
                self._status = status
                self.cpu_seconds = usage.ru_utime + usage.ru_stime
        now = time.monotonic()
        if self._status is None and now >= self.deadline and not self.timed_out:
            self.timed_out = self.in_flight  # else it outstayed its grace after its last step: just end it
            self.timeout_phase = "import" if self.imported_at is None else "probe"
            self.phase_seconds = round(now - (self.started if self.imported_at is None else self.probe_started), 3)
        return self._status is not None or self.timed_out or (not self.in_flight and now >= self.deadline)

    def finish(self, sel: selectors.BaseSelector, *, alone: bool) -> "StepResult | None":
        """Kill what is left of the step child, read what it sent, close its fds; the result of its step in flight.

        ``None`` when no step was in flight (a chained step child that ended
        after its last step, or after saying it would).
        """
        self._kill_group()
        self._close_go()
        if self._status is None:
            _, self._status, usage = os.wait4(self.pid, 0)
            self.cpu_seconds = usage.ru_utime + usage.ru_stime
        if os.WIFSIGNALED(self._status):
            self.signal = os.WTERMSIG(self._status)
        else:
            self.exit_status = os.waitstatus_to_exitcode(self._status)
        if alone:  # no sibling step runs: every descendant left is this step's
            self.killed += kill_descendants()
        if self.in_flight:
            # What the step child wrote before it ended is still in the pipes. Read what
            # is there now, a bounded amount: an escaped writer could go on forever.
            self._drain(self._read_result)
            self._drain(self._read_output)
            if self._pending:
                self._accept(bytes(self._pending))
            # The report probe said where write_report wrote; the files are read
            # here, now that the step's processes are gone (see grader.engine.reports).
            self._resolve_reports()
        for fd in (self._result_fd, self._output_fd, self._bell_fd, self.pidfd):
            if fd is not None:
                try:
                    sel.unregister(fd)
                except (KeyError, ValueError):
                    pass
                os.close(fd)
        hits = self.confinement.close()  # after the report files were read from scratch
        if not self.in_flight:
            return None
        return self._result(exit_status=self.exit_status, signal=self.signal,
                            cpu=max(self.cpu_seconds - self._cpu_used, 0.0), limits_hit=hits)

    def _resolve_reports(self) -> None:
        """Read the report files the step's observations name from its scratch folder (each once)."""
        for message in self.messages[self._resolved:]:
            if message.get("type") == OBS and names_report_files(message.get("obs")):
                resolve_report_files(message.get("obs"), self.scratch)
                forget_line(message)
        self._resolved = len(self.messages)

    @staticmethod
    def _drain(reader: "Callable[[], int]") -> None:
        for _ in range(64):  # bounded: an escaped writer could go on forever
            if reader() <= 0:
                break

    def _result(self, *, exit_status: "int | None", signal: "int | None", cpu: float,
                limits_hit: "tuple[str, ...]") -> StepResult:
        return StepResult(
            messages=tuple(self.messages),
            channel_errors=tuple(self.channel_errors),
            output=self.output_text(),
            output_truncated=self.output_dropped > 0,
            exit_status=exit_status,
            signal=signal,
            timed_out=self.timed_out,
            timeout_phase=self.timeout_phase,
            phase_seconds=self.phase_seconds,
            import_seconds=round(self.imported_at - self.started, 4) if self.imported_at is not None else 0.0,
            elapsed=round(time.monotonic() - self.started, 4),
            cpu=round(cpu, 4),
            killed_descendants=self.killed,
            limits=self.confinement.words,
            limits_hit=tuple(dict.fromkeys(self._carried_hits + tuple(limits_hit))),
        )

    def _kill_group(self) -> None:
        confinement = getattr(self, "confinement", None)  # none on bookkeeping-only objects of the tests
        if confinement is not None:
            confinement.kill()  # the step's cgroup: every process, setsid() escapees included
        # Once reaped, the pid (and so the group id) may belong to someone else.
        if self._status is None:
            kill_group(self.pid)

    # The readers return the number of bytes read: 0 = nothing right now, -1 = stop reading.

    def _read_output(self) -> int:
        data = _read_some(self._output_fd)
        if not data:
            return 0 if data is None else -1
        room = max(self.output_cap - len(self._output), 0)
        self._output += data[:room]  # capped as it arrives: the excess is dropped, never stored
        self.output_dropped += max(len(data) - room, 0)
        return len(data)

    def _rung(self) -> int:
        """(The bell rang.) Empty the bell; run_jobs reads the result pipe after every wake-up. -1 at its end."""
        return -1 if _read_some(self._bell_fd, 4096) == b"" else 1

    def read_results(self) -> None:
        """Read what the step child wrote on its result pipe so far (a bounded amount)."""
        if not self._results_over:
            self._drain(self._read_result)

    _results_over = False  # the result pipe ended or was refused: read no more

    def _read_result(self) -> int:
        data = _read_some(self._result_fd)
        if not data:
            if data is not None:
                self._results_over = True
            return 0 if data is None else -1
        self._total += len(data)
        if self._total > MAX_TOTAL_MESSAGE_BYTES:
            self._channel_error(f"the step sent more than {MAX_TOTAL_MESSAGE_BYTES} bytes of results")
            self._kill_group()
            self._results_over = True
            return -1
        self._pending += data
        while (cut := self._pending.find(b"\n")) >= 0:
            line = bytes(self._pending[:cut])
            del self._pending[:cut + 1]
            self._accept(line)
        if len(self._pending) > MAX_MESSAGE_BYTES:
            self._channel_error(f"a result message longer than {MAX_MESSAGE_BYTES} bytes was refused")
            self._pending.clear()
            self._kill_group()
            self._results_over = True
            return -1
        return len(data)

    def _accept(self, line: bytes) -> None:
        if len(line) > MAX_MESSAGE_BYTES:
            return self._channel_error(f"a result message longer than {MAX_MESSAGE_BYTES} bytes was refused")
        message = plain_run(line, self.nonce)
        if message is None:
            try:
                message = json.loads(line)
            except ValueError:
                return self._channel_error("a result line that is not JSON was refused")
            if type(message) is dict:
                message = Received(message, line)
        problem = self._shape_problem(message)
        if problem:
            return self._channel_error(problem)
        if message["type"] == RUN:  # counted, not kept: the observation carries the counts
            tool = str(message.get("tool", ""))[:100]
            if len(self._runs) < 64 or tool in self._runs:
                self._runs[tool] = self._runs.get(tool, 0) + 1
            return None
        self._last_type = message["type"]
        if message["type"] == CHANGED:
            self.resume_at = message["next"]
            return None
        if message["type"] == IMPORTED:
            self.imported_at = time.monotonic()
            self.deadline = float("inf")  # waiting for a slot: release() starts the clock of its work
            if self._prereleased:  # it had its slot already: its probes run now
                self._start_work()
            if self._resumed:  # the step said so once already
                return None
        if message["type"] == DONE and len(getattr(self, "jobs", ())) > 1:
            self._more = message.get("more") is True
            self.step_over = True  # run_jobs ends the step and begins the next (end_step)
        if message["type"] == OBS:
            self._next_index += 1
            self._check_trace(message)
            self.probe_started = time.monotonic()  # the next probe begins
            self._probe_deadline()
        self.messages.append(message)

    def _check_trace(self, message: dict) -> None:
        """Replace an observation that accounts for fewer tool runs than the trace showed."""
        runs, self._runs = self._runs, {}
        claimed = claimed_runs(message["obs"])
        hidden = {tool: n for tool, n in runs.items() if n > claimed.get(tool, 0)}
        if hidden:
            said = ", ".join(f"{tool} {n} time(s), the step's own counts say {claimed.get(tool, 0)}"
                             for tool, n in sorted(hidden.items()))
            forget_line(message)
            message["obs"] = {"probe_error": TRACE_MISMATCH,
                              "message": f"the tool body ran {said}: the module wound back the grader's counts"}

    def _shape_problem(self, message: object) -> str:
        if not isinstance(message, dict) or message.get("type") not in MESSAGE_TYPES:
            return "a result message of unknown shape was refused"
        if message.get("nonce") != self.nonce:
            return "a result message with a wrong nonce was refused (forged?)"
        kind = message["type"]
        if self._last_type in FINAL_TYPES:
            return f"a {kind!r} message after the step had ended was refused"
        if kind == RUN:
            return "" if self._last_type in (IMPORTED, OBS) else "a 'run' message before the import was refused"
        if kind == OBS:
            index = message.get("index")
            if type(index) is not int or not 0 <= index < self.n_probes or not isinstance(message.get("obs"), dict):
                return "an observation of unknown shape was refused"
            if index != self._next_index or self._last_type not in (IMPORTED, OBS):
                return f"an observation for probe {index} out of order was refused"
        elif kind == IMPORTED and self._last_type:
            return "a second 'imported' message was refused"
        elif kind == CHANGED and (self._last_type != OBS or message.get("next") != self._next_index
                                  or self._next_index >= self.n_probes):
            return "a 'changed' message out of place was refused"
        elif kind == DONE and (self._next_index != self.n_probes or self._last_type not in (IMPORTED, OBS)):
            return "a 'done' message before every observation was refused"
        elif kind == DONE and type(message.get("more", False)) is not bool:
            return "a 'done' message of unknown shape was refused"
        return ""

    def _channel_error(self, text: str) -> None:
        if self.imported_at is None:
            # Refused bytes before "imported": the module wrote on the result
            # pipe, maybe over our own "imported" line. Its import is then
            # over; from here its probes' bounds apply (it is released below,
            # else it would wait for a go byte that never comes).
            self.imported_at = time.monotonic()
            self.deadline = float("inf")
        if len(self.channel_errors) < 20:
            self.channel_errors.append(text)

    def output_text(self) -> str:
        text = bytes(self._output).decode("utf-8", errors="replace")
        return text + TRUNCATED_MARK if self.output_dropped else text


def _types(result: StepResult) -> "set[str]":
    return {m.get("type") for m in result.messages}


_compiled_cache: "dict[str, object]" = {}


def _compiled(source_b64: str):
    """The submission's code object, compiled once for all the steps it is sent with.

    The steps of one submission arrive with the same source, so each step
    child is forked with the code ready instead of compiling it again
    (``grader.engine.child.compile_submission`` says what is left to the step child).
    """
    if source_b64 not in _compiled_cache:
        from grader.engine import child as child_module

        _compiled_cache.clear()  # one submission at a time: keep only the newest
        try:
            source = base64.b64decode(source_b64, validate=True)
        except ValueError:
            source = b"\0"  # not base64: the step child reports it
        _compiled_cache[source_b64] = child_module.compile_submission(source)
    return _compiled_cache[source_b64]


_server_group: "cgroups.ServerGroup | None" = None  # set by _confine_server()
_step_names = iter(range(1, 1 << 62))


def _confine_server() -> None:
    """(In serve().) A private mount namespace for the steps' scratch mounts; the cgroup the client made."""
    global _server_group
    confine.set_server_private(confine.private_mounts())
    _server_group = cgroups.ServerGroup.from_env(os.environ.get(cgroups.SERVER_GROUP_ENV))
    if _server_group is not None:
        _server_group.join_shared()  # v1: the steps' CPU is shared per fork server (no migration per step)


def _release_server_group() -> None:
    """(On the way out.) Remove the cgroups this fork server used: its client may be gone (os._exit)."""
    if _server_group is not None:
        _server_group.release()


def _step_confinement(scratch: str, limits) -> "confine.StepConfinement":
    """The step's cgroup (if the server has one) and scratch budget, with the words for what holds."""
    group = _server_group.step(f"s{next(_step_names)}", limits) if _server_group is not None else None
    made = confine.StepConfinement.open(scratch, disk_bytes=limits.disk_bytes, group=group)
    if group is not None:
        words = [cgroups.describe(group.version, group.limits)]
    elif _server_group is not None and _server_group.shared_cpu:  # $AGTOOL_CGROUPS=cpu
        words = [cgroups.describe(1, {"cpu": "shared"})]
    else:
        words = []
    made.words = "; ".join([w for w in words if w] + [f"cpu nice {confine.LOWEST_PRIORITY}", made.describe()])
    return made


def _process_cpu(pid: int) -> float:
    """CPU seconds ``pid`` itself used so far (0.0 if unknown)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime, stime: its own, as wait4 says
    except (OSError, ValueError, IndexError):
        return 0.0


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _pidfd_open(pid: int) -> "int | None":
    try:
        return os.pidfd_open(pid)  # readable when the process ends (Linux 5.3+)
    except (AttributeError, OSError):
        return None


def _read_some(fd: int, size: int = 65536) -> "bytes | None":
    try:
        return os.read(fd, size)
    except BlockingIOError:
        return None
    except OSError as exc:
        if exc.errno == errno.EINTR:
            return None
        return b""


def _preload() -> list[str]:
    import importlib

    done = ["builtin signatures memoized"] if memoize_builtin_signatures() else []
    for name in PRELOAD:
        try:
            importlib.import_module(name)
            done.append(name)
        except Exception:  # a module not written yet, or broken: the step child will say so
            pass
    try:
        _run_tiny_graph()
        done.append("graph warm-up")
    except Exception:
        pass
    return done


def _run_tiny_graph() -> None:
    """Compile and run a one-node graph: LangGraph imports a few modules lazily on first run."""
    import operator
    from typing import Annotated, TypedDict

    from langgraph.graph import END, START, StateGraph

    # The functional form: this module's ``from __future__ import annotations``
    # would leave a class body's annotations as strings that LangGraph cannot
    # resolve here (the warm-up then failed, silently, and did nothing).
    _State = TypedDict("_State", {"seen": Annotated[list, operator.add]})

    graph = StateGraph(_State)
    graph.add_node("only", lambda state: {"seen": [1]})
    graph.add_edge(START, "only")
    graph.add_edge("only", END)
    graph.compile().invoke({"seen": []})


if __name__ == "__main__":
    serve()
