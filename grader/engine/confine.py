"""What a step child does to itself before learner code runs, and the step's disk budget.

The step child (see :mod:`grader.engine.step_process`) calls :meth:`StepConfinement.enter`
right after the fork, before it imports the submission:

1. it joins its step's control group (:mod:`grader.engine.cgroups`), if any;
2. it takes the lowest CPU priority (nice 19) with ``RLIMIT_NICE`` 0, so it
   cannot raise it again;
3. where it may (root), it gets a mount namespace of its own in which every
   mount is read-only except its scratch folder: files outside scratch are
   refused (``EROFS``), and so are writes to ``/sys/fs/cgroup`` (its limits)
   and ``/proc/sys``;
4. it drops every capability (bounding set included), switches to the
   grading account where the engine client asked for one
   (``$AGTOOL_STEP_USER``, see :func:`grader.engine.sandbox.require`) and sets
   ``PR_SET_NO_NEW_PRIVS``: learner code can then neither remount, change its
   limits, renice itself below 19, write what the grading account does not
   own, nor regain privileges by exec;
5. in bubblewrap, it enters a user and an IPC namespace of its own
   (:mod:`grader.engine.namespaces`: keyrings, System V IPC and the process
   count are the step's) and loads the syscall filter
   (:mod:`grader.engine.syscall_filter`).

Writes go to the step's scratch folder only (``tempfile`` uses it, and so
``/tmp`` is the scratch folder for a step): the rest is read-only, or, in
bubblewrap, not the grading account's to write. Between gradings the fork
server empties its private ``/tmp`` and ``/dev/shm`` (:func:`sweep_private_tmp`).

The **disk budget** (``Limits.disk_bytes``): where the fork server may mount
(root; it runs in a mount namespace of its own, see :func:`private_mounts`),
each step's scratch folder is a tmpfs of exactly that size, so a write past
it fails with ``ENOSPC``; elsewhere the scratch folder is measured after the
step. Either way a step that reached its budget is reported (``"disk"``) and
loses its points, and the scratch folder goes when the step is over.
``$AGTOOL_STEP_MOUNTS=0`` turns the mounts off (the measure remains).

Example (true everywhere: without root nothing is mounted and the folder is measured)::

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> c = StepConfinement.open(folder, disk_bytes=1 << 20)
    >>> _ = open(os.path.join(folder, "f"), "wb").write(b"x" * 4096)
    >>> c.close()
    ()
    >>> import shutil; shutil.rmtree(folder)
"""

from __future__ import annotations

import ctypes
import os
import resource
import shutil
import stat
import tempfile
from typing import TYPE_CHECKING

from grader.engine import namespaces, syscall_filter
from grader.settings import Settings, current, env_name

if TYPE_CHECKING:
    from grader.engine.cgroups import StepGroup

MOUNTS_ENV = env_name("step_mounts")
LOWEST_PRIORITY = 19

_CLONE_NEWNS = 0x00020000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MS_NOATIME, _MS_NODIRATIME, _MS_RELATIME = 1024, 2048, 1 << 21
_MNT_DETACH = 2
_PR_SET_NO_NEW_PRIVS, _PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 38, 24, 47, 4
_FLAG_WORDS = {
    "ro": _MS_RDONLY,
    "nosuid": _MS_NOSUID,
    "nodev": _MS_NODEV,
    "noexec": _MS_NOEXEC,
    "noatime": _MS_NOATIME,
    "nodiratime": _MS_NODIRATIME,
    "relatime": _MS_RELATIME,
}

try:
    _libc: ctypes.CDLL | None = ctypes.CDLL(None, use_errno=True)
except OSError:  # not Linux: nothing below applies
    _libc = None


def mounts_enabled(settings: Settings | None = None) -> bool:
    """Whether per-step mounts may be used (``$AGTOOL_STEP_MOUNTS`` is not ``0``) and we may mount (root).

    >>> mounts_enabled(Settings(step_mounts=False))
    False
    >>> mounts_enabled(Settings()) == (os.geteuid() == 0 and _libc is not None)
    True
    """
    return _libc is not None and os.geteuid() == 0 and (settings or current()).step_mounts


def _call(name: str, *args: object) -> bool:
    if _libc is None:
        return False
    result: int = getattr(_libc, name)(*args)
    return result == 0


def _bytes(path: str) -> bytes:
    return os.fsencode(path)


def private_mounts(settings: Settings | None = None) -> bool:
    """Give the calling process (the fork server) a mount namespace of its own; True if it has one.

    The steps' scratch mounts then live and die with it, invisible elsewhere.
    Not run as a doctest: it changes the calling process.
    """
    if not mounts_enabled(settings):
        return False
    return _call("unshare", _CLONE_NEWNS) and _call("mount", b"none", b"/", None, _MS_REC | _MS_PRIVATE, None)


_server_private = False
_step_user: tuple[int, int] | None = None


def set_server_private(value: bool) -> None:
    """Record (in the fork server) whether :func:`private_mounts` succeeded: scratch tmpfs mounts need it."""
    global _server_private
    _server_private = value


def set_step_user(text: str) -> tuple[int, int] | None:
    """Record (in the fork server) the ``uid:gid`` its step children switch to (``""``: none); what was recorded.

    >>> set_step_user("999:995"), set_step_user(""), set_step_user("nonsense")
    ((999, 995), None, None)
    """
    global _step_user
    uid, _, gid = text.partition(":")
    _step_user = (int(uid), int(gid)) if uid.isdigit() and gid.isdigit() else None
    return _step_user


def step_user() -> tuple[int, int] | None:
    """The ``(uid, gid)`` step children switch to, or None (what :func:`set_step_user` recorded).

    >>> _ = set_step_user(""); step_user() is None
    True
    """
    return _step_user


class StepConfinement:
    """One step's confinement: its control group, its scratch budget, what the step child does to itself.

    Made by the fork server before the fork (:meth:`open`), entered by the
    step child (:meth:`enter`), closed by the fork server when the step is
    over (:meth:`close`: which limits were hit).
    """

    words = ""  # what holds for the step, as ``agtool-grade check`` names it (set by the fork server)

    def __init__(
        self,
        scratch: str,
        disk_bytes: int,
        group: StepGroup | None = None,
        mounted: bool = False,
        user: tuple[int, int] | None = None,
    ) -> None:
        self.scratch, self.disk_bytes, self.group, self.mounted = scratch, int(disk_bytes), group, mounted
        self.read_only = mounted  # the step child makes the rest read-only only where scratch is its own tmpfs
        self.user = user  # (uid, gid) the step child switches to, or None

    @classmethod
    def open(cls, scratch: str, *, disk_bytes: int, group: StepGroup | None = None) -> StepConfinement:
        """Mount a tmpfs of ``disk_bytes`` on ``scratch`` where the fork server may; never raises."""
        mounted = False
        if _server_private:  # only where mounts_enabled() was true when the fork server started
            options = f"size={int(disk_bytes)},mode=0700,nr_inodes=20000".encode()
            mounted = _call("mount", b"tmpfs", _bytes(scratch), b"tmpfs", _MS_NOSUID | _MS_NODEV, options)
        if _step_user is not None:  # the grading account writes its scratch folder, and nothing else here
            os.chown(scratch, *_step_user)
        return cls(scratch, disk_bytes, group, mounted, _step_user)

    @property
    def pids_bounded(self) -> bool:
        """Whether the step's cgroup bounds its tasks (RLIMIT_NPROC is then not needed).

        >>> StepConfinement("/s", 1).pids_bounded
        False
        """
        return self.group is not None and "pids" in getattr(self.group, "limits", {})

    def describe(self) -> str:
        """The disk words of ``agtool-grade check``'s limits line.

        >>> StepConfinement("/s", 64 << 20, mounted=True).describe()
        'disk 64 MiB/step (scratch tmpfs, the rest read-only)'
        >>> StepConfinement("/s", 64 << 20).describe()
        'disk 64 MiB/step (scratch measured after the step)'
        """
        from grader.engine.cgroups import size_words

        how = "scratch tmpfs, the rest read-only" if self.mounted else "scratch measured after the step"
        return f"disk {size_words(self.disk_bytes)}/step ({how})"

    # -- in the step child

    def enter(self) -> None:
        """In the step child, before any learner code: join the group, lowest priority, read-only, no privileges."""
        if self.group is not None:
            self.group.join()
        lowest_priority()
        tempfile.tempdir = self.scratch  # the fork server's cached /tmp would be read-only
        if self.read_only:
            _read_only_except(self.scratch)
        drop_privileges(self.user)

    # -- in the fork server

    def kill(self) -> int:
        """SIGKILL every process of the step's group (nothing without a group)."""
        return self.group.kill() if self.group is not None else 0

    def next_step(self, keep: int) -> tuple[int, tuple[str, ...]]:
        """(Between two steps of one process.) Kill the group but ``keep``; how many, the limits the step hit.

        Then the scratch folder is emptied for the next step (the step's
        files were read before), so each step has the whole disk budget.
        """
        killed = 0
        hits: list[str] = []
        if self.group is not None:
            killed = self.group.kill_others(keep)
            hits += self.group.next_step()
        if self._disk_over():
            hits.append("disk")
        empty_folder(self.scratch)
        return killed, tuple(hits)

    def _disk_over(self) -> bool:
        """Whether the step reached its disk budget: its tmpfs is full, or its files take more than the budget."""
        try:
            if self.mounted:
                st = os.statvfs(self.scratch)
                used = (st.f_blocks - st.f_bfree) * st.f_frsize
                full = st.f_bavail * st.f_frsize < (256 << 10) or st.f_ffree < 16
                return full or used > self.disk_bytes
            return folder_bytes(self.scratch, self.disk_bytes) > self.disk_bytes
        except OSError:
            return False

    def close(self) -> tuple[str, ...]:
        """Kill what is left, unmount the scratch tmpfs; the limits the step hit (``memory``, ``pids``, ``disk``)."""
        hits = list(self.group.close()) if self.group is not None else []
        if self._disk_over():
            hits.append("disk")
        if self.mounted:
            _call("umount2", _bytes(self.scratch), _MNT_DETACH)
            self.mounted = False
        return tuple(hits)


def empty_folder(folder: str) -> None:
    """Remove everything inside ``folder`` (links are removed, never followed), keep the folder.

    >>> import tempfile; d = tempfile.mkdtemp(); os.mkdir(os.path.join(d, "x")); empty_folder(d); os.listdir(d)
    []
    """
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        except OSError:
            pass


def folder_bytes(folder: str, stop_at: int, max_entries: int = 50_000) -> int:
    """Bytes the files under ``folder`` take (blocks, so sparse files count as written), stopping past ``stop_at``.

    Links are not followed. More than ``max_entries`` entries counts as over.

    >>> import tempfile; d = tempfile.mkdtemp(); folder_bytes(d, 10)
    0
    """
    total, seen, todo = 0, 0, [folder]
    while todo and total <= stop_at:
        try:
            entries = list(os.scandir(todo.pop()))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > max_entries:
                return stop_at + 1
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            total += max(st.st_blocks * 512, 0) if hasattr(st, "st_blocks") else st.st_size
            if stat.S_ISDIR(st.st_mode):
                todo.append(entry.path)
    return total


def lowest_priority() -> None:
    """Nice 19 for the calling process, and an ``RLIMIT_NICE`` of 0: it may not lower its nice value again.

    Not run as a doctest (it would slow the test session down for good).
    """
    try:
        os.setpriority(os.PRIO_PROCESS, 0, LOWEST_PRIORITY)
    except OSError:
        pass
    if hasattr(resource, "RLIMIT_NICE"):
        try:
            resource.setrlimit(resource.RLIMIT_NICE, (0, 0))
        except (OSError, ValueError):
            pass


def _mount_points() -> list[tuple[str, int]]:
    """(mount point, flags to keep) of every mount of this namespace, parents first."""
    found = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                parts = line.split(" - ", 1)[0].split()
                if len(parts) >= 6:
                    point = parts[4]
                    for code in ("\\040", "\\011", "\\012", "\\134"):
                        point = point.replace(code, chr(int(code[1:], 8)))
                    flags = 0
                    for word in parts[5].split(","):
                        flags |= _FLAG_WORDS.get(word, 0)
                    found.append((point, flags))
    except OSError:
        pass
    return found


def _read_only_except(keep: str) -> None:
    """A private mount namespace where every mount but ``keep`` (and what is below it) is read-only."""
    if not (_call("unshare", _CLONE_NEWNS) and _call("mount", b"none", b"/", None, _MS_REC | _MS_PRIVATE, None)):
        raise OSError(ctypes.get_errno(), "the step could not get a mount namespace of its own")
    keep = os.path.realpath(keep)
    for point, flags in _mount_points():
        if point == keep or point.startswith(keep.rstrip("/") + "/"):
            continue
        if point == "/proc" and _walls is not None:
            continue  # the step writes its own namespace's uid_map there first (drop_privileges): then read-only
        if flags & _MS_RDONLY:
            continue
        # Kernels refuse a remount that would drop a lock on nosuid/nodev/noexec: keep them.
        _call("mount", b"none", _bytes(point), None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | flags, None)
    if not os.statvfs("/").f_flag & os.ST_RDONLY:
        raise OSError("the step's file system could not be made read-only")


def _proc_read_only() -> bool:
    """(In the step's own user namespace.) /proc read-only, in a mount namespace that namespace owns.

    The step's other mounts were made read-only before (as root); /proc had to
    stay writable until the namespace's uid_map was written. A mount inherited
    from the parent namespace is locked: read-only may be added, never removed.
    """
    return (
        _call("unshare", _CLONE_NEWNS)
        and _call("mount", b"none", b"/", None, _MS_REC | _MS_PRIVATE, None)
        and _call(
            "mount",
            b"none",
            b"/proc",
            None,
            _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC,
            None,
        )
    )


def drop_privileges(user: tuple[int, int] | None = None) -> None:
    """Drop every capability (bounding and ambient sets included), become ``user``, set ``PR_SET_NO_NEW_PRIVS``.

    ``user`` (uid, gid): the grading account, with no supplementary groups;
    a failed switch raises (learner code never runs as root by accident).
    Without it a root step child stays uid 0 but cannot remount, write files
    it does not own the mode bits of on a read-only mount, raise
    ``RLIMIT_NICE``, or regain capabilities by exec.
    Not run as a doctest: it is for good.
    """
    if _libc is None:
        if user is not None:
            raise OSError("the step cannot switch to the grading account on this system")
        return
    prctl = _libc.prctl
    prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    for cap in range(_CAP_LAST + 1):  # while we may (CAP_SETPCAP): before the switch
        prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
    if user is not None:
        become_user(*user)
    if _walls is not None:
        # Keyrings, System V IPC and the process count become the step's own (grader.engine.namespaces).
        namespaces.enter_own(os.getuid(), os.getgid())
        if _server_private and not _proc_read_only():
            raise OSError(ctypes.get_errno(), "the step could not make /proc read-only in its own namespaces")
        for cap in range(_CAP_LAST + 1):  # a new user namespace hands its first process a full set again
            prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
    header, data = _CapHeader(0x20080522, 0), (_CapData * 2)()  # _LINUX_CAPABILITY_VERSION_3: all zero
    if _libc.capset(ctypes.byref(header), data) != 0 and (os.geteuid() == 0 or _walls is not None):
        raise OSError(ctypes.get_errno(), "the step could not drop its capabilities")
    if _walls is not None:
        syscall_filter.load(_walls)  # last: it refuses unshare, mount... which the steps above used


_walls: syscall_filter.SyscallRules | None = (
    None  # the syscall filter, built by the fork server when its steps get namespaces of their own
)


def set_walls(enabled: bool) -> str:
    """(In the fork server.) Give every step child its own namespaces and the syscall filter; ``""`` or the problem.

    Asked for where the fork server runs in bubblewrap. A problem (no
    libseccomp) is returned for the caller to fail closed on; nothing is then
    set, and no step may run.

    >>> set_walls(False)
    ''
    """
    global _walls
    _walls = None
    if not enabled:
        return ""
    problem = syscall_filter.problem()
    if problem:
        return problem
    _walls = syscall_filter.build()
    return ""


def writes_refused() -> bool:
    """Whether a step may write nothing outside its scratch folder: read-only mounts, or the grading account.

    >>> _ = set_step_user(""); set_server_private(False); writes_refused()
    False
    """
    return _server_private or _step_user is not None


def walls_up() -> bool:
    """Whether step children get their own namespaces and the syscall filter (:func:`set_walls`).

    >>> _ = set_walls(False); walls_up()
    False
    """
    return _walls is not None


def become_user(uid: int, gid: int) -> None:
    """Switch this process for good to ``uid``/``gid`` with no supplementary groups; raise unless it held.

    Not run as a doctest: it is for good.
    """
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
        raise OSError("the step could not switch to the grading account")


def sweep_private_tmp(keep: str | None, tmp: str = "/tmp", shm: str = "/dev/shm") -> None:
    """(A sandboxed fork server, between gradings.) Empty its private ``/tmp`` but ``keep``, ``keep``, ``/dev/shm``.

    What one learner's steps left there (in bubblewrap without root they may
    write ``/tmp``) never reaches the next learner, nor fills their disk.
    Only ever called where ``/tmp`` is the sandbox's own, never the host's.

    >>> import tempfile; t = tempfile.mkdtemp(); k = os.path.join(t, "k"); os.mkdir(k)
    >>> open(os.path.join(t, "left"), "w").close(); open(os.path.join(k, "old"), "w").close()
    >>> sweep_private_tmp(k, tmp=t, shm=os.path.join(t, "none")); os.listdir(t), os.listdir(k)
    (['k'], [])
    """
    try:
        entries = list(os.scandir(tmp))
    except OSError:
        entries = []
    for entry in entries:
        if keep is not None and os.path.realpath(entry.path) == os.path.realpath(keep):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        except OSError:
            pass
    for folder in (keep, shm):
        if folder:
            empty_folder(folder)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _cap_last() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as fh:
            return int(fh.read())
    except (OSError, ValueError):
        return 63


_CAP_LAST = _cap_last()  # read when the fork server imports this module, before any learner code
