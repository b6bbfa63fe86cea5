"""The step child: import the learner's module, run the probes, report JSON.

This code runs in a process the fork server forks for one step, or for
several steps of one submission in turn (see ``grader.engine.forkserver``;
:func:`run_steps` imports the module again for each). It is the only place
where learner code executes, and it decides nothing: it imports the
submission in a scratch folder, calls
the probe function (default ``grader.engine.probes.run_probe``) for each
probe and sends what it saw to the fork server as newline-delimited JSON over
a dedicated pipe (the messages of :mod:`grader.engine.protocol`). Learner
stdout/stderr go to a separate capture pipe.

Example (what ``grader.engine.step_process.fork_step_child`` does after ``os.fork()``)::

    run_step(job, scratch="/tmp/agtool-step-x", result_fd=w1, output_fd=w2)  # never returns
"""

from __future__ import annotations

import base64
import binascii
import importlib
import importlib.util
import itertools
import os
import resource
import signal
import sys
import traceback

# Module-level bindings of the builtins the reporting path uses: learner code
# that patches ``builtins`` (say ``len`` or ``isinstance``) does not reach
# these names, which are found in this module's globals first.
from builtins import (  # noqa: UP029 - bound here on purpose (see above)
    BaseException,
    Exception,
    enumerate,
    exec,
    isinstance,
    len,
    memoryview,
    str,
    type,
)
from collections.abc import Callable
from types import CodeType, ModuleType
from typing import Any, NoReturn

from grader.engine import (
    audit,
    confine,
    import_wall,
    namespaces,
)
from grader.engine.encode import private_module_copy
from grader.engine.instrument import RUNTIME_BUILTINS, compile_instrumented
from grader.engine.procstate import ProcessState
from grader.engine.proctree import die_with_parent
from grader.engine.protocol import (
    CHANGED,
    DEFAULT_PROBE_FUNCTION,
    DONE,
    FATAL,
    FRAGMENT_LINE_BYTES,
    FRAGMENT_TAG_BYTES,
    IMPORT_ERROR,
    IMPORTED,
    MAX_EXCEPTION_TEXT,
    MAX_MESSAGE_BYTES,
    OBS,
    RUN,
    START_AT_IMPORT,
    WAKE_BYTES,
    Limits,
    Message,
    StepJob,
)
from grader.engine.wire import JsonDict

# What running a fresh probe in a fork uses, bound before any learner code
# runs: a module that replaces ``os.fork`` or ``os.waitpid`` must not decide
# whether its probes are isolated.
_fork, _pipe, _waitpid, _read, _close, _kill, _getpid = (
    os.fork,
    os.pipe,
    os.waitpid,
    os.read,
    os.close,
    os.kill,
    os.getpid,
)
_set_blocking, _write_byte = os.set_blocking, os.write

# A step whose import took at most this long (seconds) runs its fresh probes on
# new imports of their own instead of in forks (see _run_probes).
REIMPORT_SECONDS = 0.02
_clock = __import__("time").perf_counter

MODULE_DIR = "agtool"
MODULE_FILE = "tools.py"
# Set by the fork server in a step child whose cgroup bounds its tasks: RLIMIT_NPROC then stays
# unset (it counts every process of the grading account, other workers' steps included).
PIDS_BOUNDED = False


class StepContext:
    """What a probe may use besides the module: the scratch folder and fresh imports.

    The source is compiled once per step child, here, under the step's limits
    (its memory, CPU time and the import's time bound: a module that takes
    longer to compile than its import may is an import that timed out); each
    fresh import executes that code object in a new module, which is what an
    import does minus reading and compiling the file again. A ``fresh`` probe of :func:`run_step` runs in a
    process forked from the step child right after its one import, and its
    first :meth:`fresh_module` is that just-imported module (``pristine``), so
    an honest slow import is paid once per step, not once per probe.

    >>> import types
    >>> ctx = StepContext("/tmp", "/tmp/x.py", "doc")
    >>> ctx.pristine = types.ModuleType("m")
    >>> ctx.fresh_module().__name__, ctx.pristine is None
    ('m', True)
    """

    def __init__(
        self,
        scratch: str,
        module_path: str,
        name_prefix: str,
        code: CodeType | None = None,
        trace_run: Callable[[str], None] | None = None,
    ):
        self.scratch = scratch
        # Writes one ``run`` message to the fork server per tool-body run (see
        # grader.engine.protocol); made before any learner code ran.
        self.trace_run = trace_run
        self.module_path = module_path
        self._names = (f"{name_prefix}_{n}" for n in itertools.count())
        # Compiled by an earlier step of this step child (None: compile it at the first import).
        self._code = with_filename(code, module_path) if code is not None else None
        # The module as it was right after the step's import, in a process of
        # its own (a forked fresh probe): handed out once, instead of importing again.
        self.pristine: ModuleType | None = None
        self.imported: list[str] = []  # the names this step's imports took in sys.modules
        self.import_seconds = 0.0  # how long the step's own import took

    def fresh_module(self) -> ModuleType:
        """The just-imported module in a forked fresh probe, else the scratch copy imported again."""
        if self.pristine is not None:
            module, self.pristine = self.pristine, None
            return module
        if self._code is None:
            with open(self.module_path, "rb") as fh:
                self._code = compile_instrumented(fh.read(), self.module_path)
        name = next(self._names)
        self.imported.append(name)
        return import_file(self.module_path, name, code=self._code)

    @property
    def compiled(self) -> CodeType | None:
        """The module's code once a :meth:`fresh_module` compiled it (``None`` before)."""
        return self._code

    def forget(self) -> None:
        """Drop the modules this step imported from ``sys.modules`` (the next step imports its own)."""
        for name in self.imported:
            sys.modules.pop(name, None)
        self.imported.clear()
        self.pristine = None


def with_filename(code: CodeType, filename: str) -> CodeType:
    """``code`` and every code object inside it, as if compiled from ``filename``.

    >>> with_filename(compile("def f(): pass", "a", "exec"), "b").co_consts[0].co_filename
    'b'
    """
    if code.co_filename == filename:  # named so already (every step of a step child imports the same path)
        return code
    consts = tuple(with_filename(c, filename) if isinstance(c, CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


# The module's own builtins: the step child's (``compile``, ``exec`` and ``eval`` become the counted
# ones in prepare_process). Its imports are the interpreter's own ``__import__``: the grader's packages are
# refused at the import system (grader.engine.import_wall), whichever spelling of an import reaches it.
_MODULE_BUILTINS = dict(__builtins__) if isinstance(__builtins__, dict) else dict(vars(__builtins__))


def import_file(path: str, name: str, *, code: CodeType | None = None) -> ModuleType:
    """Import ``path`` as module ``name`` without putting its folder on ``sys.path``.

    Registered in ``sys.modules`` because LangGraph resolves a ``State``'s
    string annotations through ``sys.modules[State.__module__]``. ``code``,
    when given, is the file's compiled code (executed instead of reading it).
    """
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None  # path is the step's <scratch>/tools.py (MODULE_FILE)
    module = importlib.util.module_from_spec(spec)
    module.__dict__["__builtins__"] = dict(_MODULE_BUILTINS)  # its own copy
    sys.modules[name] = module
    try:
        if code is None:
            spec.loader.exec_module(module)
        else:
            exec(code, module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


# ``json.dumps`` looks up ``json._default_encoder`` and ``json.encoder``'s
# globals at call time, so a submission could change what it writes. This
# encoder comes from a private copy of ``json.encoder`` made when the grader is
# imported (before any learner code), reachable by no module name.
_json_encode = private_module_copy("json.encoder").JSONEncoder(ensure_ascii=True).encode


def run_step(
    job: StepJob,
    *,
    scratch: str,
    result_fd: int,
    output_fd: int,
    code: CodeType | None = None,
    start_fd: int | None = None,
    wake_fd: int | None = None,
) -> NoReturn:
    """Run one step job's probes in this (freshly forked) process, then ``os._exit``.

    ``code`` is the submission's compiled code, or ``None`` (as the fork
    server sends it) to compile it here, under the step's limits. With
    ``start_fd``, the probes wait after the import until the fork server writes
    a byte there: imports of several steps overlap, their probes take turns.
    (:func:`run_steps` with one job.)
    """
    run_steps(
        (job,), scratch=scratch, result_fd=result_fd, output_fd=output_fd, code=code, start_fd=start_fd, wake_fd=wake_fd
    )


def run_steps(
    jobs: tuple[StepJob, ...],
    *,
    scratch: str,
    result_fd: int,
    output_fd: int,
    code: CodeType | None = None,
    start_fd: int | None = None,
    wake_fd: int | None = None,
) -> NoReturn:
    """Run step jobs of one submission one after another in this process, then ``os._exit``.

    Every step imports the module again, as a new module (``CALLS`` and
    ``CACHE`` start clean), in a scratch folder the fork server emptied.
    Between two steps this process waits for a byte on its start pipe
    ``start_fd`` (the fork server has read the step's files and killed what
    the step left running), and before it says ``done`` it compares itself
    with how it was before any learner code ran (:class:`ProcessState`): a
    thread or a process left running, a signal handler, a limit, a standard
    module or a builtin changed. A changed process says ``"more": false`` and
    ends; the fork server starts a new one for the steps after, so what one
    step leaves behind never reaches another (and costs no point).

    Every message is written on ``result_fd`` the moment it is known (once
    written, the module cannot take it back), but the fork server reads that
    pipe when it is woken, not at every line: the wake-up pipe ``wake_fd``
    (if given) gets a byte after a message it must act on at once
    (``imported``, ``done``) and after every :data:`WAKE_BYTES` written, so
    one wake-up reads many lines (a wake-up per line cost the fork server and
    this process a context switch each, some 150 a submission).
    """
    # References taken before any learner code runs: a submission may patch
    # json, os or builtins, and must not be able to change how we report.
    exit_now = os._exit
    channel = _ResultChannel(result_fd, wake_fd, _json_encode, os.write)
    channel.begin(jobs[0].nonce)
    try:
        steps = _SubmissionSteps(jobs, scratch, channel, exit_now, start_fd)
        steps.prepare_process(result_fd, output_fd, wake_fd, code)
    except BaseException:
        channel.send({"type": FATAL, "message": _cap(traceback.format_exc())})
        exit_now(70)
    start = b""
    for position, job in enumerate(jobs):
        channel.begin(job.nonce)
        if position:
            start = _read_start(start_fd)  # the fork server let this step begin ("p": and its probes, once imported)
            if not start:
                exit_now(0)
            steps.prepare_next_step(job)
        if not steps.run_one(position, job, started=start == START_AT_IMPORT):
            break
    exit_now(0)  # never run learner atexit handlers or non-daemon threads


class _ResultChannel:
    """The step child's writing end of the result pipe and of the wake-up pipe, bound before any learner code.

    ``send`` and ``trace_run`` are closures over references taken here: no
    attribute or global the module can patch is looked up when they write.
    """

    def __init__(
        self, result_fd: int, wake_fd: int | None, dumps: Callable[[Any], str], write: Callable[[int, Any], int]
    ):
        nonce = [""]  # the current step's (each step has its own)
        run_line = [""]
        urandom, hexlify = os.urandom, binascii.hexlify  # bound now, before any learner code
        piece = FRAGMENT_LINE_BYTES - FRAGMENT_TAG_BYTES - 3  # "~", the tag, "+" or ".", the piece, "\n"
        unwoken = [0]  # bytes written since the last wake-up

        def wake() -> None:
            unwoken[0] = 0
            if wake_fd is not None:
                try:
                    write(wake_fd, b"w")
                except OSError:  # full (the fork server drains it when woken) or closed by the module
                    pass

        def send(message: JsonDict, *, urgent: bool = True) -> None:
            message["nonce"] = nonce[0]
            try:
                data = dumps(message).encode("ascii") + b"\n"
            except Exception as exc:  # not JSON (or nested too deep to encode)
                data = dumps(_probe_error_message(message, "UnserializableObservation", exc, nonce[0])).encode() + b"\n"
            if len(data) > MAX_MESSAGE_BYTES:
                data = (
                    dumps(
                        _probe_error_message(
                            message,
                            "ObservationTooLarge",
                            f"{len(data)} bytes, the limit is {MAX_MESSAGE_BYTES}",
                            nonce[0],
                        )
                    ).encode()
                    + b"\n"
                )
            if len(data) > FRAGMENT_LINE_BYTES:  # fragments no other writer of the pipe can split
                tag, body = b"~" + hexlify(urandom(FRAGMENT_TAG_BYTES // 2)), data[:-1]
                pieces = [
                    tag + (b"." if start + piece >= len(body) else b"+") + body[start : start + piece] + b"\n"
                    for start in range(0, len(body), piece)
                ]
            else:
                pieces = [data]
            for line in pieces:  # each in one write (at most PIPE_BUF: atomic), a wake-up after WAKE_BYTES
                view = memoryview(line)
                while view:
                    view = view[write(result_fd, view) :]
                unwoken[0] += len(line)
                if unwoken[0] >= WAKE_BYTES:
                    wake()
            if urgent and message.get("type") in (IMPORTED, DONE):
                wake()

        def trace_run(tool: str) -> None:
            # One line per run, straight to the fork server: once written, the
            # module cannot take it back. Not through send(): no
            # attribute or global the module can patch is looked up here.
            line = (run_line[0].replace('"tool": ""', '"tool": ' + dumps(tool[:100]), 1)).encode("ascii") + b"\n"
            view = memoryview(line)
            while view:
                view = view[write(result_fd, view) :]
            unwoken[0] += len(line)
            if unwoken[0] >= WAKE_BYTES:
                wake()

        def begin(step_nonce: str) -> None:
            nonce[0] = step_nonce
            run_line[0] = dumps({"type": RUN, "tool": "", "nonce": step_nonce})  # only the tool varies

        self.send, self.trace_run, self.begin = send, trace_run, begin


class _SubmissionSteps:
    """The steps of one submission in this step child: the process made ready once, then each step in turn."""

    def __init__(
        self,
        jobs: tuple[StepJob, ...],
        scratch: str,
        channel: _ResultChannel,
        exit_now: Callable[[int], NoReturn],
        start_fd: int | None,
    ):
        self.jobs, self.scratch, self.channel, self.exit_now, self.start_fd = jobs, scratch, channel, exit_now, start_fd
        self.chained, self.last = len(jobs) > 1, len(jobs) - 1

    def prepare_process(self, result_fd: int, output_fd: int, wake_fd: int | None, code: CodeType | None) -> None:
        """(Before any learner code.) Isolate this process, write the submission, set its limits, note its state."""
        jobs, start_fd = self.jobs, self.start_fd
        _isolate_process(output_fd, result_fd, *(fd for fd in (start_fd, wake_fd) if fd is not None))
        self.source = base64.b64decode(jobs[0].source_b64)
        self.module_path = _prepare_scratch(self.scratch, self.source)
        self.code = with_filename(code, self.module_path) if code is not None else None  # once, not once per step
        _clean_environment(self.scratch)
        _set_limits(jobs[0].limits, steps=len(jobs))
        self.run_probe = _load_probe_function(jobs[0].probe_function or DEFAULT_PROBE_FUNCTION)
        # Code compiled at run time counted, the routes around it refused (before the state is taken:
        # every step of this process runs with the same builtins).
        audit.install(self.scratch, builders=(with_filename.__code__,))
        _MODULE_BUILTINS.update(RUNTIME_BUILTINS)  # the module's own builtins: the counted compile, exec, eval
        _forget_grader_modules()
        if audit.code_walls():
            import_wall.clear_main()
        _fresh_std_streams()
        self.before = ProcessState(self.run_probe)  # (the state of this process before any learner code)
        self.start_pipe = _fd_identity(start_fd) if self.chained else None

    def prepare_next_step(self, job: StepJob) -> None:
        """(Between two steps.) A clean scratch folder and environment, this step's CPU, the process as before."""
        try:
            self.module_path = _prepare_scratch(self.scratch, self.source)
            _clean_environment(self.scratch)
            _step_cpu_budget(job.limits)
            self.before.restore()
            _fresh_std_streams()
        except BaseException:
            self.channel.send({"type": FATAL, "message": _cap(traceback.format_exc())})
            self.exit_now(70)

    def run_one(self, position: int, job: StepJob, *, started: bool) -> bool:
        """Import the module anew and run the job's probes; whether this process goes on with the next step.

        ``started``: the fork server let the probes run as soon as the import is over.
        """
        send, exit_now = self.channel.send, self.exit_now
        ctx = StepContext(
            self.scratch,
            self.module_path,
            f"agtool_learner_{job.nonce[:8]}",
            self.code,
            trace_run=self.channel.trace_run,
        )
        module: ModuleType | None  # (None after the step: the module is let go before the next one)
        try:
            import_started = _clock()
            module = ctx.fresh_module()
            ctx.import_seconds = _clock() - import_started
            self.code = ctx.compiled  # compiled once: the next steps of this process import the same code
        except BaseException as exc:  # SystemExit and KeyboardInterrupt included: all are import failures
            _flush_std_streams()
            send(describe_import_error(exc, self.module_path))
            exit_now(0)
        _flush_std_streams()
        send({"type": IMPORTED}, urgent=not started)  # started already: the fork server reads it when it wakes
        if self.start_fd is not None and not started:  # a free slot for the step's work (its deadline starts then)
            _wait_byte(self.start_fd)
        _run_probes(job, module, ctx, self.run_probe, send, exit_now, self.before)
        if not self.chained:
            send({"type": DONE})
            return False
        module = None
        ctx.forget()
        # The start pipe must still be ours: a step that closed or replaced it cannot be told to go on.
        more = position < self.last and self.before.unchanged() and _fd_identity(self.start_fd) == self.start_pipe
        send({"type": DONE, "more": more})
        return more


def _back_to(folder: str) -> None:
    try:
        os.chdir(folder)
    except OSError:
        pass


def _fd_identity(fd: int | None) -> tuple[int, int] | None:
    """(device, inode) of what ``fd`` is open on, or ``None``."""
    if fd is None:
        return None
    try:
        info = os.fstat(fd)
    except (OSError, TypeError):
        return None
    return info.st_dev, info.st_ino


def _wait_byte(fd: int | None) -> bool:
    """Wait for one byte on ``fd``; False at its end (the fork server wants no more)."""
    return _read_start(fd) != b""


def _read_start(fd: int | None) -> bytes:
    """The next byte on the start pipe ``fd`` (waiting for it), or ``b""`` at its end."""
    if fd is None:
        return b""
    while True:
        try:
            return _read(fd, 1)
        except InterruptedError:
            continue
        except OSError:
            return b""


def _run_probes(
    job: StepJob,
    module: ModuleType,
    ctx: StepContext,
    run_probe: Callable[[ModuleType, JsonDict, StepContext], JsonDict],
    send: Callable[[JsonDict], None],
    exit_now: Callable[[int], NoReturn],
    before: ProcessState,
) -> None:
    """Run the job's probes on ``module`` in order (from ``job.first_probe``), one ``obs`` message each."""

    def observe(index: int, probe: JsonDict, on: ModuleType | None = None) -> None:
        try:
            obs = run_probe(module if on is None else on, probe, ctx)
        except BaseException as exc:  # run_probe catches Exception; the rest is ours to record
            obs = {"probe_error": type(exc).__name__, "message": _cap(_safe_str(exc))}
        _flush_std_streams()
        send({"type": OBS, "index": index, "obs": obs})

    # This process stays as the import left it until a probe that is not
    # ``fresh`` runs here; until then each fresh probe runs in a fork of it
    # (grading sends fresh probes first). After that, a fresh probe imports again.
    # A fresh probe that is the job's last needs no fork: no probe comes after
    # it to see what it changed, so it takes this process's module as the
    # import left it (a fork and an exit less, e.g. for step 8's reports).
    # A quick import is cheaper than a fork (a fork of a process that ran
    # LangGraph costs about 17 ms of page copies here): then each fresh probe
    # has a new import of its own in this process. What it may change and
    # the others must not see is put back after it (working folder,
    # environment, import path, warning filters); if it changed this process
    # otherwise (a thread, a signal handler, a patched module: ProcessState),
    # the step child says so and ends, and a new one runs the step's probes
    # after it, so nothing one probe does reaches another.
    pristine = True
    last = len(job.probes) - 1
    # Fresh probes may import anew only where the import left the process as it
    # was (asked only of steps that have such probes: each look costs).
    quick = REIMPORT_SECONDS if job.reimport_seconds is None else job.reimport_seconds
    reimport = (
        ctx.import_seconds <= quick
        and any(is_fresh(probe) for probe in job.probes[job.first_probe : last])
        and before.unchanged()
    )
    for index, probe in enumerate(job.probes):
        if index < job.first_probe:
            continue
        if reimport and is_fresh(probe) and index < last:
            _observe_reimported(observe, index, probe, ctx, send, exit_now, before)
        elif pristine and is_fresh(probe) and index < last:
            _observe_forked(observe, index, probe, ctx, module, exit_now)
        elif pristine and is_fresh(probe):
            pristine = False
            ctx.pristine = module
            observe(index, probe)
        else:
            pristine = pristine and is_fresh(probe)
            observe(index, probe)


def _observe_reimported(
    observe: Callable[..., None],
    index: int,
    probe: JsonDict,
    ctx: StepContext,
    send: Callable[[JsonDict], None],
    exit_now: Callable[[int], NoReturn],
    before: ProcessState,
) -> None:
    """Run one fresh probe on a new import of its own in this process; end the process if the probe changed it."""
    # The step's module stays as imported; a probe function that asks
    # ctx.fresh_module() gets the new one too.
    try:
        ctx.pristine = None
        ctx.pristine = own = ctx.fresh_module()
    except BaseException as exc:
        _flush_std_streams()
        send({"type": OBS, "index": index, "obs": {"probe_error": type(exc).__name__, "message": _cap(_safe_str(exc))}})
        own = None
    if own is not None:
        observe(index, probe, own)
    ctx.pristine = None
    _back_to(ctx.scratch)
    before.restore()
    if not before.unchanged():
        send({"type": CHANGED, "next": index + 1})
        exit_now(0)


def is_fresh(probe: JsonDict) -> bool:
    """Whether ``probe`` asks to start from the module as just imported (``params["fresh"] is True``).

    >>> is_fresh({"kind": "calls", "params": {"fresh": True}}), is_fresh({"kind": "calls"})
    (True, False)
    """
    params = probe.get("params") if isinstance(probe, dict) else None
    return isinstance(params, dict) and params.get("fresh") is True


def _observe_forked(
    observe: Callable[[int, JsonDict], None],
    index: int,
    probe: JsonDict,
    ctx: StepContext,
    module: ModuleType,
    exit_now: Callable[[int], NoReturn],
) -> None:
    """Run one fresh probe in a fork of this just-imported process and wait for it.

    The fork sees ``CALLS``/``CACHE`` and everything else exactly as the
    import left them, and whatever it changes dies with it. It writes its
    own ``run`` and ``obs`` messages on the result pipe; this process waits,
    so the fork server reads them in probe order. A fork that ends without
    saying its observation was sent (``os._exit``, a signal, a limit) ends
    this process the same way, so the step is graded as if the probe had run
    here: the fork server sees the death during that probe.
    """
    ack_r, ack_w = _pipe()
    pid = _fork()
    if pid == 0:
        try:
            _close(ack_r)
            # New stream objects: a learner thread of the parent may have held
            # the old ones' locks at the fork, and no thread came along to release them.
            _fresh_std_streams()
            ctx.pristine = module
            observe(index, probe)
            _write_byte(ack_w, b"k")
        finally:
            exit_now(0)
    _close(ack_w)
    # Wait for the fork's end, then look for its byte: a process it started
    # may hold the pipe open for ever, its end says all we need.
    _, status = _wait_child(pid)
    _set_blocking(ack_r, False)
    try:
        ack = _read(ack_r, 1)
    except OSError:
        ack = b""
    _close(ack_r)
    if ack == b"k":
        return
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            signal.signal(number, signal.SIG_DFL)
        except (OSError, ValueError):  # SIGKILL and SIGSTOP cannot be handled anyway
            pass
        _kill(_getpid(), number)
        exit_now(128 + number)  # the learner blocked that signal here: still end
    exit_now(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 70)


def _wait_child(pid: int) -> tuple[int, int]:
    while True:
        try:
            return _waitpid(pid, 0)
        except InterruptedError:
            continue


def describe_import_error(exc: BaseException, module_path: str) -> JsonDict:
    """The ``import_error`` message for ``exc``: type, message and the learner line that failed.

    (An :class:`~grader.engine.protocol.ImportErrorMessage` without its ``nonce``: the sender adds it.)

    >>> try:
    ...     exec(compile("1 / 0", "/s/agtool/tools.py", "exec"))
    ... except ZeroDivisionError as exc:
    ...     error = describe_import_error(exc, "/s/agtool/tools.py")
    >>> error["error_type"], error["line"], error["file"]
    ('ZeroDivisionError', 1, 'tools.py')
    """
    line, source = None, ""
    if isinstance(exc, SyntaxError) and exc.filename == module_path:
        line, source = exc.lineno, (exc.text or "").rstrip("\n")
        message = exc.msg
    else:
        message = _safe_str(exc)
        for frame in traceback.extract_tb(exc.__traceback__):
            if frame.filename == module_path:  # the deepest frame in the learner's file wins
                line, source = frame.lineno, frame.line or ""
    return {
        "type": IMPORT_ERROR,
        "error_type": type(exc).__name__,
        "message": _cap(message),
        "file": MODULE_FILE,
        "line": line,
        "source": _cap(source.strip(), 300),
    }


def _probe_error_message(message: JsonDict, kind: str, detail: Any, nonce: str) -> Message:
    detail = _safe_str(detail) if isinstance(detail, BaseException) else detail
    if message.get("type") != OBS:
        return {"type": FATAL, "message": f"{kind}: {_cap(str(detail))}", "nonce": nonce}
    return {
        "type": OBS,
        "index": message["index"],
        "nonce": nonce,
        "obs": {"probe_error": kind, "message": _cap(str(detail))},
    }


def _isolate_process(output_fd: int, result_fd: int, *other_fds: int) -> None:
    """Own session, dies with the fork server, fds 0/1/2 = nothing/capture/capture (``other_fds`` kept)."""
    os.setsid()  # own process group: the fork server kills the whole group on timeout
    die_with_parent()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    # Close everything else we inherited (the fork server's channel included),
    # so learner code can write only to the capture pipe and the result pipe.
    keep = sorted({0, 1, 2, result_fd, *other_fds})
    for low, high in zip(keep, keep[1:] + [resource.getrlimit(resource.RLIMIT_NOFILE)[0]]):
        os.closerange(low + 1, high)
    # A full disk should be an OSError the learner sees, not a silent SIGXFSZ kill.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _prepare_scratch(scratch: str, source: bytes) -> str:
    """Write the submission's bytes to ``<scratch>/agtool/tools.py`` and work there."""
    folder = os.path.join(scratch, MODULE_DIR)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, MODULE_FILE)
    with open(path, "wb") as fh:  # a regular file with the content: never a link to elsewhere
        fh.write(source)
    os.chdir(scratch)
    return path


def _clean_environment(scratch: str) -> None:
    path = os.environ.get("PATH", "/usr/bin:/bin")
    os.environ.clear()  # no tokens or secrets from the grader's environment
    os.environ.update({"PATH": path, "HOME": scratch, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"})
    # Nothing learner-controlled on the import path: a json.py beside tools.py
    # must not shadow the standard library.
    unsafe = [p for p in sys.path if p in ("", ".") or os.path.abspath(p).startswith(scratch)]
    sys.path[:] = [p for p in sys.path if p not in unsafe]
    for entry in unsafe:
        sys.path_importer_cache.pop(entry, None)
    sys.dont_write_bytecode = True


def _set_limits(limits: Limits, *, steps: int = 1) -> None:
    def lower(kind: int, value: int, most: int | None = None) -> None:
        soft, hard = resource.getrlimit(kind)
        most = value if most is None else most
        if hard != resource.RLIM_INFINITY:
            value, most = min(value, hard), min(most, hard)
        resource.setrlimit(kind, (value, most))

    lower(resource.RLIMIT_AS, limits.memory_bytes)
    # CPU seconds are a step's: the first step's now, the next ones' from where
    # the step before left off (_step_cpu_budget), all of them under the hard limit.
    lower(resource.RLIMIT_CPU, limits.cpu, limits.cpu * steps)
    lower(resource.RLIMIT_FSIZE, limits.file_size_bytes)
    lower(resource.RLIMIT_NOFILE, limits.open_files)
    lower(resource.RLIMIT_CORE, 0)
    if hasattr(resource, "RLIMIT_NPROC") and not PIDS_BOUNDED:
        lower(resource.RLIMIT_NPROC, _processes_counted() + limits.nproc)


def _step_cpu_budget(limits: Limits) -> None:
    """(Before a step after the first.) The soft CPU limit: the CPU used so far plus one step's."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = int(usage.ru_utime + usage.ru_stime) + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = used + limits.cpu
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _processes_counted() -> int:
    """The tasks ``RLIMIT_NPROC`` already counts for this step child: itself, in a user namespace of its own.

    Elsewhere the count is the account's (every process of it the kernel
    knows, of which ``/proc`` shows those of this PID namespace).
    """
    if confine.walls_up() and namespaces.counts_processes_per_namespace():
        return 1
    return _processes_of_this_user()


def _processes_of_this_user() -> int:
    uid, count = os.getuid(), 0
    try:
        names = os.listdir("/proc")
    except OSError:
        return 1024
    for name in names:
        if name.isdigit():
            try:
                count += os.stat(f"/proc/{name}").st_uid == uid
            except OSError:
                pass
    return count


def _forget_grader_modules() -> None:
    """Drop the grader's modules from ``sys.modules`` before learner code runs.

    The probe function and everything it calls were bound when they were
    imported; what a submission finds under ``sys.modules["grader.engine.probes"]``
    (or imports again) is then a fresh copy that nothing of the grader uses,
    so replacing its functions changes nothing. (Code that walks ``gc`` or
    frames can still reach the objects in use: SECURITY.md says so.)
    """
    for name in GraderModules.names():
        sys.modules.pop(name, None)


class GraderModules:
    """The names in ``sys.modules`` that are the grader's, listed in the fork server before it forks.

    Walking ``sys.modules`` touches every one of its 1,500-odd names, and in
    a forked step child each page those names sit on is then copied (about
    560 page faults, 2 ms a step, measured). The fork server lists them once
    (:meth:`prepare`); the step child uses that list as long as nothing was
    imported or dropped since (same length, same newest name), else walks.

    >>> GraderModules.prepare(); "grader.engine.child" in GraderModules.names()
    True
    """

    _listed: tuple[str, ...] = ()
    _seen: tuple[int, str] = (-1, "")

    @classmethod
    def prepare(cls) -> None:
        """(In the fork server, before a fork.) List the grader's modules unless the list is current."""
        state = cls._state()
        if state != cls._seen:
            cls._listed, cls._seen = cls._walk(), state

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return cls._listed if cls._state() == cls._seen else cls._walk()

    @staticmethod
    def _walk() -> tuple[str, ...]:
        return tuple(n for n in sys.modules if n == "grader" or n.startswith("grader."))

    @staticmethod
    def _state() -> tuple[int, str]:
        modules = sys.modules
        return len(modules), next(reversed(modules), "")


def _load_probe_function(spec: str) -> Callable[[ModuleType, JsonDict, StepContext], JsonDict]:
    module_name, _, attr = spec.partition(":")
    function: Callable[[ModuleType, JsonDict, StepContext], JsonDict] = getattr(
        importlib.import_module(module_name), attr
    )
    return function


def _fresh_std_streams() -> None:
    # New line-buffered streams on the capture pipe; whatever the fork server
    # had buffered stays with it.
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)


def _flush_std_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # learner may have replaced or closed them
            pass


def _safe_str(exc: BaseException) -> str:
    try:
        return str(exc)
    except BaseException:  # a hostile __str__
        return f"<{type(exc).__name__} whose str() failed>"


def _cap(text: str, limit: int = MAX_EXCEPTION_TEXT) -> str:
    return text if len(text) <= limit else text[:limit] + " [...]"
