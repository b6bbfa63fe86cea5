"""What crosses the process boundary: step jobs, step results, the step child's messages.

Three processes talk in plain JSON, never pickle (learner code must not be
able to make the grading process run anything it sends):

* the engine client (:mod:`grader.engine.client`) sends the fork server
  (:mod:`grader.engine.forkserver`) one line per request,
  ``{"request": id, "jobs": [StepJob.to_json(), ...], "parallel": n}``,
  and reads back ``{"type": "result", "request": id, "index": i, "result":
  StepResult.to_json()}`` per job, then ``{"type": "done", "request": id}``;
* the step child (:mod:`grader.engine.child`) gets its :class:`StepJob` by
  ``fork()`` and writes one message per line to its result pipe, each with
  the step's ``nonce`` (so the fork server can refuse forgeries)::

    {"type": "imported"}                          the module imported
    {"type": "import_error", "error_type", "message", "file", "line", "source"}
    {"type": "run", "tool": name}                 a spied tool's body began (one per run, see below)
    {"type": "obs", "index": i, "obs": {...}}     probe i finished
    {"type": "fatal", "message": "..."}           the grader itself failed here
    {"type": "done"}                              every probe ran
    {"type": "done", "more": bool}                (a step child running several steps) and whether it goes on
    {"type": "changed", "next": i}                a fresh probe changed this process: it ends, and a
                                                  new step child runs probes i.. of the step

``run`` messages are the body-run trace: written the moment a
spied tool's body starts, they are in the fork server's hands before the
module can do anything about it, and it counts them itself. An observation
whose spy counts say fewer runs than the trace since the previous one was
tampered with; the fork server replaces it with a ``probe_error``
(:data:`TRACE_MISMATCH`).

The step child imports this module before any learner code, so it holds
nothing but the standard library.

Example::

    >>> job = StepJob(step=1, source_b64=encode_source(b"X = 1\\n"), probes=(), nonce="n1")
    >>> StepJob.from_json(job.to_json()) == job
    True
"""

from __future__ import annotations

import base64
import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, TypedDict

from grader.engine.wire import JsonDict

DEFAULT_PROBE_FUNCTION = "grader.engine.probes:run_probe"

# Size caps of what the step child sends back.
MAX_MESSAGE_BYTES = 1 << 20  # one message (an observation); larger ones are refused by both sides
MAX_TOTAL_MESSAGE_BYTES = 16 << 20  # all of one step's messages together
# A step child wakes its fork server (a byte on the wake-up pipe) at least once
# per this many bytes of messages (and after each one the fork server must act
# on at once), so that the result pipe never fills between two wake-ups
# (grader.engine.child.run_steps).
WAKE_BYTES = 16 << 10
# Result lines longer than a pipe writes in one piece (POSIX's PIPE_BUF, 4096
# bytes on Linux) go as fragment lines of at most that size, each written by one
# write(): ``~`` + a tag of FRAGMENT_TAG_BYTES hex digits drawn for the message +
# ``+`` (more follows) or ``.`` (the last) + a piece of the line. A copy of the
# step child that the module forked keeps the pipe and may write lines of its
# own at any moment: between two fragments they are refused on their own, and
# the message, whose fragments no other writer can split, still arrives.
FRAGMENT_LINE_BYTES = 4096
FRAGMENT_TAG_BYTES = 12
MAX_OPEN_FRAGMENTS = 8  # messages begun and not ended that the reader keeps (junk tags beyond are dropped)
# What the fork server writes on a chained step child's start pipe to begin its
# next step when it may also run that step's probes as soon as it imported
# (a free slot): no second byte to wait for after ``imported``.
START_AT_IMPORT = b"p"
MAX_EXCEPTION_TEXT = 2000  # characters of an exception's message or traceback passed on
MAX_REPORT_TEXT = 20000  # characters of the learner's tool_report.md sent back by the report probe
# Larger sources are compiled in the step child, under its limits, not by the fork server.
MAX_PRECOMPILED_BYTES = 512 << 10

# The step child's message kinds, in the order they may come: imported, obs
# 0..n-1, done; or a lone import_error or fatal.
IMPORTED = "imported"
IMPORT_ERROR = "import_error"
OBS = "obs"
RUN = "run"
FATAL = "fatal"
DONE = "done"
CHANGED = "changed"
MESSAGE_TYPES = (IMPORTED, IMPORT_ERROR, OBS, RUN, FATAL, DONE, CHANGED)
TRACE_MISMATCH = "TraceMismatch"  # the probe_error of an observation whose run counts were wound back
FINAL_TYPES = (DONE, IMPORT_ERROR, FATAL, CHANGED)  # nothing may follow these
# The most supersteps one graph run may take in a step child: LangGraph's default ``recursion_limit``
# there, set in the fork server's environment (grader.engine.client.fork_server_env), which LangGraph
# reads once, when the fork server imports it; a graph's own config still overrides it. LangGraph's own
# default is 10,007: a repair loop that never ends then runs for about 5 s per run, a step's whole time,
# and the step's other checks are lost with it. No graph of the lab needs more than a few dozen (the
# spec's, at MAX_ATTEMPTS = 9: 19; ten nodes an attempt: 93), so a run stops at this bound with the
# same GraphRecursionError, in about 0.1 s.
GRAPH_SUPERSTEPS = 200
GRAPH_SUPERSTEPS_ENV = "LANGGRAPH_DEFAULT_RECURSION_LIMIT"
# The fork server's first line to its client: ``ready``, or ``unsafe`` with a ``message`` when its
# escape self-test found a wall missing (grader.engine.selftest): it then ends without grading.
READY = "ready"
UNSAFE = "unsafe"


class ImportedMessage(TypedDict):
    """The learner's module imported.

    >>> ImportedMessage(type=IMPORTED, nonce="n1")
    {'type': 'imported', 'nonce': 'n1'}
    """

    type: str
    nonce: str


class ImportErrorMessage(TypedDict):
    """The learner's module did not import: the exception and the learner line that failed.

    >>> ImportErrorMessage(type=IMPORT_ERROR, nonce="n1", error_type="NameError", message="x",
    ...                    file="tools.py", line=3, source="x")["line"]
    3
    """

    type: str
    nonce: str
    error_type: str
    message: str
    file: str
    line: int | None
    source: str


class ObsMessage(TypedDict):
    """Probe ``index`` of the job finished: what it observed (JSON data only).

    >>> ObsMessage(type=OBS, nonce="n1", index=0, obs={"value": 1})["obs"]
    {'value': 1}
    """

    type: str
    nonce: str
    index: int
    obs: JsonDict


class FatalMessage(TypedDict):
    """The grader's own code failed in the step child (a traceback, capped).

    >>> FatalMessage(type=FATAL, nonce="n1", message="Traceback ...")["type"]
    'fatal'
    """

    type: str
    nonce: str
    message: str


class DoneMessage(TypedDict):
    """Every probe of the job ran.

    >>> DoneMessage(type=DONE, nonce="n1")["type"] in FINAL_TYPES
    True
    """

    type: str
    nonce: str


class ChangedMessage(TypedDict):
    """A fresh probe run in the step child changed the process; probes ``next``.. go to a new step child.

    >>> ChangedMessage(type=CHANGED, nonce="n1", next=1)["type"] in FINAL_TYPES
    True
    """

    type: str
    nonce: str
    next: int


class RunMessage(TypedDict):
    """A spied tool's body began running (the fork server counts these; see the module docstring).

    >>> RunMessage(type=RUN, nonce="n1", tool="stock_lookup")["tool"]
    'stock_lookup'
    """

    type: str
    nonce: str
    tool: str


def claimed_runs(obs: JsonDict) -> dict[str, int]:
    """The tool runs an observation's own snapshots account for: last snapshot minus the first.

    >>> claimed_runs({"start": {"spy_runs": {"a": 0}}, "records": [{"spy_runs": {"a": 2}}]})
    {'a': 2}
    >>> claimed_runs({"value": 1})
    {}
    """
    # JSON from the step child (read by the learner's module first): each value checked as it is read.
    start: Any = obs.get("start") if isinstance(obs.get("start"), dict) else {}
    records: Any = obs.get("records") if isinstance(obs.get("records"), list) else []
    first: Any = start.get("spy_runs") if isinstance(start.get("spy_runs"), dict) else {}
    last: Any = records[-1].get("spy_runs") if records and isinstance(records[-1], dict) else first
    last = last if isinstance(last, dict) else {}
    out = {}
    for name in set(first) | set(last):
        a, b = first.get(name, 0), last.get(name, 0)
        out[name] = (b if type(b) is int else 0) - (a if type(a) is int else 0)
    return out


Message = ImportedMessage | ImportErrorMessage | ObsMessage | RunMessage | FatalMessage | DoneMessage | ChangedMessage


@dataclass(frozen=True)
class Limits:
    """Resource bounds of one step's process; the defaults suit the lab.

    Time is bounded in two parts, so that an honest slow import never costs
    points: ``import_timeout`` bounds the step's one import of the module
    (wall seconds, generous: learners import pandas or read a data file),
    ``timeout`` bounds the probes after it (the learner's work: wall seconds
    for all of the step's probes together), and ``probe_timeout`` each probe
    on its own (``None``: ``timeout``). ``cpu_seconds`` of ``None`` means
    ``import_timeout + timeout + 1``. ``nproc`` is the number of processes
    the step may add to those its user already runs (root is exempt from
    this limit in Linux, the others still hold).

    Where cgroups are usable (:mod:`grader.engine.cgroups`), ``memory_bytes``
    also bounds the step's whole process tree together, ``pids`` its tasks
    (processes and threads) at once and, with cgroup v2, ``cpus`` the CPUs
    it may use;
    ``disk_bytes`` is what the step may write, all files together
    (:mod:`grader.engine.confine`).

    Example::

        >>> Limits.from_value({"timeout": 5}).timeout, Limits().import_timeout
        (5.0, 30.0)
    """

    timeout: float = 10.0
    import_timeout: float = 30.0
    probe_timeout: float | None = None
    memory_bytes: int = 1 << 30
    cpu_seconds: int | None = None
    file_size_bytes: int = 16 << 20
    open_files: int = 256
    nproc: int = 64
    output_bytes: int = 64 << 10
    pids: int = 256
    cpus: float = 1.0
    disk_bytes: int = 64 << 20

    @classmethod
    def from_value(cls, value: Limits | JsonDict | None, *, timeout: float | None = None) -> Limits:
        """Build from a ``Limits``, a dict of field overrides or ``None``; ``timeout`` wins.

        >>> Limits.from_value(Limits(timeout=3), timeout=4).timeout
        4.0
        >>> Limits.from_value({"swap": 1})
        Traceback (most recent call last):
        ...
        ValueError: unknown limit(s): swap; known: cpu_seconds, ...
        """
        if isinstance(value, Limits):
            base = asdict(value)
        else:
            known = {f.name for f in fields(cls)}
            unknown = sorted(set(value or {}) - known)
            if unknown:
                raise ValueError(f"unknown limit(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}")
            base = {**asdict(cls()), **(value or {})}
        if timeout is not None:
            base["timeout"] = timeout
        for name in ("timeout", "import_timeout", "probe_timeout"):
            if name == "probe_timeout" and base[name] is None:
                continue
            base[name] = float(base[name])
            if not base[name] > 0:
                raise ValueError(f"{name} must be a positive number of seconds")
        return cls(**base)

    @property
    def per_probe(self) -> float:
        """Wall seconds one probe may take (at most the step's ``timeout``).

        >>> Limits(timeout=4).per_probe, Limits(timeout=4, probe_timeout=1).per_probe
        (4, 1)
        """
        return min(self.probe_timeout, self.timeout) if self.probe_timeout is not None else self.timeout

    @property
    def wall_bound(self) -> float:
        """The longest a step may run: its import, then its probes.

        >>> Limits(timeout=4, import_timeout=6).wall_bound
        10
        """
        return self.import_timeout + self.timeout

    @property
    def cpu(self) -> int:
        """The CPU-time limit in whole seconds.

        >>> Limits(timeout=2.5, import_timeout=3).cpu, Limits(cpu_seconds=7).cpu
        (6, 7)
        """
        return int(self.cpu_seconds if self.cpu_seconds is not None else self.wall_bound + 1)

    def to_json(self) -> JsonDict:
        """Every field, as the step job carries them.

        >>> Limits().to_json()["open_files"]
        256
        """
        return asdict(self)


def encode_source(source: bytes) -> str:
    """The submission's bytes as they travel in a job (JSON cannot carry arbitrary bytes).

    Example::

        >>> encode_source(b"x = 1\\n")
        'eCA9IDEK'
    """
    return base64.b64encode(source).decode("ascii")


@dataclass(frozen=True)
class StepJob:
    """One step to run in a step child: the submission, its probes, a nonce, the limits.

    ``probes`` are ``Probe.to_json()`` dicts; ``probe_function``
    (``"module:function"``) replaces :data:`DEFAULT_PROBE_FUNCTION` when set
    (the engine's own tests use it). ``reimport_seconds``, when set, replaces
    ``grader.engine.child.REIMPORT_SECONDS`` (the import time under which fresh
    probes import anew instead of forking): the engine's tests of either path
    set it, so their verdict does not depend on how busy the machine is.

    Example::

        >>> job = StepJob(step=2, source_b64="", probes=({"kind": "calls", "params": {}},), nonce="n1")
        >>> wire = job.to_json()
        >>> wire["step"], wire["probes"], "probe_function" in wire
        (2, [{'kind': 'calls', 'params': {}}], False)
    """

    step: int | None
    source_b64: str
    probes: tuple[JsonDict, ...]
    nonce: str
    limits: Limits = field(default_factory=Limits)
    probe_function: str | None = None
    reimport_seconds: float | None = None
    # Where the step child begins in ``probes`` (the fork server's own, never on the wire:
    # a step resumed in a new step child, see ChangedMessage).
    first_probe: int = 0

    def to_json(self) -> JsonDict:
        """The job as it travels to the fork server (``probe_function`` only when set).

        >>> StepJob(1, "", (), "n1", probe_function="m:f").to_json()["probe_function"]
        'm:f'
        """
        wire: JsonDict = {
            "step": self.step,
            "source_b64": self.source_b64,
            "probes": list(self.probes),
            "nonce": self.nonce,
            "limits": self.limits.to_json(),
        }
        if self.probe_function:
            wire["probe_function"] = self.probe_function
        if self.reimport_seconds is not None:
            wire["reimport_seconds"] = self.reimport_seconds
        return wire

    @classmethod
    def from_json(cls, wire: JsonDict) -> StepJob:
        """The job a line of the engine client's request holds.

        >>> StepJob.from_json({"step": 1, "source_b64": "", "probes": [], "nonce": "n1"}).limits.timeout
        10.0
        """
        return cls(
            step=wire.get("step"),
            source_b64=str(wire.get("source_b64", "")),
            probes=tuple(wire.get("probes", ())),
            nonce=str(wire.get("nonce", "")),
            limits=Limits.from_value(wire.get("limits")),
            probe_function=wire.get("probe_function"),
            reimport_seconds=_seconds_or_none(wire.get("reimport_seconds")),
        )


def _seconds_or_none(value: Any) -> float | None:  # JSON: any value
    """A finite number of seconds of at least 0 from the wire, else ``None`` (the default applies).

    >>> _seconds_or_none(5), _seconds_or_none("x"), _seconds_or_none(-1), _seconds_or_none(None)
    (5.0, None, None, None)
    """
    if type(value) not in (int, float) or not 0 <= value < float("inf"):
        return None
    return float(value)


def request_to_json(request_id: int, jobs: list[StepJob], *, parallel: int = 1, chain: bool = False) -> JsonDict:
    """A request as it travels to the fork server, each distinct source once.

    A submission's steps share one source (up to 4 MiB, base64): sent once
    per step it cost the engine client and the fork server 3 ms of JSON a
    submission, more than all of its probes.

    >>> wire = request_to_json(7, [StepJob(1, "QQ==", (), "n1"), StepJob(2, "QQ==", (), "n2")])
    >>> wire["sources"], [job["source"] for job in wire["jobs"]]
    (['QQ=='], [0, 0])
    >>> [job.source_b64 for job in jobs_from_request(wire)]
    ['QQ==', 'QQ==']
    """
    sources: dict[str, int] = {}
    wires = []
    for job in jobs:
        wire = job.to_json()
        wire["source"] = sources.setdefault(wire.pop("source_b64"), len(sources))
        wires.append(wire)
    return {"request": request_id, "sources": list(sources), "jobs": wires, "parallel": parallel, "chain": bool(chain)}


def encode_request(request_id: int, jobs: list[StepJob], *, parallel: int = 1, chain: bool = False) -> bytes:
    """:func:`request_to_json` as one line of JSON, each job's probes encoded once per probe tuple.

    A batch grades every learner with the same probes (one seed, one plan
    per step, the very same tuple each time: ``grader.grading._draw_plan``),
    which were 70 KB of a request's JSON; they are encoded the first time
    and copied in after that.

    >>> probes = ({"kind": "calls", "params": {}},)
    >>> line = encode_request(1, [StepJob(1, "QQ==", probes, "n1"), StepJob(2, "QQ==", probes, "n2")])
    >>> [job.probes for job in jobs_from_request(json.loads(line))] == [probes, probes]
    True
    """
    wire = request_to_json(request_id, jobs, parallel=parallel, chain=chain)
    pieces = []
    for n, (job, job_wire) in enumerate(zip(jobs, wire["jobs"])):
        job_wire["probes"] = f"\0probes-{n}\0"  # json.dumps writes \u0000, which nothing else here holds
        pieces.append(_probes_json(job.probes))
    line = json.dumps(wire)
    for n, piece in enumerate(pieces):
        line = line.replace(f'"\\u0000probes-{n}\\u0000"', piece, 1)
    return line.encode("ascii") + b"\n"


_PROBES_JSON: dict[
    int, tuple[tuple[Any, ...], str]
] = {}  # id(probes) -> (probes, their JSON); holding them keeps the id


def _probes_json(probes: tuple[JsonDict, ...]) -> str:
    known = _PROBES_JSON.get(id(probes))
    if known is not None and known[0] is probes:
        return known[1]
    if len(_PROBES_JSON) >= 256:  # plans of other seeds or selections: start over
        _PROBES_JSON.clear()
    text = json.dumps(list(probes))
    _PROBES_JSON[id(probes)] = (probes, text)
    return text


def jobs_from_request(request: JsonDict) -> list[StepJob]:
    """The step jobs of a request made by :func:`request_to_json` (a job may also carry its own ``source_b64``)."""
    sources = request.get("sources") or []
    jobs = []
    for wire in request["jobs"]:
        index = wire.get("source")
        if type(index) is int and 0 <= index < len(sources):
            wire = {**wire, "source_b64": sources[index]}
        jobs.append(StepJob.from_json(wire))
    return jobs


@dataclass(frozen=True)
class StepResult:
    """What the fork server saw of one step child, or why it could not say (``infra_error``).

    ``messages`` are the step child's messages the fork server accepted, in
    order; ``channel_errors`` say what it refused. ``output`` is the
    learner's stdout and stderr, capped at ``Limits.output_bytes``
    (``output_truncated``). The child ended with ``exit_status`` or was
    killed by ``signal``; ``timed_out`` when it outlived its time limit.
    ``timeout_phase`` says what was running when it was killed (``"import"``
    or ``"probe"``), ``phase_seconds`` how long that had run;
    ``import_seconds`` is how long the import took (0 when it did not end);
    ``elapsed`` is wall and ``cpu`` CPU seconds of the step's own process;
    ``killed_descendants`` counts the processes it left behind. ``limits``
    names the limits that held for the step as a whole (cgroup, priority,
    disk), ``limits_hit`` those it ran into (``memory``, ``pids``, ``disk``). A result
    with ``infra_error`` (made by the engine client: the fork server died or
    did not answer) holds nothing else.

    Example::

        >>> result = StepResult(messages=({"type": "imported", "nonce": "n1"},), exit_status=0)
        >>> StepResult.from_json(result.to_json()) == result
        True
        >>> StepResult(infra_error="the worker ended").to_json()["infra_error"]
        'the worker ended'
    """

    messages: tuple[Message, ...] = ()
    channel_errors: tuple[str, ...] = ()
    output: str = ""
    output_truncated: bool = False
    exit_status: int | None = None
    signal: int | None = None
    timed_out: bool = False
    timeout_phase: str = ""
    phase_seconds: float = 0.0
    import_seconds: float = 0.0
    elapsed: float = 0.0
    cpu: float = 0.0
    killed_descendants: int = 0
    limits: str = ""
    limits_hit: tuple[str, ...] = ()
    infra_error: str = ""

    def to_json(self) -> JsonDict:
        """The result as the fork server writes it (``infra_error`` only when set).

        >>> StepResult(timed_out=True).to_json()["timed_out"]
        True
        """
        wire: dict[str, Any] = {"type": "result"}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name != "infra_error" or value:
                wire[f.name] = list(value) if isinstance(value, tuple) else value
        return wire

    @classmethod
    def from_json(cls, wire: JsonDict) -> StepResult:
        """The result a line of the fork server holds; missing fields keep their defaults.

        >>> StepResult.from_json({"type": "result", "signal": 9}).signal
        9
        """
        known = {f.name for f in fields(cls)}
        values: JsonDict = {k: tuple(v) if isinstance(v, list) else v for k, v in wire.items() if k in known}
        return cls(**values)
