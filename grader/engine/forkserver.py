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

Which steps run where is :mod:`grader.engine.scheduling`'s, one step child's
life cycle :mod:`grader.engine.step_process`'s, the reading and checking of
its result lines :mod:`grader.engine.step_lines`'s; the process-tree cleanup
lives in :mod:`grader.engine.proctree`, the engine client in :mod:`grader.engine.client`.

Example (what the fork server does for one request; only in a process of its
own, because it ends by killing every descendant of the calling process)::

    >>> results = run_jobs([StepJob(step=1, source_b64="", probes=(), nonce="n1")])  # doctest: +SKIP
    >>> [m["type"] for m in results[0].messages], results[0].exit_status  # doctest: +SKIP
    (['imported', 'done'], 0)
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from grader.engine import audit, cgroups, confine, selftest
from grader.engine.hugepages import collapse_heap
from grader.engine.lines import result_line, write_bytes, write_line
from grader.engine.proctree import become_subreaper, kill_descendants
from grader.engine.protocol import READY, UNSAFE, StepJob, StepResult, jobs_from_request
from grader.engine.scheduling import StepScheduler
from grader.engine.sharedpages import memoize_builtin_signatures
from grader.engine.step_process import SERVER
from grader.engine.wire import JsonDict
from grader.settings import Settings, current

if TYPE_CHECKING:
    from types import FrameType

# What step children need, imported once here. Not grader.checks: judging
# happens in the client, never where learner code runs.
PRELOAD = (
    "langgraph.graph",
    "grader.engine.probes",
    "grader.engine.encode",
    "grader.spec",
    # Imported by LangGraph's first run of a graph with conditional edges, which the
    # tiny warm-up graph below does not have: each step child would import them itself.
    "langchain_core.tracers.context",
    "langchain_core.tracers.run_collector",
    "langchain_core.tracers.stdout",
)


# How an exception of the fork server itself (a full /tmp for a scratch folder...) begins the
# ``infra_error`` of the steps it could not run: the grader's failure, never the learner's.
SERVER_FAILED = "the grader's worker could not run the step: "


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

        $ python -I -c "from grader.engine.forkserver import serve; serve()"
        {"type": "ready", "pid": 4242, "preloaded": [...], "scratch": "/tmp/agtool-warm-...", "selftest": [...]}

    Before ``ready`` it runs the escape self-test (:func:`grader.engine.selftest.run`):
    if a wall it promises is missing it says ``{"type": "unsafe", "message": ...}``
    instead, naming the probe that got through, and ends.
    """
    settings = current()  # the fork server's environment: what the engine client passed (Settings.to_environ())
    become_subreaper()
    _confine_server(settings)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    # Keep the protocol on private fds; fds 0 and 1 become /dev/null so that a
    # stray print (ours or a library's) can never corrupt a result line.
    channel_in = os.dup(0)
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
    hugepages = collapse_heap(enabled=settings.hugepages)
    # Every step's scratch folder lives under this one, so whoever outlives
    # this process (the client, if it is killed) can remove them all at once.
    SERVER.scratch_base = tempfile.mkdtemp(prefix="agtool-warm-")
    if confine.step_user() is not None:  # the grading account may pass through to its own scratch folder, no more
        os.chmod(SERVER.scratch_base, 0o711)
    # Before any learner code: every wall this configuration promises is tried by a step of
    # escape attempts, and must hold (a wall missing stops the grading, see grader.engine.selftest).
    probed, problem = selftest.run(sandboxed=settings.server_sandboxed)
    if problem:
        write_line(channel_out, {"type": UNSAFE, "message": problem})
        shutil.rmtree(SERVER.scratch_base, ignore_errors=True)
        _release_server_group()
        raise SystemExit(f"agtool fork server: {problem}")
    write_line(
        channel_out,
        {
            "type": READY,
            "pid": os.getpid(),
            "preloaded": preloaded,
            "scratch": SERVER.scratch_base,
            "hugepages": hugepages,
            "selftest": probed,
        },
    )
    try:
        serve_in_workers(channel_in, channel_out, sweep=settings.server_sandboxed, clean=settings.clean_start)
    finally:
        kill_descendants()
        shutil.rmtree(SERVER.scratch_base, ignore_errors=True)
        _release_server_group()


def serve_in_workers(channel_in: int, channel_out: int, *, sweep: bool = False, clean: bool = True) -> None:
    """Serve each request in a *grading worker* forked for it from this process, which never reads one.

    This process (the template) holds the warm state and nothing of any
    grading: a request's sources, probes and results live only in the worker
    that reads it, and in the step children that worker forks; all of them
    are gone before the next worker is forked from the template. Freed memory
    is not wiped, so a step child forked from a process that served earlier
    gradings could read their modules and hidden cases from its own heap.
    Forked from a fresh worker, its heap holds its own
    submission and nothing else. A fork of the warm template costs about a
    millisecond (docs/benchmarks.md).

    The worker says on a status pipe which request it read and whether it
    answered: a worker that dies before answering (a step that brought it
    down) is answered for here, as the end of that request with an
    ``infra_error`` (the client then replays the steps, see
    :func:`grader.grading._run_steps`). Then every process it left is killed
    and, with ``sweep`` (a private /tmp), /tmp is emptied. Without ``clean``
    (``$AGTOOL_CLEAN_START=0``, for the test that shows why it is on) this
    process serves every request itself.
    """
    while True:
        status_r, status_w = os.pipe()
        if not clean:
            code = _serve_one(channel_in, channel_out, status_w)
            os.close(status_w)
            wait_status = code << 8
        elif (pid := _fork_worker()) == 0:  # the grading worker: one request, then gone
            code = 70
            try:
                os.close(status_r)
                become_subreaper()  # not inherited: the worker's orphaned grandchildren stay its own to kill
                code = _serve_one(channel_in, channel_out, status_w)
            finally:
                os._exit(code)
        else:
            os.close(status_w)
            _, wait_status = os.waitpid(pid, 0)
        status = _read_status(status_r)
        kill_descendants()  # what the worker's steps left, orphaned to us when it ended
        if sweep:
            confine.sweep_private_tmp(SERVER.scratch_base)
        if status.get("request") is not None and not status.get("answered"):
            reply = {
                "type": "done",
                "request": status["request"],
                "infra_error": f"{WORKER_LOST}{_wait_words(wait_status)}",
            }
            try:
                write_line(channel_out, reply)
            except BrokenPipeError:
                return
        if status.get("end") or (not status and wait_status != 0):
            return  # the client closed the channel (or the worker could not even read): nothing left to serve


def _fork_worker() -> int:
    """``os.fork()`` for a grading worker, tried again while the kernel says try again (``EAGAIN``).

    A fork refused for a moment (processes being reaped) is the grader's own
    trouble: if it lasts, this fork server ends, and its client's requests end
    with an ``infra_error`` (graded again, never a stored grade).
    """
    for delay in (0.05, 0.2, 1.0, None):
        try:
            return os.fork()
        except BlockingIOError:
            if delay is None:
                raise
            time.sleep(delay)
    raise AssertionError("unreachable")


# How the template answers for a grading worker that ended before answering: a grader failure.
WORKER_LOST = "the grader's worker process ended before answering: "


def _serve_one(channel_in: int, channel_out: int, status_fd: int) -> int:
    """(In a grading worker.) Read one request line, serve it, answer; the worker's exit code."""
    line = _read_request(channel_in)
    if line is None:
        os.write(status_fd, b"end\n")
        return 0
    leftovers: list[str] = []
    request_id = None
    try:
        request = json.loads(line)
        request_id = request.get("request")
        os.write(status_fd, f"request {json.dumps(request_id)}\n".encode())

        def report(index: int, result: StepResult) -> None:  # as soon as a step is over
            write_bytes(channel_out, result_line(request_id, index, result))

        jobs = jobs_from_request(request)
        run_jobs(
            jobs,
            parallel=int(request.get("parallel", 1)),
            chain=request.get("chain") is True,
            leftovers=leftovers,
            on_result=report,
        )
        reply = {"type": "done", "request": request_id}
    except BrokenPipeError:  # the client is gone: nothing left to serve
        os.write(status_fd, b"end\n")
        return 0
    except Exception as exc:  # a malformed request: say so, keep serving
        reply = {"type": "done", "request": request_id, "infra_error": f"{SERVER_FAILED}{type(exc).__name__}: {exc}"}
    try:
        write_line(channel_out, reply)
    except BrokenPipeError:
        os.write(status_fd, b"end\n")
        return 0
    os.write(status_fd, b"answered\n")
    for folder in leftovers:  # after answering: the client need not wait for the disk
        shutil.rmtree(folder, ignore_errors=True)
    return 0


def _read_request(channel_in: int) -> bytes | None:
    """One request line from the channel, read by a grading worker; ``None`` at end of input.

    Read in chunks without a buffer of its own, so nothing of the next line can
    be read here and lost with the worker: the client sends a request only when
    the one before was answered (or it killed the fork server, see
    :meth:`grader.engine.client.EngineClient.run_many`).
    """
    chunks: list[bytes] = []
    while True:
        chunk = os.read(channel_in, 1 << 20)
        if not chunk:
            return b"".join(chunks) or None
        end = chunk.find(b"\n")
        if end >= 0:
            chunks.append(chunk[: end + 1])
            return b"".join(chunks)
        chunks.append(chunk)


def _read_status(fd: int) -> JsonDict:
    """What a finished grading worker wrote on its status pipe: ``{"request": id, "answered": bool, "end": bool}``."""
    os.set_blocking(fd, False)
    data = b""
    try:
        while True:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
    except BlockingIOError:
        pass
    finally:
        os.close(fd)
    status: JsonDict = {}
    for line in data.decode("ascii", errors="replace").splitlines():
        word, _, rest = line.partition(" ")
        if word == "request":
            try:
                status["request"] = json.loads(rest)
            except ValueError:
                status["request"] = None
        elif word in ("answered", "end"):
            status[word] = True
    return status


def _wait_words(wait_status: int) -> str:
    """How a worker ended, in words: ``exit code 3`` or ``signal 9 (SIGKILL)``."""
    if os.WIFSIGNALED(wait_status):
        number = os.WTERMSIG(wait_status)
        try:
            return f"signal {number} ({signal.Signals(number).name})"
        except ValueError:
            return f"signal {number}"
    return f"exit code {os.waitstatus_to_exitcode(wait_status)}"


def _stop_on_sigterm(signum: int, frame: FrameType | None) -> None:
    kill_descendants()  # a step still running dies with us, grandchildren that left its group included
    if SERVER.scratch_base:
        shutil.rmtree(SERVER.scratch_base, ignore_errors=True)
    _release_server_group()
    os._exit(0)


def run_job(job: StepJob, *, leftovers: list[str] | None = None) -> StepResult:
    """Run one step job: see :func:`run_jobs`.

    Example (in the fork server: it kills every descendant of the calling process)::

        >>> run_job(StepJob(step=1, source_b64="", probes=(), nonce="n1")).timed_out  # doctest: +SKIP
        False
    """
    return run_jobs([job], leftovers=leftovers)[0]


def run_jobs(
    jobs: list[StepJob],
    *,
    parallel: int = 1,
    chain: bool = False,
    leftovers: list[str] | None = None,
    on_result: Callable[[int, StepResult], None] | None = None,
) -> list[StepResult]:
    """Run step jobs in step children, at most ``parallel`` past their import at a time; watch, clean up, describe each.

    Without ``chain``, each job has a step child of its own, and every one
    imports at once. With ``chain``, jobs of one submission (same source,
    limits and probe function) are split into at most ``parallel`` runs of
    consecutive jobs, and one step child runs a run's jobs one after another
    (:func:`grader.engine.child.run_steps`: a new import per step): a
    process per step costs more than most steps' work. A step child that
    dies, overruns or says it changed ends its step only; the jobs after it
    go to a new step child (:class:`~grader.engine.scheduling.StepScheduler`
    decides which steps run where; :class:`~grader.engine.step_process.StepProcess`
    is one step child's life cycle).

    Each step has its own deadline: its job's ``import_timeout`` from its
    start until it says it imported, then each probe's own bound within
    the job's ``timeout`` for all its probes (see ``Limits``).
    When a step child ends, its process group is killed; when the last one ends,
    every remaining descendant is (a grandchild that left its group
    cannot be told apart from a sibling step's, so it waits for the end).
    Scratch folders are removed before returning, or appended to
    ``leftovers`` for the caller to remove later. ``on_result(index,
    result)`` is called as each step is over. Every process the jobs started
    is dead when this returns.
    """
    return StepScheduler(jobs, parallel=parallel, chain=chain, on_result=on_result).run(leftovers)


def _confine_server(settings: Settings) -> None:
    """(In serve().) A private mount namespace for the steps' scratch mounts; the cgroup the client made."""
    confine.set_server_private(confine.private_mounts(settings))
    confine.set_step_user(settings.step_user)
    audit.set_code_walls(settings.code_walls)
    problem = confine.set_walls(settings.server_sandboxed and settings.step_walls)
    if problem:  # asked for (a sandbox) and missing: no step may run without them
        raise SystemExit(f"agtool fork server: {problem}")
    SERVER.group = cgroups.ServerGroup.from_env(settings.server_cgroup or None, settings)
    if SERVER.group is not None:
        SERVER.group.join_shared()  # v1: the steps' CPU is shared per fork server (no migration per step)


def _release_server_group() -> None:
    """(On the way out.) Remove the cgroups this fork server used: its client may be gone (os._exit)."""
    if SERVER.group is not None:
        SERVER.group.release()


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
    _State = TypedDict("_State", {"seen": Annotated[list[Any], operator.add]})  # noqa: UP013 - see above

    graph = StateGraph(_State)
    graph.add_node("only", lambda state: {"seen": [1]})
    graph.add_edge(START, "only")
    graph.add_edge("only", END)
    graph.compile().invoke({"seen": []})


if __name__ == "__main__":
    serve()
