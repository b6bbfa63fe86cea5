"""The process tree of a grading process: find, kill and reap every descendant.

A learner's step may fork, and a grandchild may call ``setsid()`` to leave
the step's process group, so a group kill alone does not end everything. The
fork server makes itself a child subreaper (orphans of its steps become its
children) and, after every step, walks ``/proc`` down from itself and
SIGKILLs whatever is left. A step child (and a batch worker) asks the kernel
to kill it when its parent goes away.

Example (in a process of its own: both calls act on the calling process and
everything it started, so they are not run as doctests)::

    >>> become_subreaper()                                    # doctest: +SKIP
    >>> kill_descendants()   # nothing was started, nothing is killed   # doctest: +SKIP
    0
"""

from __future__ import annotations

import ctypes
import os
import signal
import time


def die_with_parent() -> None:
    """Have the kernel SIGKILL this process when its parent ends (Linux; elsewhere nothing).

    Example (not run as a doctest: it would tie the test session to the
    thread that started it)::

        >>> die_with_parent()  # doctest: +SKIP
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the parent's timeouts still hold
        pass


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)  # the step child is its group's leader (setsid)
    except (ProcessLookupError, PermissionError):
        pass


def kill_descendants(root: int | None = None, rounds: int = 50) -> int:
    """SIGKILL every living descendant of ``root`` (default: this process) and reap them.

    Repeats until a scan of ``/proc`` finds none, because a process can fork
    between a scan and its kill. Returns how many processes were killed.
    """
    root = os.getpid() if root is None else root
    killed = 0
    for _ in range(rounds):
        alive = [pid for pid, state in descendants(root) if state != "Z"]
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        reap_zombies()
        if not alive:
            break
        time.sleep(0.001)
    return killed


def descendants(root: int) -> list[tuple[int, str]]:
    """(pid, state) of every descendant of ``root``, from ``/proc/<pid>/task/<tid>/children``.

    Walking down from ``root`` reads a few small files; scanning all of
    ``/proc`` costs milliseconds. Falls back to the scan where the kernel
    does not offer ``children``.
    """
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        children = _children_of(pid)
        if children is None:
            return _descendants_by_scan(root)
        for child in children:
            found.append((child, _state_of(child)))
            todo.append(child)
    return found


def _children_of(pid: int) -> list[int] | None:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []  # it is gone
    children: list[int] = []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                children += [int(c) for c in fh.read().split()]
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue  # that thread just ended
            return None  # the kernel has no children files
        except OSError:
            continue
    return children


def _state_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().decode("ascii", "replace").rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"  # gone: nothing left to kill


def _descendants_by_scan(root: int) -> list[tuple[int, str]]:
    children: dict[int, list[tuple[int, str]]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read().decode("ascii", "replace")
        except OSError:
            continue
        rest = stat.rsplit(")", 1)[1].split()  # the command name may hold spaces and ')'
        children.setdefault(int(rest[1]), []).append((int(name), rest[0]))
    found, todo = [], [root]
    while todo:
        for pid, state in children.get(todo.pop(), ()):
            found.append((pid, state))
            todo.append(pid)
    return found


def reap_zombies() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def become_subreaper() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans of our children become ours
        # No PR_SET_PDEATHSIG here: it fires when the client *thread* that
        # started us ends (a thread pool, a widget callback). We stop when
        # our stdin closes instead, which happens when the client dies.
    except (OSError, AttributeError):
        pass
