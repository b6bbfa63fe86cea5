"""A user, an IPC and a network namespace of a step child's own: what the kernel keeps per account stays per step.

The sandbox (bubblewrap) gives the fork server a PID, network, IPC and mount
namespace, but every step child of every fork server runs as the one grading
account. What the kernel keeps per account or per IPC namespace would then be
shared by every learner graded on the machine, and outlive each of them:

- the account's **keyrings** (``add_key``/``keyctl``): one grading's inputs,
  stored there, read by a later grading of the same learner or a classmate;
- **System V IPC** (``shmget``...): segments that survive the step, filling the
  host's memory while classmates are graded;
- the **process count** that ``RLIMIT_NPROC`` checks: without a pids cgroup,
  one learner's sleeping processes counted against a classmate's limit;
- the **network namespace** bubblewrap makes once per fork server: a closed
  loopback connection stays in ``/proc/net/tcp`` (TIME_WAIT) for 60 s with no
  process behind it, and its port numbers carried bytes from one grading to
  the next; abstract unix sockets and ``/proc/net/unix`` are per namespace too.

:func:`enter_own` (in the step child, already the grading account, before any
learner code) unshares a new user namespace that maps only its own uid and
gid, and a new IPC and network namespace owned by it (no interface but a
loopback that stays down: no socket reaches anything). Keyrings, IPC objects
and sockets are then the step's (gone when its processes are), and on Linux 5.14+ ``RLIMIT_NPROC``
counts the step's own processes only (the kernel keeps the count per user
namespace; :func:`counts_processes_per_namespace`). The capabilities a new
user namespace grants its first process are dropped again right after
(:func:`grader.engine.confine.drop_privileges`), and the syscall filter
(:mod:`grader.engine.syscall_filter`) refuses making another namespace.

Example (true on a Linux that allows user namespaces: in a child process of
its own, since unsharing is for good)::

    >>> import os
    >>> pid = os.fork()  # doctest: +SKIP
    >>> if pid == 0:  # doctest: +SKIP
    ...     os._exit(0 if enter_own(os.getuid(), os.getgid()) is None else 1)
    >>> os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])  # doctest: +SKIP
    0
    >>> counts_processes_per_namespace("6.1.0")
    True
"""

from __future__ import annotations

import ctypes
import os
import platform

CLONE_NEWUSER = 0x10000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWNET = 0x40000000
# What enter_own unshares (and what the bubblewrap probe of grader.engine.sandbox tries).
OWN_NAMESPACES = CLONE_NEWUSER | CLONE_NEWIPC | CLONE_NEWNET
_PR_SET_DUMPABLE = 4

try:
    _libc: ctypes.CDLL | None = ctypes.CDLL(None, use_errno=True)
except OSError:  # not Linux
    _libc = None


def enter_own(uid: int, gid: int) -> None:
    """Move the calling (single-threaded) process into new user, IPC and network namespaces mapping ``uid``/``gid`` only.

    Raises :class:`OSError` when the kernel refuses: the caller fails closed
    (the step is the grader's failure, never run without the layer).
    Not run as a doctest here: it is for good (see the module's example).
    """
    if _libc is None or _libc.unshare(OWN_NAMESPACES) != 0:
        errno = ctypes.get_errno() if _libc is not None else 0
        raise OSError(errno, f"the step could not make its own user, IPC and network namespaces ({os.strerror(errno)})")
    # Inside, the same ids as outside: files the grading account owns stay its own, nothing else maps.
    # setgroups must be denied before an unprivileged gid_map is accepted. A process that switched
    # from root is not dumpable, which makes its /proc files root's: dumpable for the writes only.
    _libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
    try:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            fd = os.open(f"/proc/self/{name}", os.O_WRONLY)
            try:
                os.write(fd, text.encode())
            finally:
                os.close(fd)
    finally:
        _libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    if os.getuid() != uid or os.getgid() != gid:
        raise OSError("the step's own user namespace does not map the grading account")


def counts_processes_per_namespace(release: str | None = None) -> bool:
    """Whether ``RLIMIT_NPROC`` counts per user namespace here (Linux 5.14 and later).

    >>> counts_processes_per_namespace("6.1.0-13-amd64"), counts_processes_per_namespace("5.10.0")
    (True, False)
    """
    release = platform.release() if release is None else release
    parts = []
    for piece in release.split(".")[:2]:
        digits = "".join(c for c in piece if c.isdigit()) if piece[:1].isdigit() else ""
        parts.append(int(digits) if digits else 0)
    return tuple(parts) >= (5, 14)


def own_process_count_words(own: bool, release: str | None = None) -> str:
    """How the limits line names what the step's process limit counts.

    >>> own_process_count_words(True, "6.1.0")
    'processes counted per step (own user namespace)'
    >>> own_process_count_words(True, "5.10.0")
    "processes counted per account (Linux 5.10.0 < 5.14: the grading account's, across sandboxes)"
    """
    if own and counts_processes_per_namespace(release):
        return "processes counted per step (own user namespace)"
    release = platform.release() if release is None else release
    return (
        f"processes counted per account (Linux {release} < 5.14: the grading account's, across sandboxes)"
        if own
        else "processes counted per account"
    )
