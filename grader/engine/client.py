"""The engine client: start the fork server, send it step jobs, read the results.

Importing LangGraph costs most of a second; forking a process that already
did costs milliseconds. So grading goes through a long-lived helper process,
the *fork server* (``python -I``, a clean environment, running
:func:`grader.engine.forkserver.serve`), which imports LangGraph and the
grader's probes once (it stays *warm*) and then serves requests, one JSON
line in (a list of step jobs and how many may run at once), one JSON line out
(a result per job), over its stdin/stdout; it forks bounded step children,
each running one step or several of a submission in turn (see
:mod:`grader.engine.forkserver`; the wire format is
:mod:`grader.engine.protocol`'s).

This module is the grading process's side: :class:`EngineClient` starts the
fork server on first use (with a clean environment, never forking the
calling process, so it is safe in a Jupyter kernel), restarts it if it died,
and is per-process (a batch worker that was forked gets its own).
:func:`shared_client` returns the module-level instance; :func:`close` stops
it (also done at exit). With ``sandbox="bwrap"`` (or ``$AGTOOL_SANDBOX``) the
fork server runs inside bubblewrap (:mod:`grader.engine.sandbox`): own PID
namespace, no network, an allow-listed file system, private ``/tmp``, learner
code as the grading account; where bubblewrap is unusable, ``bwrap`` stops
grading (:class:`~grader.engine.sandbox.IsolationUnavailable`) and ``auto``
runs without, saying so (:attr:`EngineClient.isolation`, in every report).

Example::

    >>> with EngineClient() as engine:  # stopped on leaving the block
    ...     result = engine.run(StepJob(step=1, source_b64="", probes=(), nonce="n1"))
    >>> [m["type"] for m in result.messages]
    ['imported', 'done']
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from grader.engine import cgroups
from grader.engine.cgroups import ServerGroup
from grader.engine.protocol import (
    GRAPH_SUPERSTEPS,
    GRAPH_SUPERSTEPS_ENV,
    READY,
    UNSAFE,
    StepJob,
    StepResult,
    encode_request,
)
from grader.engine.sandbox import (
    PACKAGE_ROOT,
    SANDBOXES,
    Isolation,
    IsolationUnavailable,
    bwrap_prefix,
    require,
    server_import_paths,
)
from grader.engine.wire import JsonDict
from grader.settings import Settings, current, env_name

__all__ = [
    "EngineClient",
    "EngineUnavailable",
    "shared_client",
    "close",
    "idle_timeout_default",
    "CLIENT_GRACE_SECONDS",
    "STARTUP_TIMEOUT_SECONDS",
    "IDLE_TIMEOUT_SECONDS",
]

CLIENT_GRACE_SECONDS = 20.0  # how long past a job's timeout the engine client waits for the fork server
STARTUP_TIMEOUT_SECONDS = 60.0
# An idle fork server holds ~140 MB (LangGraph imported): a notebook kernel's
# one is stopped after this many idle seconds and started again by the next
# Check (a cold Check takes about a second). ``$AGTOOL_ENGINE_IDLE_SECONDS``; 0 = never.
IDLE_TIMEOUT_SECONDS = 600.0
IDLE_TIMEOUT_ENV = env_name("engine_idle_seconds")
# The settings the fork server reads itself, passed in its environment. Only
# these: its step children are its forks, and no secret (the class's seed
# key, a hub token) may be in a process learner code runs in.
FORK_SERVER_SETTINGS = ("hugepages", "step_mounts", "clean_start", "step_walls", "code_walls")


class EngineUnavailable(RuntimeError):
    """The fork server could not be started or stopped answering."""


class EngineClient:
    """Client of one fork server process; thread-safe; one per OS process.

    Example::

        >>> with EngineClient() as engine:
        ...     engine.run(StepJob(step=1, source_b64="", probes=(), nonce="x")).exit_status
        0
    """

    def __init__(
        self,
        *,
        python: str | None = None,
        extra_sys_path: tuple[str, ...] | list[str] = (),
        sandbox: str | None = None,
        idle_timeout: float | None = None,
        settings: Settings | None = None,
    ):
        """``settings``: the sandbox, idle time and fork server settings (default: read at each start)."""
        self.settings = settings
        self.sandbox = sandbox or (settings or current()).sandbox or "none"
        if self.sandbox not in SANDBOXES:
            raise ValueError(f"sandbox must be one of {', '.join(SANDBOXES)}, not {self.sandbox!r}")
        self.sandbox_in_use = "none"
        # What the last fork server started with (require() settles it at each start).
        self.isolation: Isolation | None = None
        self.python = python or sys.executable
        self.extra_sys_path = [str(p) for p in extra_sys_path]
        self._proc: subprocess.Popen[bytes] | None = None
        # The cgroup the fork server's steps live under (made here, outside any sandbox; None without cgroups).
        self._cgroup: ServerGroup | None = None
        self._ready = False
        self._buffer = bytearray()
        self._scratch_base: str | None = None
        self._owner = os.getpid()
        self._lock = threading.Lock()
        self._jobs = itertools.count(1)
        self.starts = 0
        # The escape probes the last fork server tried and found refused before it said ready.
        self.selftest: tuple[str, ...] = ()
        # Seconds without a request after which the fork server is stopped (0: never).
        self.idle_timeout = idle_timeout_default(settings) if idle_timeout is None else max(float(idle_timeout), 0.0)
        self.idle_stops = 0
        self._last_used = time.monotonic()
        self._idle_timer: threading.Timer | None = None

    def __enter__(self) -> EngineClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc and self._proc.poll() is None else None

    def start(self) -> None:
        """Start the fork server now (otherwise the first :meth:`run` does)."""
        with self._lock:
            self._ensure_started()
            self._arm_idle()

    def run(self, job: StepJob, *, timeout: float | None = None) -> StepResult:
        """Run one step job; return the fork server's result (see :meth:`run_many`)."""
        return self.run_many([job], timeout=timeout)[0]

    def run_many(
        self, jobs: list[StepJob], *, parallel: int = 1, chain: bool = False, timeout: float | None = None
    ) -> list[StepResult]:
        """Run step jobs, up to ``parallel`` step children at once; one result per job, in order.

        With ``chain``, a step child may run several jobs of one submission
        one after another (a new import each; see
        :func:`grader.engine.forkserver.run_jobs`).

        ``timeout`` bounds how long we wait for the fork server itself
        (default: long enough for every job to use its whole time limit, plus
        a grace period). A fork server that died or hangs is killed and
        replaced on the next call; every result then holds ``infra_error``.
        """
        request_id = next(self._jobs)
        line = encode_request(request_id, jobs, parallel=parallel, chain=chain)
        if timeout is None:
            limits = [job.limits.wall_bound for job in jobs]  # the import's bound, then the probes'
            rounds = -(-len(jobs) // max(parallel, 1))
            timeout = max(limits, default=0) * rounds + CLIENT_GRACE_SECONDS
        with self._lock:
            try:
                for attempt in (1, 2):
                    self._ensure_started()
                    try:
                        self._send(line)
                    except OSError:  # it died since the last request: start a new one once
                        self._kill()
                        if attempt == 2:
                            raise EngineUnavailable("the grader's worker process could not be started") from None
                        continue
                    try:
                        return self._collect(request_id, len(jobs), timeout)
                    except BaseException:
                        # An interrupted caller (KeyboardInterrupt in a kernel): its request may still be
                        # running. The fork server takes one request at a time, each read by a grading
                        # worker of its own, so it is stopped rather than sent the next request behind it.
                        self._kill()
                        raise
            finally:
                self._arm_idle()
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Stop the fork server and everything it runs.

        Between jobs, closing its stdin is enough. If a job is running (in
        another thread), we do not wait for it: the fork server is told to
        stop (SIGTERM: it kills its steps' processes first), and the running
        :meth:`run` returns an ``infra_error``.
        """
        timer, self._idle_timer = self._idle_timer, None
        if timer is not None:
            timer.cancel()
        idle = self._lock.acquire(timeout=0.2)
        try:
            proc = self._proc
            if not idle:
                # The running call owns the pipes: it may be between registering
                # the fork server's stdout with its selector and waiting on it.
                # Closing that fd here would drop the end-of-file event it is
                # about to wait for (epoll forgets a closed fd), leaving it
                # blocked for the whole request timeout. So only end the
                # process; the running call then reads EOF and cleans up itself.
                if proc is not None and self._owner == os.getpid():
                    _stop_process(proc)
                return
            if proc is not None and self._owner == os.getpid():
                _end_idle(proc)
            self._kill()
        finally:
            if idle:
                self._lock.release()

    def detach(self) -> None:
        """Let an idle fork server end by itself, without waiting for it: for a command about to exit.

        Its stdin is closed; it then kills what is left of its steps, removes
        its scratch folders and exits (a process of LangGraph's size takes tens
        of milliseconds to tear down, which a one-shot ``check`` need not wait
        for). Its cgroups are removed by a janitor once it has ended. A client
        with a request in flight is closed as :meth:`close` does.
        """
        if not self._lock.acquire(timeout=0.2):
            return self.close()
        try:
            timer, self._idle_timer = self._idle_timer, None
            if timer is not None:
                timer.cancel()
            proc, group = self._proc, self._cgroup
            if proc is None or self._owner != os.getpid() or proc.poll() is not None:
                return self._kill()
            self._proc, self._cgroup, self._scratch_base = None, None, None
            if group is not None and self.sandbox_in_use != "bwrap":  # under bwrap one runs since its start
                _cgroup_janitor(proc.pid, group.folders())
            try:
                if proc.stdin is not None:  # always: started with a pipe
                    proc.stdin.close()
            except OSError:
                pass
        finally:
            self._lock.release()

    # -- internals

    def prestart(self) -> None:
        """Begin starting the fork server without waiting for it (it imports while we work)."""
        with self._lock:
            self._spawn()
            self._arm_idle()

    def _arm_idle(self) -> None:
        """(Under the lock.) Count idle time from now; stop the fork server when it lasts ``idle_timeout``.

        The stop takes the same lock as a request, so it never races one: a
        Check after the stop starts a new fork server.
        """
        self._last_used = time.monotonic()
        if not self.idle_timeout or self._idle_timer is not None or self._owner != os.getpid():
            return
        self._start_idle_timer(self.idle_timeout)

    def _start_idle_timer(self, seconds: float) -> None:
        self._idle_timer = threading.Timer(seconds, self._stop_if_idle)
        self._idle_timer.daemon = True  # never keeps a kernel or a script alive
        self._idle_timer.start()

    def _stop_if_idle(self) -> None:
        if not self._lock.acquire(blocking=False):  # a request runs: look again later
            self._idle_timer = None
            with self._lock:
                self._arm_idle()
            return
        try:
            self._idle_timer = None
            if self._owner != os.getpid() or self._proc is None:
                return
            left = self._last_used + self.idle_timeout - time.monotonic()
            if left > 0.01:  # used since this timer was armed
                self._start_idle_timer(left)
                return
            proc = self._proc
            # Counted first: whoever sees the fork server gone (pid is None) sees the count too.
            self.idle_stops += 1
            _end_idle(proc)
            self._kill()
        finally:
            self._lock.release()

    def _ensure_started(self) -> None:
        self._spawn()
        if self._ready:
            return
        try:
            ready = self._read_line(STARTUP_TIMEOUT_SECONDS)
        except EngineUnavailable:
            self._kill()
            raise
        if ready.get("type") == UNSAFE:  # a wall it promises is missing: it grades nothing, and says which
            self._kill()
            raise EngineUnavailable(f"the grader's worker refused to grade: {ready.get('message')}")
        if ready.get("type") != READY:
            self._kill()
            raise EngineUnavailable(f"unexpected first message from the grader's worker: {ready!r}")
        self.selftest = tuple(str(name) for name in ready.get("selftest") or ())
        self._ready = True
        # Inside bubblewrap the folder is in the sandbox's own /tmp, not ours.
        self._scratch_base = ready.get("scratch") if self.sandbox_in_use == "none" else None

    def _spawn(self) -> None:
        if self._owner != os.getpid():  # we were forked: the process belongs to our parent
            self._proc, self._owner = None, os.getpid()
        if self._proc is not None and self._proc.poll() is None:
            return
        self._kill()
        settings = self.settings or current()
        self.isolation = require(self.sandbox, settings)  # before anything starts: fails closed
        self.sandbox_in_use = self.isolation.sandbox
        self._cgroup = ServerGroup.create(settings)
        _require_cgroups(self._cgroup, settings)
        env = fork_server_env(settings, self._cgroup, self.isolation)
        bootstrap = _bootstrap(server_import_paths(self.extra_sys_path))
        self._proc = subprocess.Popen(
            [*self._sandbox_prefix(), self.python, "-I", "-c", bootstrap],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,
            env=env,
            cwd=tempfile.gettempdir(),
            start_new_session=True,
            close_fds=True,
        )
        if self._cgroup is not None and self.sandbox_in_use == "bwrap":
            _cgroup_janitor(self._proc.pid, self._cgroup.folders())
        self._ready = False
        self._buffer = bytearray()
        self.starts += 1

    def _sandbox_prefix(self) -> list[str]:
        if self.sandbox_in_use != "bwrap":
            return []
        return bwrap_prefix(
            keep=self.extra_sys_path, writable=self._cgroup.folders() if self._cgroup is not None else ()
        )

    def require(self) -> Isolation:
        """The isolation this client's fork server runs (or would run) under; raises where it cannot be had.

        >>> EngineClient(sandbox="none").require().sandbox
        'none'
        """
        return self.isolation or require(self.sandbox, self.settings or current())

    def _send(self, line: bytes) -> None:
        assert self._proc is not None and self._proc.stdin is not None  # started (_ensure_started), with a pipe
        self._proc.stdin.write(line)
        self._proc.stdin.flush()

    def _collect(self, request_id: int, n_jobs: int, wait: float) -> list[StepResult]:
        """The results of one request; the jobs it never reported get an ``infra_error``."""
        results: list[StepResult | None] = [None] * n_jobs
        deadline = time.monotonic() + wait
        error = ""
        try:
            while True:
                message = self._read_line(deadline - time.monotonic())
                if message.get("request") not in (request_id, None):
                    continue  # the answer to a request an interrupted caller gave up on
                if message.get("type") == "result" and 0 <= message.get("index", -1) < n_jobs:
                    results[message["index"]] = StepResult.from_json(message["result"])
                elif message.get("type") == "done":
                    error = message.get("infra_error", "")
                    break
        except EngineUnavailable as exc:
            self._kill()
            error = str(exc)
        error = error or "the grader's worker process did not report this step"
        return [r if r is not None else StepResult(infra_error=error) for r in results]

    def _read_line(self, wait: float) -> JsonDict:
        return read_line(self._proc, self._buffer, wait)

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or self._owner != os.getpid():
            return
        _stop_process(proc)
        group, self._cgroup = self._cgroup, None
        if group is not None:  # after the fork server: whatever its steps left is killed, the groups go
            group.remove()
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream is not None:  # always: started with pipes
                    stream.close()
            except OSError:
                pass
        if self._scratch_base:  # what a killed fork server could not remove
            shutil.rmtree(self._scratch_base, ignore_errors=True)
            self._scratch_base = None


def _require_cgroups(group: ServerGroup | None, settings: Settings) -> None:
    """Raise (after removing ``group``) when controllers named in ``$AGTOOL_CGROUPS`` are not to be had."""
    lacking = cgroups.missing(group, settings)
    if not lacking:
        return
    if group is not None:
        group.remove()
    raise IsolationUnavailable(
        f"the cgroup controllers {', '.join(lacking)} were asked for (${cgroups.CGROUPS_ENV}={settings.cgroups}) "
        "but cannot be used here: run the grader as root, or in a cgroup delegated to it (systemd "
        f"Delegate=yes), or leave ${cgroups.CGROUPS_ENV} unset (every controller that works) or off"
    )


def fork_server_env(
    settings: Settings, group: ServerGroup | None = None, isolation: Isolation | None = None
) -> dict[str, str]:
    """The fork server's whole environment: a clean one, its own settings, the cgroup made for it, the step user.

    >>> env = fork_server_env(Settings(hugepages=True, seed_key="secret"))
    >>> env["AGTOOL_HUGEPAGES"], "AGTOOL_SEED_KEY" in env, env["LANG"]
    ('1', False, 'C.UTF-8')
    """
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": tempfile.gettempdir(),
        GRAPH_SUPERSTEPS_ENV: str(GRAPH_SUPERSTEPS),  # read when the fork server imports LangGraph
    }
    passed = Settings(
        **{name: getattr(settings, name) for name in FORK_SERVER_SETTINGS},
        server_cgroup=group.to_env() if group is not None else "",
        step_user=isolation.step_user() if isolation is not None else "",
        server_sandboxed=isolation is not None and isolation.sandbox == "bwrap",
    )
    env.update(passed.to_environ())
    return env


def _bootstrap(extra: list[str]) -> str:
    """The fork server's ``python -I -c`` program.

    -I keeps PYTHON* variables and the working folder out; what the caller
    can import (a user site, a virtualenv: ``extra``) is appended *after*
    the interpreter's own paths, so it can add modules but shadow none. The
    checkout holding the grader is on the path only while the fork server
    imports ``grader`` (its submodules are found through the package's own
    ``__path__``): no step can import ``solutions.tools``, the starter or a
    test's module from it.
    """
    return (
        f"import sys; sys.path.extend(p for p in {extra!r} if p not in sys.path); root = {PACKAGE_ROOT!r}; "
        "added = root not in sys.path; added and sys.path.append(root); "
        "import grader.engine.forkserver as forkserver; "
        "added and (sys.path.remove(root), sys.path_importer_cache.pop(root, None)); "
        "forkserver.serve()"
    )


def read_line(proc: subprocess.Popen[bytes] | None, buffer: bytearray, wait: float) -> JsonDict:
    """The fork server's next line (from ``buffer``, else read from its stdout), within ``wait`` seconds.

    Our own buffer over the raw fd: a buffered reader could hold a line that
    select() then never reports. Raises :class:`EngineUnavailable` when no
    line comes in time, or the fork server ended or was stopped.
    """
    deadline = time.monotonic() + wait
    while (cut := buffer.find(b"\n")) < 0:
        remaining = deadline - time.monotonic()
        try:
            if proc is None or proc.stdout is None:  # what reading it would raise as AttributeError, below
                raise AttributeError("no fork server")
            with selectors.DefaultSelector() as sel:
                sel.register(proc.stdout.fileno(), selectors.EVENT_READ)
                if remaining <= 0 or not sel.select(remaining):
                    raise EngineUnavailable(f"the grader's worker process did not answer within {wait:.0f} s")
            data = os.read(proc.stdout.fileno(), 1 << 20)
        except (OSError, ValueError, AttributeError):  # closed under us by close() in another thread
            raise EngineUnavailable("the grader's worker process was stopped") from None
        if not data:
            raise EngineUnavailable("the grader's worker process ended unexpectedly")
        buffer += data
    line = bytes(buffer[:cut])
    del buffer[: cut + 1]
    message: JsonDict = json.loads(line)  # a JSON object per line (grader.engine.protocol)
    return message


def _stop_process(proc: subprocess.Popen[bytes]) -> None:
    """End the fork server (SIGTERM, then SIGKILL of its group) and wait for it; close nothing."""
    if proc.poll() is None:
        proc.terminate()  # the fork server kills its steps' processes, then exits
        try:
            proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                proc.kill()
    proc.wait()


def _end_idle(proc: subprocess.Popen[bytes]) -> None:
    """Close an idle fork server's stdin: it ends at once, cleaning up after itself (waited for, briefly)."""
    try:
        if proc.stdin is not None:  # always: started with a pipe
            proc.stdin.close()
        proc.wait(timeout=2)
    except (OSError, subprocess.TimeoutExpired):
        pass


# Waits for the fork server to end, then removes its (empty) cgroups. Inside
# bubblewrap the fork server cannot remove them itself (they are mount points
# there), and a client that leaves by os._exit (a batch worker) never does.
_JANITOR = (
    'while kill -0 "$1" 2>/dev/null; do sleep 0.5; done; shift; '
    'for d in "$@"; do for s in "$d"/*/; do [ -d "$s" ] && rmdir "$s"; done; rmdir "$d"; done 2>/dev/null'
)


def _cgroup_janitor(pid: int, folders: list[str]) -> None:
    try:
        subprocess.Popen(
            ["/bin/sh", "-c", _JANITOR, "agtool-cgroup-janitor", str(pid), *folders],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:  # no shell: the client's close() or the next client's sweep removes them
        pass


def idle_timeout_default(settings: Settings | None = None) -> float:
    """Idle seconds before a fork server stops: ``$AGTOOL_ENGINE_IDLE_SECONDS``, else 600 (0: never).

    >>> idle_timeout_default(Settings(engine_idle_seconds=0.0)), idle_timeout_default(Settings())
    (0.0, 600.0)
    """
    return (settings or current()).engine_idle_seconds


_shared: EngineClient | None = None
_shared_lock = threading.Lock()


def shared_client(sandbox: str | None = None) -> EngineClient:
    """The engine client of this process, created on first use (one per process).

    ``sandbox`` (``none``, ``bwrap``, ``auto``; None: the default) is the mode it
    must run in: a shared client in another mode is stopped and replaced.

    Example::

        >>> shared_client() is shared_client()
        True
    """
    global _shared
    with _shared_lock:
        old = None
        if _shared is not None and _shared._owner == os.getpid() and sandbox and _shared.sandbox != sandbox:
            old, _shared = _shared, None
        if _shared is None or _shared._owner != os.getpid():
            _shared = EngineClient(sandbox=sandbox)
        engine = _shared
    if old is not None:
        old.close()
    return engine


def close() -> None:
    """Stop this process's shared engine client's fork server, if any.

    Example (not run as a doctest: it would stop the fork server other code of this process uses)::

        >>> first = shared_client(); close()  # doctest: +SKIP
        >>> shared_client() is first   # the next use starts a new one  # doctest: +SKIP
        False
    """
    global _shared
    with _shared_lock:
        engine, _shared = _shared, None
    if engine is not None:
        engine.close()


def _forget_parent_client() -> None:
    # A forked process (a batch worker) must neither use nor stop its
    # parent's fork server, nor inherit a lock another thread held.
    global _shared, _shared_lock
    _shared, _shared_lock = None, threading.Lock()


atexit.register(close)
os.register_at_fork(after_in_child=_forget_parent_client)
