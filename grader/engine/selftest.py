"""The fork server's escape self-test: before it says ``ready``, every wall it promises is tried, and must hold.

:func:`run` is called by :func:`grader.engine.forkserver.serve` after the
fork server set up its walls and imported what step children inherit, and
before it reads any request. It grades one ordinary step job whose *source*
is :mod:`grader.engine.escape_attempts` (a file of the grader's that learner
code can neither import nor read) through the normal step path
(:func:`grader.engine.forkserver.run_jobs`'s scheduler): the attempts run as learner
code, in a step child that entered exactly the walls a learner's does, not
a copy of them. Each probe is one way out; only the ways the fork server's
configuration promises to close are tried (:func:`promised_probes`):

- ``code object`` (always): a ``code.replace``, refused by the audit hook;
- ``grader import`` and ``probe file`` (with the code walls): importing one of
  the grader's modules, reading this self-test's own attempts file, refused
  by the import wall and the audit hook;
- ``solution file`` (with the code walls, or in bubblewrap): reading the
  checkout's ``solutions/tools.py``, refused by the audit hook or absent from
  the sandbox's allow-list;
- ``host file`` (in bubblewrap): reading ``/etc/passwd``, absent from the allow-list;
- ``grader memory`` (the grading account): opening the fork server's
  ``/proc/<pid>/mem`` (a grading worker holds a grading's hidden cases there);
- ``outside scratch`` (read-only mounts as root, or the grading account):
  creating a file beside the steps' scratch folders;
- ``network``, ``keyring``, ``namespace`` (steps with walls of their own, in
  bubblewrap): a connection to a loopback listener of the fork server's, the
  ``keyctl`` syscall, ``unshare(CLONE_NEWUSER)``: refused by the step's own
  network namespace and the syscall filter.

If a probe gets through (or the step cannot run at all), :func:`run` names
it and the wall that is missing, and the fork server refuses to grade:
a protection that the configuration asks for and that is missing stops the
grading instead of being skipped.

Example (what the fork server does; it forks a step child)::

    >>> probed, problem = run(sandboxed=False)  # doctest: +SKIP
    >>> probed, problem  # doctest: +SKIP
    (['code object', 'grader import', 'probe file', 'solution file'], '')
"""

from __future__ import annotations

import base64
import os
import secrets
import socket
from dataclasses import dataclass, field
from typing import Any

from grader.engine import audit, confine, namespaces
from grader.engine.protocol import FATAL, OBS, StepJob, StepResult
from grader.engine.scheduling import StepScheduler
from grader.engine.wire import JsonDict

ATTEMPTS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "escape_attempts.py")
# The checkout's reference solution: the file a learner would most like to read.
SOLUTION_FILE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "solutions", "tools.py"
)
# A host file the sandbox's allow-list leaves out (only the loader's /etc files are bound).
HOST_FILE = "/etc/passwd"
PROBE_FUNCTION = "grader.engine.selftest:attempt"


@dataclass(frozen=True)
class EscapeProbe:
    """One way out: its name, the attempt (a function of :mod:`grader.engine.escape_attempts`), the wall.

    >>> EscapeProbe("code object", "code_object", "the audit hook").to_probe()
    {'kind': 'code object', 'params': {'attempt': 'code_object', 'args': {}}}
    """

    name: str
    attempt: str
    wall: str
    args: JsonDict = field(default_factory=dict)

    def to_probe(self) -> JsonDict:
        """The probe as a step job carries it (``kind`` is only its name: :func:`attempt` reads ``params``)."""
        return {"kind": self.name, "params": {"attempt": self.attempt, "args": dict(self.args)}}


def promised_probes(*, sandboxed: bool, listener_port: int = 0) -> list[EscapeProbe]:
    """The probes of the walls this fork server promises, in the order they run.

    ``sandboxed``: the fork server runs in bubblewrap. The code walls and the
    steps' own walls are read from what :func:`grader.engine.forkserver.serve`
    set (:func:`grader.engine.audit.code_walls`, :func:`grader.engine.confine.walls_up`).
    The namespace probe comes last: where it gets through, the step child
    is in a new user namespace for the probes after it.

    >>> audit.set_code_walls(False); _ = confine.set_walls(False)
    >>> [p.name for p in promised_probes(sandboxed=False)]
    ['code object']
    >>> audit.set_code_walls(True)
    """
    probes = [EscapeProbe("code object", "code_object", "the audit hook's refusal of hand-built code objects")]
    if audit.code_walls():
        probes += [
            EscapeProbe("grader import", "grader_import", "the import wall", {"name": "grader.engine.audit"}),
            EscapeProbe(
                "probe file", "own_file", "the audit hook's refusal of the grader's files", {"path": ATTEMPTS_FILE}
            ),
        ]
    if audit.code_walls() or sandboxed:
        wall = (
            "the sandbox's allow-listed file system" if sandboxed else "the audit hook's refusal of the grader's files"
        )
        probes.append(EscapeProbe("solution file", "read_file", wall, {"path": SOLUTION_FILE}))
    if sandboxed:
        probes.append(
            EscapeProbe("host file", "read_file", "the sandbox's allow-listed file system", {"path": HOST_FILE})
        )
    if confine.step_user() is not None:
        wall = "the grading account (the grader's processes are not its to read)"
        probes.append(EscapeProbe("grader memory", "read_memory", wall, {"pid": os.getpid()}))
    if confine.writes_refused():
        wall = "the step's read-only mounts" if not confine.step_user() else "the grading account"
        probes.append(EscapeProbe("outside scratch", "write_file", wall, {"path": _outside_scratch()}))
    if confine.walls_up():
        probes += [
            EscapeProbe("network", "connect", "the step's own network namespace", {"port": listener_port}),
            EscapeProbe("keyring", "keyring", "the syscall filter (keyrings)", {"number": _syscall_number("keyctl")}),
            EscapeProbe(
                "namespace", "namespace_clone", "the syscall filter (namespaces)", {"flag": namespaces.CLONE_NEWUSER}
            ),
        ]
    return probes


def run(*, sandboxed: bool) -> tuple[list[str], str]:
    """(In the fork server, before ``ready``.) Try every promised probe in a step child; the names, the problem.

    The problem is ``""`` when every probe was refused; else it names the
    first probe that got through and the wall that is therefore missing (or
    says the self-test's step could not run), for the fork server to refuse
    to grade with. A listener on the loopback, opened here before any step
    child makes its own network namespace, is what the network probe tries
    to reach; it is closed before this returns.
    """
    try:
        with _listener() as listener:
            probes = promised_probes(sandboxed=sandboxed, listener_port=listener.getsockname()[1])
            with open(ATTEMPTS_FILE, "rb") as fh:
                source = base64.b64encode(fh.read()).decode("ascii")
            job = StepJob(
                step=None,
                source_b64=source,
                probes=tuple(p.to_probe() for p in probes),
                nonce=secrets.token_hex(8),
                probe_function=PROBE_FUNCTION,
            )
            result = StepScheduler([job], parallel=1, chain=False, on_result=None).run(None)[0]  # as run_jobs does
    except Exception as exc:  # no listener, no syscall table, no step: unchecked walls are not trusted
        return [], f"the escape self-test could not run ({type(exc).__name__}: {exc}); no grading runs"
    return [p.name for p in probes], judge(probes, result)


def judge(probes: list[EscapeProbe], result: StepResult) -> str:
    """The problem the self-test's step shows (``""``: every probe was refused).

    >>> probe = EscapeProbe("keyring", "keyring", "the syscall filter")
    >>> obs = {"type": "obs", "index": 0, "obs": {"refused": False, "how": "keyctl reached the kernel"}}
    >>> judge([probe], StepResult(messages=(obs,)))  # doctest: +ELLIPSIS
    "the escape self-test's probe 'keyring' got through (keyctl reached the kernel), so the syscall filter does not hold..."
    >>> judge([probe], StepResult(messages=({**obs, "obs": {"refused": True, "how": "EPERM"}},)))
    ''
    """
    seen: dict[int, JsonDict] = {}
    for message in result.messages:
        raw: JsonDict = dict(message)
        index, obs = raw.get("index"), raw.get("obs")
        if raw.get("type") == OBS and isinstance(index, int) and isinstance(obs, dict):
            seen[index] = obs
    for index, probe in enumerate(probes):
        obs = seen.get(index)
        if obs is None:
            return f"the escape self-test could not run its probe {probe.name!r} ({_why_not(result)}); no grading runs"
        if obs.get("refused") is not True:
            return (
                f"the escape self-test's probe {probe.name!r} got through ({obs.get('how', obs)}), so "
                f"{probe.wall} does not hold: no grading runs without it"
            )
    return ""


def attempt(module: Any, probe: JsonDict, ctx: Any) -> JsonDict:
    """(The self-test step's probe function, in the step child.) Run one attempt; whether it was refused, and how.

    >>> import types
    >>> attempt(types.SimpleNamespace(f=lambda: "open"), {"params": {"attempt": "f", "args": {}}}, None)
    {'refused': False, 'how': 'open'}
    >>> attempt(types.SimpleNamespace(f=lambda: 1 / 0), {"params": {"attempt": "f", "args": {}}}, None)
    {'refused': True, 'how': 'ZeroDivisionError: division by zero'}
    """
    params = probe["params"]
    try:
        how = getattr(module, params["attempt"])(**params["args"])
    except Exception as exc:  # refused: by a wall, or by the door not being there at all
        return {"refused": True, "how": f"{type(exc).__name__}: {exc}"[:300]}
    return {"refused": False, "how": str(how)[:300]}


def _why_not(result: StepResult) -> str:
    """Why the self-test's step sent no observation: its fatal message, its timeout or how it ended."""
    for message in result.messages:
        if message.get("type") == FATAL:
            return str(message.get("message", ""))[:500]
    if result.timed_out:
        return "its step timed out"
    return f"its step ended with exit status {result.exit_status}, signal {result.signal}"


def _outside_scratch() -> str:
    """A file name beside the steps' scratch folders (in the fork server's own folder), where no step may write."""
    from grader.engine.step_process import SERVER

    return os.path.join(SERVER.scratch_base or "/tmp", f"escape-selftest-{secrets.token_hex(4)}")


def _syscall_number(name: str) -> int:
    """The number of syscall ``name`` here (the filter's library knows it: it is loaded where this is asked)."""
    import pyseccomp

    number: int = pyseccomp.resolve_syscall(pyseccomp.system_arch(), name)
    return number


class _listener:
    """A listening loopback socket for the network probe, closed on the way out (a context manager)."""

    def __enter__(self) -> socket.socket:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        return self.sock

    def __exit__(self, *exc: object) -> None:
        self.sock.close()
