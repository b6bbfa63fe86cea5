"""The fork server's side of one step child: fork it, start it, watch its clock, end it, describe its step.

A :class:`StepProcess` forks a step child (:func:`grader.engine.child.run_steps`)
for one step job, or for several jobs of one submission in turn. It owns
the step child's four pipes: the result pipe (read and checked by
:class:`~grader.engine.step_lines.StepLines`, which it builds on), the
capture pipe of the learner's stdout/stderr (capped while it is read), the
*start pipe* (a byte from the fork server lets an imported step run its
probes; its end tells the step child to end after its step) and the
*wake-up pipe* (the step child writes a byte there after a message the fork
server must act on at once, and after every :data:`~grader.engine.protocol.WAKE_BYTES`
written, so the fork server reads many result lines per wake-up). It keeps
the step's deadline, which follows the step's phases (the import's own
bound, then each probe's within the step's budget: see ``Limits``), and
when the step is over it describes it as a :class:`~grader.engine.protocol.StepResult`.

Which step child runs which jobs, and when, is the scheduler's
(:mod:`grader.engine.scheduling`).

Example (in the fork server only: it forks)::

    >>> child = StepProcess([job], selector, indices=[0])  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import selectors
import sys
import tempfile
import time

from grader.engine import cgroups, confine, namespaces
from grader.engine.lines import forget_line
from grader.engine.proctree import kill_descendants, kill_group
from grader.engine.protocol import OBS, START_AT_IMPORT, Limits, StepJob, StepResult
from grader.engine.report_files import names_report_files, resolve_report_files
from grader.engine.step_lines import StepLines, drain, read_some

TRUNCATED_MARK = "\n[... output truncated]\n"
# A step whose import took longer (seconds) runs the steps after it in step
# children of their own, which import at once, not one after another in its own.
CHAIN_IMPORT_SECONDS = 0.25
# After its last step a step child ends by itself: killed if it takes longer (seconds).
END_GRACE_SECONDS = 5.0


class ForkServerPlaces:
    """Where the fork server puts its step children: the scratch folder and the cgroup (set by ``serve()``)."""

    scratch_base: str | None = None
    group: cgroups.ServerGroup | None = None


SERVER = ForkServerPlaces()
_step_names = iter(range(1, 1 << 62))


class StepProcess(StepLines):
    """One forked step child running one step job, or several in turn: its pipes, its deadline, what it sent."""

    # Its phases (set in __init__ and as messages arrive; here for objects
    # the tests build without a process).
    working = False  # its probes may run (a start byte was sent, or it starts once imported)
    _starts_at_import = False
    in_flight = True
    _import_judged = True
    probe_started = 0.0
    work_deadline = deadline = float("inf")
    # Both set in __init__; None only on the tests' objects built without a process, which never read them.
    limits: Limits = None  # type: ignore[assignment]
    confinement: confine.StepConfinement = None  # type: ignore[assignment]
    _exit_seen = True  # (no pidfd: ask the kernel every time)

    def __init__(
        self, jobs: list[StepJob], sel: selectors.BaseSelector, *, indices: list[int], carry: StepResult | None = None
    ):
        """``carry``: what an earlier step child sent of the first job (it resumes at ``first_probe``)."""
        self.jobs, self.indices, self.position = list(jobs), list(indices), 0
        self.limits = self.jobs[0].limits
        self.exit_status: int | None = None
        self.signal: int | None = None
        self.cpu_seconds = 0.0  # of the step's own process (not of what it forked)
        self._cpu_used = 0.0  # by the steps already over (a chain's)
        self._status: int | None = None  # raw wait status once reaped
        self._more = True  # the step child has not said it ends after its current step
        self._begin_step()
        if carry is not None:
            self._carry(carry)
        self.scratch = tempfile.mkdtemp(prefix="agtool-step-", dir=SERVER.scratch_base)
        self.confinement = _step_confinement(self.scratch, self.limits)  # cgroup, scratch budget
        self._fork(sel)

    def _fork(self, sel: selectors.BaseSelector) -> None:
        pid, result_r, output_r, start_w, wake_r = fork_step_child(self.jobs, self.scratch, self.confinement)
        self._start_fd: int | None = start_w
        self.pid, self._result_fd, self._output_fd, self._wake_fd = pid, result_r, output_r, wake_r
        # The result pipe is read when the step child wakes us (and at every
        # wake-up of the scheduler), not at every line: see grader.engine.child.run_steps.
        # The learner's output is read as it comes, so that printing never waits.
        sel.register(wake_r, selectors.EVENT_READ, self._woken)
        sel.register(output_r, selectors.EVENT_READ, self._read_output)
        self.pidfd = _pidfd_open(pid)
        self._exit_seen = self.pidfd is None  # with a pidfd, wait4 only once it said the child exited
        if self.pidfd is not None:
            sel.register(self.pidfd, selectors.EVENT_READ, self._ended)  # wakes us; poll_ended() reaps

    def _begin_step(self) -> None:
        """Start the bookkeeping of the job at ``position``."""
        job = self.jobs[self.position]
        self.job, self.index = job, self.indices[self.position]
        self.begin_lines(job.nonce, len(job.probes))
        self._resolved = 0  # messages whose report files were read
        self.timed_out = False
        self.killed = 0
        self.output = OutputCapture(self.limits.output_bytes)
        self.working = self._import_judged = self._starts_at_import = False
        self._carried_hits: tuple[str, ...] = ()
        self.in_flight = True
        self.started = time.monotonic()
        # The deadline follows the step's phases (see Limits): the import has
        # its own bound; once it is over, each probe has its own, within the
        # step's budget for all of them. It moves as the step's messages arrive.
        self.deadline = self.started + self.limits.import_timeout
        self.work_deadline = float("inf")
        self.probe_started = self.started
        self.timeout_phase = ""
        self.phase_seconds = 0.0

    def _carry(self, earlier: StepResult) -> None:
        """Go on from where an earlier step child left the first job: its messages, output and clock."""
        self.carry_lines(earlier.messages, earlier.channel_errors, self.job.first_probe)
        self.output = OutputCapture(self.limits.output_bytes, earlier.output, earlier.output_truncated)
        self.killed = earlier.killed_descendants
        self._carried_hits = tuple(earlier.limits_hit)
        self._cpu_used = -earlier.cpu  # this step's CPU so far counts in its result
        self._resolved = len(self.messages)  # their report files were read in the earlier scratch folder
        self.started = time.monotonic() - earlier.elapsed

    # -- the clock (hooks of StepLines)

    def _import_over(self, said: bool) -> None:
        self.deadline = float("inf")  # waiting for a slot: start() starts the clock of its work
        if said and self._starts_at_import:  # it had its slot already: its probes run now
            self._start_work()

    def _probe_over(self) -> None:
        self.probe_started = time.monotonic()  # the next probe begins
        self.deadline = min(self.work_deadline, self.probe_started + self.limits.per_probe)

    def _more_steps(self) -> bool:
        return len(self.jobs) > 1

    def _start_work(self) -> None:
        self.working = True
        self.probe_started = time.monotonic()
        self.work_deadline = self.probe_started + self.limits.timeout
        self.deadline = min(self.work_deadline, self.probe_started + self.limits.per_probe)

    # -- what the scheduler asks and tells

    @property
    def waits_to_start(self) -> bool:
        """Imported, and waiting for a slot to run its probes."""
        return self.imported_at is not None and not self.working

    def start(self) -> None:
        """Let the imported step run its probes (a byte on its start pipe); their time limits start now."""
        self._start_work()
        self._write_start(b"g")
        if self.position == len(self.jobs) - 1:  # nothing more to say to it
            self._close_start()

    def end_step(self, *, start_at_import: bool = False) -> tuple[int, StepResult]:
        """(A chained step said ``done``.) Its result; let the step child begin its next step, if any.

        With ``start_at_import`` the next step runs its probes as soon as it
        has imported (:data:`~grader.engine.protocol.START_AT_IMPORT`); its
        work's clock starts when its ``imported`` message is read.

        The step child waits meanwhile: what the step left running in its
        group is killed, its report files are read, the limits it hit are
        taken and its scratch folder is emptied before the next step begins.
        """
        self.step_over = False
        drain(self._read_output)
        self._resolve_reports()
        self.killed, hits = self.confinement.next_step(self.pid)
        cpu = _process_cpu(self.pid)
        result = self._result(exit_status=0, signal=None, cpu=max(cpu - self._cpu_used, 0.0), limits_hit=hits)
        self._cpu_used = max(cpu, self._cpu_used)
        index = self.index
        self.position += 1
        if self._more and self.position < len(self.jobs):
            self._begin_step()
            self._write_start(START_AT_IMPORT if start_at_import else b"n")
            if start_at_import:
                self.working = self._starts_at_import = True
                if self.position == len(self.jobs) - 1:  # nothing more to say to it
                    self._close_start()
        else:
            # No step in flight: the step child ends by itself (a few seconds'
            # grace, then it is killed); the jobs it did not begin go to a new one.
            self.in_flight = False
            self.deadline = time.monotonic() + END_GRACE_SECONDS
            self._close_start()
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

    def split_off(self) -> list[int]:
        """Take the jobs after the current one away from this step child; their indices."""
        rest = self.indices[self.position + 1 :]
        del self.jobs[self.position + 1 :], self.indices[self.position + 1 :]
        if self.working:  # it has its start byte: the end of the pipe tells it to end after this step
            self._close_start()
        return rest

    def rest(self) -> list[int]:
        """(The step child ended.) The indices of the jobs it did not begin, for a new step child."""
        return self.indices[self.position + (1 if self.in_flight else 0) :]

    def _write_start(self, byte: bytes) -> None:
        assert self._start_fd is not None  # closed (_close_start) only once nothing more is said
        try:
            os.write(self._start_fd, byte)
        except OSError:  # the step child is gone: poll_ended() will say how
            pass

    def _close_start(self) -> None:
        if self._start_fd is not None:
            os.close(self._start_fd)
            self._start_fd = None

    # -- its end

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

    def finish(self, sel: selectors.BaseSelector, *, alone: bool) -> StepResult | None:
        """Kill what is left of the step child, read what it sent, close its fds; the result of its step in flight.

        ``None`` when no step was in flight (a chained step child that ended
        after its last step, or after saying it would).
        """
        self._kill_group()
        self._close_start()
        self._reap()
        if alone:  # no sibling step runs: every descendant left is this step's
            self.killed += kill_descendants()
        if self.in_flight:
            # What the step child wrote before it ended is still in the pipes. Read what
            # is there now, a bounded amount: a writer outside the group could go on forever.
            drain(self._read_result)
            drain(self._read_output)
            self.accept_pending()
            # The report probe said where write_report wrote; the files are read
            # here, now that the step's processes are gone (see grader.engine.report_files).
            self._resolve_reports()
        for fd in (self._result_fd, self._output_fd, self._wake_fd, self.pidfd):
            if fd is not None:
                try:
                    sel.unregister(fd)
                except (KeyError, ValueError):
                    pass
                os.close(fd)
        hits = self.confinement.close()  # after the report files were read from scratch
        if not self.in_flight:
            return None
        return self._result(
            exit_status=self.exit_status,
            signal=self.signal,
            cpu=max(self.cpu_seconds - self._cpu_used, 0.0),
            limits_hit=hits,
        )

    def _reap(self) -> None:
        if self._status is None:
            _, self._status, usage = os.wait4(self.pid, 0)
            self.cpu_seconds = usage.ru_utime + usage.ru_stime
        if os.WIFSIGNALED(self._status):
            self.signal = os.WTERMSIG(self._status)
        else:
            self.exit_status = os.waitstatus_to_exitcode(self._status)

    def _resolve_reports(self) -> None:
        """Read the report files the step's observations name from its scratch folder (each once)."""
        for message in self.messages[self._resolved :]:
            if message.get("type") == OBS and names_report_files(message.get("obs")):
                resolve_report_files(message.get("obs"), self.scratch)
                forget_line(message)
        self._resolved = len(self.messages)

    def _result(
        self, *, exit_status: int | None, signal: int | None, cpu: float, limits_hit: tuple[str, ...]
    ) -> StepResult:
        return StepResult(
            messages=tuple(self.messages),
            channel_errors=tuple(self.channel_errors),
            output=self.output.text(),
            output_truncated=self.output.dropped > 0,
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
        if self.confinement is not None:  # none on bookkeeping-only objects of the tests
            self.confinement.kill()  # the step's cgroup: every process, those that left the group included
        # Once reaped, the pid (and so the group id) may belong to someone else.
        if self._status is None:
            kill_group(self.pid)

    # -- the other pipes (readers return the bytes read: 0 = nothing right now, -1 = stop reading)

    def _read_output(self) -> int:
        return self.output.read_from(self._output_fd)

    def _woken(self) -> int:
        """(The step child wrote on the wake-up pipe.) Empty it; the scheduler reads the result pipe after every wake-up. -1 at its end."""
        return -1 if read_some(self._wake_fd, 4096) == b"" else 1


class OutputCapture:
    """The learner's stdout/stderr of one step, capped as it arrives: the excess is counted and dropped, never stored.

    >>> r, w = os.pipe(); os.set_blocking(r, False); _ = os.write(w, b"hello")
    >>> out = OutputCapture(3); out.read_from(r), out.text() == "hel" + TRUNCATED_MARK
    (5, True)
    >>> os.close(r); os.close(w)
    """

    def __init__(self, cap: int, earlier: str = "", truncated: bool = False):
        self.cap = cap
        self.kept = bytearray(earlier.encode("utf-8", errors="replace")[:cap])
        self.dropped = int(truncated)

    def read_from(self, fd: int) -> int:
        """Read what ``fd`` has now; the bytes read (0: nothing now, -1: its end)."""
        data = read_some(fd)
        if not data:
            return 0 if data is None else -1
        room = max(self.cap - len(self.kept), 0)
        self.kept += data[:room]
        self.dropped += max(len(data) - room, 0)
        return len(data)

    def text(self) -> str:
        """What was kept, marked if some was dropped."""
        text = bytes(self.kept).decode("utf-8", errors="replace")
        return text + TRUNCATED_MARK if self.dropped else text


def fork_step_child(
    jobs: list[StepJob], scratch: str, confinement: confine.StepConfinement
) -> tuple[int, int, int, int, int]:
    """Fork a step child running ``jobs``; its pid and the fork server's ends of its pipes (result, capture, start, wake-up).

    The fork server's ends are non-blocking, but for the start pipe's (it writes one byte at a time).
    """
    from grader.engine import child as child_module

    result_r, result_w = os.pipe()
    output_r, output_w = os.pipe()
    start_r, start_w = os.pipe()
    wake_r, wake_w = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    child_module.GraderModules.prepare()  # the step child need not walk sys.modules itself
    pid = os.fork()
    if pid == 0:  # the step child: never returns
        try:
            for fd in (result_r, output_r, start_w, wake_r):
                os.close(fd)
            os.set_blocking(wake_w, False)  # a full wake-up pipe wakes the fork server anyway: never wait on it
            try:
                confinement.enter()  # before any learner code: group, priority, read-only, no caps, account, walls
            except OSError as exc:  # a layer that was asked for is missing: the grader's failure, no learner code
                fatal = {
                    "type": "fatal",
                    "nonce": jobs[0].nonce,
                    "message": f"the step's isolation could not be set up: {exc}",
                }
                os.write(result_w, json.dumps(fatal).encode() + b"\n")
                raise
            child_module.PIDS_BOUNDED = confinement.pids_bounded
            # code=None: the step child compiles the submission under the step's limits, never
            # the fork server outside them (25,000 lambdas take 10 s to compile).
            # It costs some 8 ms of compile per step child for solutions/tools.py (SECURITY.md, the numbers).
            child_module.run_steps(
                tuple(jobs),
                scratch=scratch,
                result_fd=result_w,
                output_fd=output_w,
                code=None,
                start_fd=start_r,
                wake_fd=wake_w,
            )
        finally:
            os._exit(70)
    for fd in (result_w, output_w, start_r, wake_w):
        os.close(fd)
    for fd in (result_r, output_r, wake_r):
        os.set_blocking(fd, False)
    return pid, result_r, output_r, start_w, wake_r


def _step_confinement(scratch: str, limits: Limits) -> confine.StepConfinement:
    """The step's cgroup (if the server has one) and scratch budget, with the words for what holds."""
    server_group = SERVER.group
    group = server_group.step(f"s{next(_step_names)}", limits) if server_group is not None else None
    made = confine.StepConfinement.open(scratch, disk_bytes=limits.disk_bytes, group=group)
    if group is not None:
        words = [cgroups.describe(group.version, group.limits)]
    elif server_group is not None and server_group.shared_cpu:  # $AGTOOL_CGROUPS=cpu
        words = [cgroups.describe(1, {"cpu": "shared"})]
    else:
        words = []
    if confine.walls_up():
        words.append("own user, IPC and network namespaces, syscall filter")
        if group is None or "pids" not in group.limits:
            words.append(namespaces.own_process_count_words(True))
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


def _pidfd_open(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)  # readable when the process ends (Linux 5.3+)
    except (AttributeError, OSError):
        return None
