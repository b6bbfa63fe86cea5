"""No grading inherits another's memory; keyrings, System V IPC and process counts are per step.

Each class of leak is tried by a pair of learners graded by the same engine
(the victim first, the reader next, as a classmate graded later by that worker
would be), with the layer on and, to show the test can fail, with the layer off
(``$AGTOOL_CLEAN_START=0``, ``$AGTOOL_STEP_WALLS=0``: internal switches for
these tests only). They need bubblewrap (as ``.ci/run`` installs it) and root
(learner code runs as the grading account).
"""

from __future__ import annotations

import os
import re
import secrets
import time
from pathlib import Path

import pytest

from grader.engine.client import EngineClient
from grader.engine.sandbox import bwrap_usable
from grader.grading import grade
from grader.locate import Submission
from grader.settings import Settings

REPO = Path(__file__).resolve().parents[1]
SOLUTION = (REPO / "solutions" / "tools.py").read_text(encoding="utf-8")

pytestmark = pytest.mark.skipif(
    not os.environ.get("CI") and not (bwrap_usable() and os.geteuid() == 0),
    reason="needs bubblewrap and root (CI has both: a missing one fails there)",
)


def _engine(**settings) -> EngineClient:
    return EngineClient(sandbox="bwrap", idle_timeout=0, settings=Settings(sandbox="bwrap", **settings))


def _graded(engine: EngineClient, source: str, steps=(1,)):
    return grade(Submission(source.encode(), "tools.py"), steps=list(steps), seed=5, engine=engine)


def _output(report) -> str:
    return "\n".join(report.output.values())


# ------------------------------------------------------------------ memory of earlier gradings

# What the victim leaves in the worker that serves it: its source, what it prints, what a tool
# returns, what an exception says. Each carries a marker of its own the reader cannot know.
VICTIM = """
# {source}
print("{printed}")


def _leak_value():
    return "{returned}"


def _leak_raise():
    raise ValueError("{raised}")
"""

READER = """
import ctypes as _c, re as _re
_FOUND = set()
_NEEDLE = _re.compile(("VIC" + "TIM-MARK-").encode() + rb"[a-z]+-[0-9a-f]{16}")
with open("/proc/self/maps") as _fh:
    for _line in _fh:
        _parts = _line.split()
        _lo, _hi = (int(x, 16) for x in _parts[0].split("-"))
        if _parts[1].startswith("r") and _hi - _lo < (512 << 20) and not any(
                _x in _line for _x in ("[vvar", "[vsyscall", "[vdso")):
            _FOUND.update(m.decode() for m in _NEEDLE.findall(_c.string_at(_lo, _hi - _lo)))
print("READER FOUND", sorted(_FOUND))
"""


# Comment lines before the marks: the victim's request is about twice the reader's, so the reader's own
# request, of about the solution's size, reuses the front of the victim's freed buffers and leaves their
# tail, where the source's mark is, as it was (each copy stays under malloc's mmap threshold, 128 KiB, so
# freeing it keeps it in the heap a later fork copies).
PADDING = "".join(f"# padding line {i:04d} {'.' * 50}\n" for i in range(500))


def _victim() -> tuple[str, dict[str, str]]:
    marks = {kind: f"VICTIM-MARK-{kind}-{secrets.token_hex(8)}" for kind in ("source", "printed", "returned", "raised")}
    return SOLUTION + PADDING + VICTIM.format(**marks), marks


def _victim_calls() -> str:
    # Run the leaking functions at import, so their values pass through the step child's messages too;
    # in lines of many lengths, so that some copy lands in memory the next grading's own allocations
    # do not reuse, whatever the sizes of the engine's own messages (a changed sentence moved them).
    return """
for _pad in range(64):
    try:
        print(" " * _pad * 7, _leak_value())
        _leak_raise()
    except ValueError as _exc:
        print("raised", "." * _pad * 5, _exc)
"""


def _memory_leaks(**settings) -> dict[str, bool]:
    source, marks = _victim()
    with _engine(**settings) as engine:
        victim = _graded(engine, source + _victim_calls(), steps=(1, 2))
        assert victim.score == victim.max_score > 0, victim.failed
        reader = _graded(engine, SOLUTION + READER, steps=(1, 2))
    seen = _output(reader)
    assert "READER FOUND" in seen, seen[:2000]
    return {kind: mark in seen for kind, mark in marks.items()}


def test_a_step_child_finds_no_earlier_grading_in_its_own_memory():
    leaks = _memory_leaks()
    assert not any(leaks.values()), f"an earlier grading's data was readable: {leaks}"


def test_without_the_clean_start_the_same_reader_finds_the_earlier_grading():
    # The proof that the test above can fail: the fork server serving every grading itself.
    leaks = _memory_leaks(clean_start=False)
    assert any(leaks.values()), leaks


# ------------------------------------------------------------------ keyrings

KEY_WRITER = """
import ctypes as _c
_libc = _c.CDLL(None, use_errno=True)
_KEYRING = {keyring}
if {persistent}:
    _KEYRING = _libc.syscall(250, 22, -1, -4)  # keyctl(KEYCTL_GET_PERSISTENT, self, user keyring)
_r = _libc.syscall(248, b"user", b"agtool-leak", b"{mark}", len(b"{mark}"), _KEYRING)  # add_key
print("KEY WRITE", _r, _c.get_errno())
"""

KEY_READER = """
import ctypes as _c
_libc = _c.CDLL(None, use_errno=True)
_found = []
for _ring in (-4, -5, -3, -2):
    _rings = [_ring]
    if _ring == -4:
        _rings.append(_libc.syscall(250, 22, -1, -4))
    for _kr in _rings:
        _id = _libc.syscall(250, 10, _kr, b"user", b"agtool-leak", 0)  # KEYCTL_SEARCH
        if _id > 0:
            _buf = _c.create_string_buffer(256)
            _n = _libc.syscall(250, 11, _id, _buf, 256)  # KEYCTL_READ
            _found.append(_buf.raw[:max(_n, 0)].decode(errors="replace"))
print("KEY READ", _found)
"""

# The user keyring, the user session keyring, the session keyring, the persistent keyring.
KEYRINGS = {"user": (-4, False), "user_session": (-5, False), "session": (-3, False), "persistent": (-4, True)}


def _key_leaks(keyring: str, **settings) -> bool:
    mark = f"KEYMARK-{secrets.token_hex(8)}"
    ring, persistent = KEYRINGS[keyring]
    with _engine(**settings) as engine:
        _graded(engine, SOLUTION + KEY_WRITER.format(keyring=ring, persistent=persistent, mark=mark))
    with _engine(**settings) as engine:  # another fork server: another sandbox, the same grading account
        reader = _graded(engine, SOLUTION + KEY_READER)
    seen = _output(reader)
    assert "KEY READ" in seen, seen[:2000]
    return mark in seen


@pytest.mark.parametrize("keyring", sorted(KEYRINGS))
def test_no_keyring_carries_a_grading_s_data_to_a_later_one(keyring):
    assert not _key_leaks(keyring)


def test_without_the_walls_the_user_keyring_carries_it():
    assert _key_leaks("user", step_walls=False)


# ------------------------------------------------------------------ System V IPC

IPC_WRITER = """
import ctypes as _c
_libc = _c.CDLL(None, use_errno=True)
_libc.shmat.restype = _c.c_void_p
_KEY = 0x41475431
_MARK = b"{mark}"
if "{kind}" == "shm":
    _id = _libc.shmget(_KEY, 1 << 20, 0o1666)
    _at = _libc.shmat(_id, None, 0)
    _c.memmove(_at, _MARK, len(_MARK))
elif "{kind}" == "msg":
    _id = _libc.msgget(_KEY, 0o1666)
    _buf = _c.create_string_buffer(8 + len(_MARK))
    _c.memmove(_c.addressof(_buf), (1).to_bytes(8, "little") + _MARK, 8 + len(_MARK))
    _libc.msgsnd(_id, _buf, len(_MARK), 0o4000)
elif "{kind}" == "mq":
    _q = _libc.mq_open(b"/agtool-leak", 0o100 | 0o2, 0o666, None)  # O_CREAT | O_RDWR
    _id = _libc.mq_send(_q, _MARK, len(_MARK), 0)
elif "{kind}" == "sem":
    _id = _libc.semget(_KEY, 1, 0o1666)
    _libc.semctl(_id, 0, 16, int(_MARK[-4:], 16) & 0x7FFF)  # SETVAL (at most SEMVMX): from the marker's end
print("IPC WRITE", "{kind}", _id)
"""

IPC_READER = """
import ctypes as _c
_libc = _c.CDLL(None, use_errno=True)
_libc.shmat.restype = _c.c_void_p
_KEY = 0x41475431
_seen = []
_id = _libc.shmget(_KEY, 0, 0)
if _id >= 0:
    _at = _libc.shmat(_id, None, 0o10000)
    _seen.append(_c.string_at(_at, 64).split(b"\\0")[0].decode(errors="replace"))
_id = _libc.msgget(_KEY, 0)
if _id >= 0:
    _buf = _c.create_string_buffer(8 + 256)
    _n = _libc.msgrcv(_id, _buf, 256, 0, 0o4000)
    _seen.append(_buf.raw[8:8 + max(_n, 0)].decode(errors="replace"))
_id = _libc.semget(_KEY, 0, 0)
if _id >= 0:
    _seen.append("sem:%04x" % _libc.semctl(_id, 0, 12))  # GETVAL
_q = _libc.mq_open(b"/agtool-leak", 0o4000)  # O_RDONLY | O_NONBLOCK
if _q >= 0:
    _buf = _c.create_string_buffer(8192)
    _n = _libc.mq_receive(_q, _buf, 8192, None)
    _seen.append(_buf.raw[:max(_n, 0)].decode(errors="replace"))
print("IPC READ", _seen)
"""


def _ipc_leaks(kind: str, **settings) -> bool:
    mark = f"IPCMARK-{secrets.token_hex(8)}"
    with _engine(**settings) as engine:
        writer = _graded(engine, SOLUTION + IPC_WRITER.format(kind=kind, mark=mark))
        assert "IPC WRITE" in _output(writer)
        reader = _graded(engine, SOLUTION + IPC_READER)
    seen = _output(reader)
    assert "IPC READ" in seen, seen[:2000]
    return (f"sem:{int(mark[-4:], 16) & 0x7FFF:04x}" if kind == "sem" else mark) in seen


@pytest.mark.parametrize("kind", ["shm", "msg", "sem", "mq"])
def test_system_v_ipc_of_a_grading_is_gone_for_the_next(kind):
    assert not _ipc_leaks(kind)


@pytest.mark.parametrize("kind", ["shm", "msg", "sem", "mq"])
def test_without_the_walls_the_same_ipc_outlives_the_grading(kind):
    assert _ipc_leaks(kind, step_walls=False)


# ------------------------------------------------------------------ the network: a namespace per step

# A closed loopback connection stays in TIME_WAIT for 60 s with no process behind it: its port
# numbers can carry bytes from one grading to the next graded by the same fork server. An
# abstract unix socket sent over itself (SCM_RIGHTS) outlives its process until the kernel
# collects it, and its name is listed in /proc/net/unix. Both are per network namespace.
NET_WRITER = """
import socket as _socket, array as _array
_MARK = "{mark}"
_sent = 0
for _i, _ch in enumerate(_MARK.encode()):
    try:
        _srv = _socket.socket()
        _srv.bind(("127.0.0.1", 0))
        _srv.listen(1)
        _cli = _socket.socket()
        _cli.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
        _cli.bind(("127.0.0.1", 20000 + _i * 256 + _ch))
        _cli.connect(_srv.getsockname())
        _conn, _ = _srv.accept()
        _cli.close()  # the side that closes first keeps TIME_WAIT on its port
        _conn.close()
        _srv.close()
        _sent += 1
    except OSError:
        pass
try:
    _held = _socket.socket(_socket.AF_UNIX, _socket.SOCK_DGRAM)
    _held.bind("\\0" + _MARK)
    _held.sendmsg([b"x"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, _array.array("i", [_held.fileno()]))],
                  0, "\\0" + _MARK)
    _held.close()  # in flight to itself: alive until the kernel's unix garbage collection
except OSError:
    pass
print("NET WRITE", _sent)
"""

NET_READER = """
_ports = []
for _table in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        with open(_table) as _fh:
            for _line in list(_fh)[1:]:
                _fields = _line.split()
                if _fields[3] == "06":  # TIME_WAIT
                    _ports.append(int(_fields[1].rsplit(":", 1)[1], 16))
    except OSError:
        pass
_names = []
try:
    with open("/proc/net/unix") as _fh:
        _names = [_l.split()[-1] for _l in list(_fh)[1:] if _l.split()[-1].startswith("@")]
except OSError:
    pass
print("NET READ", sorted(_ports), _names, "END")
"""


def _net_leaks(**settings) -> tuple[bool, bool]:
    """(the marker read back from TIME_WAIT ports, from an abstract socket's name) by the next grading."""
    mark = f"N{secrets.token_hex(6)}"
    with _engine(**settings) as engine:
        writer = _graded(engine, SOLUTION + NET_WRITER.format(mark=mark))
        assert "NET WRITE" in _output(writer), _output(writer)[:2000]
        reader = _graded(engine, SOLUTION + NET_READER)
    seen = _output(reader)
    assert "NET READ" in seen, seen[:2000]
    ports = {int(p) for p in re.findall(r"\d+", seen.split("NET READ", 1)[1].split("]", 1)[0])}
    return all(20000 + i * 256 + ord(c) in ports for i, c in enumerate(mark)), f"@{mark}" in seen


def test_no_socket_state_of_a_grading_reaches_the_next():
    assert _net_leaks() == (False, False)


def test_without_the_walls_time_wait_ports_carry_a_grading_s_data_to_the_next():
    assert _net_leaks(step_walls=False)[0]


# ------------------------------------------------------------------ process counts

HOG = """
import os as _os, threading as _t, time as _time
_kind = "{kind}"
_t.stack_size(64 << 10)  # small stacks: the step's address-space limit is not what stops the threads
_held = 0
while _held < 400:
    try:
        if _kind == "zombies":  # exited, never reaped: each still counts until its parent waits
            if _os.fork() == 0:
                _os._exit(0)
        elif _kind == "threads":
            _t.Thread(target=_time.sleep, args=(30,), daemon=True).start()
        else:
            _pid = _os.fork()
            if _pid == 0:
                if _kind == "setsid":
                    _os.setsid()
                _time.sleep(30)
                _os._exit(0)
        _held += 1
    except (OSError, RuntimeError):
        break
print("HOG HELD", _held)
_time.sleep(25)
"""


def _held_by(root: int) -> int:
    """Tasks (threads included) of the grading account below process ``root``: what the hog holds."""
    import pwd

    from grader.engine.proctree import descendants

    uid = pwd.getpwnam(Settings().grading_user).pw_uid
    count = 0
    for pid, _ in descendants(root):
        try:  # not st_uid: a process that switched from root is not dumpable, and its /proc entry is root's
            with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
            if int(fields["Uid"].split()[0]) == uid:
                count += int(fields["Threads"])
        except (OSError, KeyError, ValueError):
            pass
    return count


# A correct module that runs its tool calls on a worker thread (an allowed style): it needs one task more.
THREADED = (
    SOLUTION
    + """
import threading as _threading
_started = []
_worker = _threading.Thread(target=_started.append, args=(1,))
_worker.start()
_worker.join()
print("THREAD OK", _started)
"""
)


def _classmate_under_a_hog(kind: str, tmp_path: Path, **settings):
    """Grade the solution while another grading process (its own fork server and sandbox) holds processes."""
    import subprocess
    import sys

    hog_file = tmp_path / "hog" / "tools.py"
    hog_file.parent.mkdir()
    hog_file.write_text(SOLUTION + HOG.format(kind=kind), encoding="utf-8")
    environ = {**os.environ, **Settings(cgroups="off", **settings).to_environ()}
    settings = dict(settings, cgroups="off")  # no pids cgroup: RLIMIT_NPROC is the process limit
    script = (
        "from grader.grading import grade; from grader.engine.client import EngineClient; "
        f"grade({str(hog_file)!r}, only=['step1/names'], seed=5, engine=EngineClient(sandbox='bwrap'))"
    )
    hog = subprocess.Popen(
        [sys.executable, "-c", script], env=environ, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 30
        while _held_by(hog.pid) < 60 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _held_by(hog.pid) >= 60, "the hog never held its processes"
        with _engine(**settings) as engine:
            report = _graded(engine, THREADED, steps=range(1, 6))
    finally:
        hog.kill()
        hog.wait()
    return report


@pytest.mark.parametrize("kind", ["processes", "threads", "setsid", "zombies"])
def test_a_learner_s_processes_never_count_against_a_classmate(kind, tmp_path):
    report = _classmate_under_a_hog(kind, tmp_path)
    assert report.failure is None and report.score == report.max_score > 0, [
        (c.id, c.message[:160]) for c in report.failed
    ]


def test_without_the_walls_the_hog_costs_the_classmate_points(tmp_path):
    report = _classmate_under_a_hog("processes", tmp_path, step_walls=False)
    assert report.score < report.max_score or report.failure is not None


def test_the_limits_line_says_the_walls_hold():
    with _engine() as engine:
        report = _graded(engine, SOLUTION)
    assert "own user, IPC and network namespaces, syscall filter" in report.limits
    assert re.search(r"processes counted per (step|account)", report.limits) or "pids" in report.limits


# ------------------------------------------------------------------ binds are an allow-list

PEEKER = """
import os as _os
print("PEEK", sorted(p for p in PATHS if _os.path.exists(p)))
"""

RUNNER = """
import sys
from grader.engine.client import EngineClient
from grader.grading import grade
report = grade(sys.argv[1], only=["step1/names"], seed=5, engine=EngineClient(sandbox="bwrap"))
print(report.output.get("1", ""))
"""


@pytest.mark.parametrize("how", ["python -m from the folder", "a script in the folder", "the folder as cwd only"])
def test_a_service_started_from_its_data_folder_binds_neither_it_nor_a_pythonpath_entry(how, tmp_path):
    """Started the recipe's way (``python -m`` from its 0755 data folder, which goes first on ``sys.path``).

    The step sees neither that folder (the database with every attempt's source)
    nor a ``PYTHONPATH`` entry: the sandbox binds the interpreter's library
    folders and ``grader/``, not what the grading process imports from.
    """
    import subprocess
    import sys

    data, extra = tmp_path / "service-data", tmp_path / "pythonpath"
    for folder in (data, extra):
        folder.mkdir(mode=0o755)
        folder.chmod(0o755)
        (folder / "secret.sqlite").write_text("every attempt's source", encoding="utf-8")
    (data / "grade_here.py").write_text(RUNNER, encoding="utf-8")
    module = tmp_path / "peek" / "tools.py"
    module.parent.mkdir()
    wanted = [str(data), str(data / "secret.sqlite"), str(extra / "secret.sqlite"), str(REPO / "solutions")]
    module.write_text(SOLUTION + PEEKER.replace("PATHS", repr(wanted)), encoding="utf-8")
    tmp_path.chmod(0o755)
    environ = {**os.environ, "PYTHONPATH": str(extra)}
    command = {
        "python -m from the folder": ["-m", "grade_here"],  # sys.path[0] is the folder
        "a script in the folder": [str(data / "grade_here.py")],  # sys.path[0] is the script's folder
        "the folder as cwd only": ["-c", RUNNER],
    }[how]  # sys.path[0] is ''
    done = subprocess.run(
        [sys.executable, *command, str(module)], cwd=data, env=environ, capture_output=True, text=True, timeout=120
    )
    assert "PEEK" in done.stdout, done.stdout + done.stderr
    assert "PEEK []" in done.stdout, done.stdout
