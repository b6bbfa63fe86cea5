"""Control groups around a step's whole process tree: memory, pids and CPU for the step as a whole.

Per-process limits (``RLIMIT_AS``...) do not bound a step whose code forks:
four children of 600 MiB each are fine one by one. So, where the kernel
offers cgroups and we may create groups, every step child joins a group of
its own before any learner code runs, and everything it starts (forks,
``setsid()`` grandchildren, threads) stays in it:

* **memory**: the step's tree together holds at most ``Limits.memory_bytes``
  (swap included); past it the kernel's OOM killer ends a process of that
  step only, and :meth:`StepGroup.close` says so (``"memory"``);
* **pids**: at most ``Limits.pids`` tasks (processes and threads) at once;
  a fork past it fails (``"pids"`` when that happened);
* **cpu**: at most ``Limits.cpus`` CPUs of time, and one scheduling entity
  however many processes it starts, so a step that spins in many processes
  takes no more from the steps beside it than one that spins in one.

Layout, the same for cgroup v1 (one tree per controller, as on most older
hosts) and v2 (one tree; controllers enabled through ``cgroup.subtree_control``)::

    <this process's group>/agtool-<client pid>-<n>/        ServerGroup: made by the engine client
    <this process's group>/agtool-<client pid>-<n>/s<k>/   StepGroup: made by the fork server per step

The engine client makes the server group *outside* any sandbox (inside
bubblewrap ``/sys/fs/cgroup`` is read-only; :meth:`ServerGroup.bind_args`
binds just that subtree writable) and removes it when its fork server
stops. Learner code cannot change its limits or leave its group: the step
child joins before it drops its capabilities and makes the file system
read-only for itself (:mod:`grader.engine.confine`). ``$AGTOOL_CGROUPS=0``
turns all of this off (the rlimits still hold). Nothing here raises when
cgroups are missing: :meth:`ServerGroup.create` returns ``None``.

Example (true with or without cgroups)::

    >>> group = ServerGroup.create()
    >>> group is None or group.version in (1, 2)
    True
    >>> group is None or group.remove() is None
    True
"""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from grader.settings import Settings, current, env_name

if TYPE_CHECKING:
    from grader.engine.protocol import Limits

CGROUPS_ENV = env_name("cgroups")  # "0": never use cgroups; "memory,pids": only those controllers
SERVER_GROUP_ENV = env_name("server_cgroup")  # how the engine client tells the fork server its group
CONTROLLERS = ("memory", "pids", "cpu")
CPU_PERIOD_US = 100_000
PREFIX = "agtool-"

_serial = iter(range(1, 1 << 30))


def wanted(settings: Settings | None = None) -> tuple[str, ...]:
    """The controllers to use: all of ``CONTROLLERS``, or those ``$AGTOOL_CGROUPS`` lists.

    >>> wanted(Settings(cgroups="pids,memory"))
    ('memory', 'pids')
    >>> wanted(Settings()) == CONTROLLERS
    True
    """
    listed = (settings or current()).cgroup_controllers & set(CONTROLLERS)
    return tuple(c for c in CONTROLLERS if c in listed) if listed else CONTROLLERS


def missing(group: ServerGroup | None, settings: Settings | None = None) -> tuple[str, ...]:
    """The controllers ``$AGTOOL_CGROUPS`` names explicitly that ``group`` lacks (none asked for: none).

    The engine client refuses to grade without them (fail closed): an
    instructor who listed ``memory`` relies on it.

    >>> missing(None, Settings(cgroups="memory,pids")), missing(None, Settings())
    (('memory', 'pids'), ())
    """
    settings = settings or current()
    if not settings.cgroups_enabled or not settings.cgroup_controllers:
        return ()
    have = set(group.dirs) if group is not None else set()
    return tuple(c for c in wanted(settings) if c not in have)


def enabled(settings: Settings | None = None) -> bool:
    """Whether cgroups may be used at all (``$AGTOOL_CGROUPS`` is not ``0``/``no``/``off``).

    >>> enabled(Settings(cgroups="0")), enabled(Settings())
    (False, True)
    """
    return (settings or current()).cgroups_enabled


def _unescape(path: str) -> str:
    # /proc/self/mountinfo writes space, tab, newline and backslash as octal escapes.
    for code in ("\\040", "\\011", "\\012", "\\134"):
        path = path.replace(code, chr(int(code[1:], 8)))
    return path


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, fs type, super options) of every cgroup file system this process sees."""
    found = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                parts, rest = left.split(), right.split()
                if len(parts) >= 5 and len(rest) >= 3 and rest[0] in ("cgroup", "cgroup2"):
                    found.append((_unescape(parts[4]), rest[0], set(rest[2].split(","))))
    except OSError:
        pass
    return found


def _own_paths() -> dict[str, str]:
    """This process's group per v1 controller, and ``""`` for the v2 tree, from ``/proc/self/cgroup``."""
    own: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                _, names, path = line.rstrip("\n").split(":", 2)
                for name in names.split(",") if names else [""]:
                    own[name] = path
    except (OSError, ValueError):
        pass
    return own


def _write(path: str, value: str) -> bool:
    try:
        with open(path, "w") as fh:
            fh.write(value)
        return True
    except OSError:
        return False


def _read(path: str) -> str:
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return ""


def _event_count(text: str, key: str) -> int:
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


@dataclass
class ServerGroup:
    """The group one fork server's steps live under: a folder per controller (v1) or one folder (v2).

    ``dirs`` maps a controller (``memory``, ``pids``, ``cpu``) to the folder
    where its step groups are made; with v2 every controller has the same one.
    """

    version: int
    dirs: dict[str, str] = field(default_factory=dict)
    # Step groups of ended steps, empty and within their limits, kept to be used again (no mkdir, no rmdir).
    free: list[StepGroup] = field(default_factory=list, repr=False, compare=False)

    @classmethod
    def create(cls, settings: Settings | None = None) -> ServerGroup | None:
        """Make a new server group below this process's own groups; ``None`` where that is not possible.

        Prefers v1 controllers (where they are mounted: a v2 tree beside
        them has none); else the v2 tree, where this process's group must
        be delegated to us (writable, controllers enabled or enableable).
        Also removes empty groups left by engine clients that are gone.
        """
        settings = settings or current()
        if not enabled(settings):
            return None
        name = f"{PREFIX}{os.getpid()}-{next(_serial)}"
        own = _own_paths()
        v1 = {}
        for mount, kind, options in _mounts():
            if kind == "cgroup":
                for controller in wanted(settings):
                    if controller in options and controller not in v1 and controller in own:
                        v1[controller] = os.path.join(mount, own[controller].lstrip("/"))
        made: dict[str, str] = {}
        if v1:
            for controller, base in v1.items():
                _sweep(base)
                folder = os.path.join(base, name)
                try:
                    os.mkdir(folder)
                except OSError:
                    continue
                made[controller] = folder
            return cls(1, made) if made else None
        for mount, kind, _ in _mounts():
            if kind == "cgroup2" and "" in own:
                base = os.path.join(mount, own[""].lstrip("/"))
                available = set(_read(os.path.join(base, "cgroup.controllers")).split())
                wanted_here = [c for c in wanted(settings) if c in available]
                enabled_here = set(_read(os.path.join(base, "cgroup.subtree_control")).split())
                for controller in wanted_here:
                    if controller not in enabled_here:  # fails where our own group holds processes
                        _write(os.path.join(base, "cgroup.subtree_control"), f"+{controller}")
                enabled_here = set(_read(os.path.join(base, "cgroup.subtree_control")).split())
                usable = [c for c in wanted_here if c in enabled_here]
                if not usable:
                    continue
                _sweep(base)
                folder = os.path.join(base, name)
                try:
                    os.mkdir(folder)
                except OSError:
                    continue
                _write(os.path.join(folder, "cgroup.subtree_control"), " ".join(f"+{c}" for c in usable))
                on = set(_read(os.path.join(folder, "cgroup.subtree_control")).split())
                made = {c: folder for c in usable if c in on}
                if made:
                    return cls(2, made)
                _rmdir(folder)
        return None

    def to_env(self) -> str:
        """The group as the fork server's environment carries it (see :meth:`from_env`).

        >>> ServerGroup.from_env(ServerGroup(1, {"pids": "/x"}).to_env())
        ServerGroup(version=1, dirs={'pids': '/x'})
        """
        return json.dumps({"version": self.version, "dirs": self.dirs})

    @classmethod
    def from_env(cls, text: str | None, settings: Settings | None = None) -> ServerGroup | None:
        """The group ``text`` (``$AGTOOL_SERVER_CGROUP``) names, or ``None`` for none or nonsense.

        >>> ServerGroup.from_env(None), ServerGroup.from_env("not json")
        (None, None)
        """
        try:
            data = json.loads(text or "")
            dirs = {str(k): str(v) for k, v in data["dirs"].items() if k in CONTROLLERS}
            return cls(int(data["version"]), dirs) if dirs and enabled(settings) else None
        except (ValueError, TypeError, KeyError, AttributeError):
            return None

    def folders(self) -> list[str]:
        """Each distinct folder of the group (one with v2).

        >>> ServerGroup(2, {"memory": "/g", "pids": "/g"}).folders()
        ['/g']
        """
        return list(dict.fromkeys(self.dirs.values()))

    def bind_args(self) -> list[str]:
        """bubblewrap arguments that make just this group's folders writable inside the sandbox.

        >>> ServerGroup(1, {"pids": "/sys/fs/cgroup/pids/agtool-1-1"}).bind_args()
        ['--bind', '/sys/fs/cgroup/pids/agtool-1-1', '/sys/fs/cgroup/pids/agtool-1-1']
        """
        args = []
        for folder in self.folders():
            args += ["--bind", folder, folder]
        return args

    def join_shared(self) -> bool:
        """(The fork server, at its start.) Join the group's v1 ``cpu`` folder itself; True if it did.

        With v1 the CPU is shared per fork server, not per step: its steps
        inherit the group when forked, so no step pays a migration for it
        (a v1 migration waits for the kernel's RCU), and the steps' processes
        together are one scheduling entity, however many a step starts. With
        v2 (no process may sit beside subgroups) each step has its own.
        """
        folder = self.dirs.get("cpu") if self.version == 1 else None
        self.shared_cpu = bool(folder and _write(os.path.join(folder, "cgroup.procs"), "0"))
        return self.shared_cpu

    shared_cpu = False

    def step(self, name: str, limits: Limits) -> StepGroup | None:
        """A step group with ``limits`` (a ``Limits``): one an ended step left, else a new one named ``name``.

        ``None`` if none could be made.
        """
        while self.free:
            group = self.free.pop()
            if group.reuse(limits):
                return group
        return StepGroup.create(self, name, limits)

    def release(self) -> None:
        """(The fork server, on its way out.) Remove its step groups, leave its cpu group, remove the group.

        Its engine client may end without removing them (a batch worker
        leaves by ``os._exit``). Inside bubblewrap the group's folders are
        mount points and stay (the client, or the next client's sweep,
        removes them). Never raises.
        """
        try:
            for folder in self.folders():
                try:
                    steps = [e.path for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
                except OSError:
                    steps = []
                for step in steps:
                    _kill_all(step)
                    _rmdir(step, attempts=1)
            if self.shared_cpu:
                _write(os.path.join(os.path.dirname(self.dirs["cpu"]), "cgroup.procs"), "0")
            for folder in self.folders():
                _rmdir(folder, attempts=1)
        except Exception:
            pass

    def remove(self) -> None:
        """Kill whatever is still in the group and its step groups, then remove them (never raises)."""
        for folder in self.folders():
            _remove_tree(folder)


def _rmdir(folder: str, attempts: int = 20) -> bool:
    for attempt in range(attempts):
        try:
            os.rmdir(folder)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if attempt < attempts - 1:
                time.sleep(0.005)
    return False


def _pids(folder: str) -> list[int]:
    return [int(p) for p in _read(os.path.join(folder, "cgroup.procs")).split() if p.isdigit()]


def _kill_all(folder: str, rounds: int = 100, *, keep: int | None = None) -> int:
    """SIGKILL every process in ``folder``'s group until it is empty (or only zombies are left).

    With ``keep``, every process but that one (and never ``cgroup.kill``, which would take it too).
    """
    killed = 0
    if keep is None and _write(os.path.join(folder, "cgroup.kill"), "1"):  # v2, Linux 5.14+: at once, forks included
        rounds = min(rounds, 20)
    for _ in range(rounds):
        alive = [p for p in _pids(folder) if p != keep and _alive(p)]
        if not alive:
            break
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.001)
    return killed


def _alive(pid: int) -> bool:
    text = _read(f"/proc/{pid}/stat")
    return bool(text) and text.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def _remove_tree(folder: str) -> None:
    try:
        children = [e.path for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
    except OSError:
        children = []
    for child in children:
        _remove_tree(child)
    _kill_all(folder)
    _rmdir(folder)


def _sweep(base: str) -> None:
    """Remove ``agtool-<pid>-<n>`` groups whose engine client is gone and that hold no process."""
    try:
        entries = [e for e in os.scandir(base) if e.name.startswith(PREFIX) and e.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for entry in entries:
        owner = entry.name[len(PREFIX) :].split("-", 1)[0]
        if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
            try:
                steps = [e.path for e in os.scandir(entry.path) if e.is_dir(follow_symlinks=False)]
            except OSError:
                continue
            if not any(_pids(s) for s in steps) and not _pids(entry.path):
                for step in steps:
                    _rmdir(step)
                _rmdir(entry.path)


@dataclass
class StepGroup:
    """One step's group: made (with its limits) by the fork server, joined by the step child.

    ``dirs`` maps each controller to the step's folder; ``limits`` says what
    was written (``memory``, ``pids``, ``cpu`` for what holds).
    """

    version: int
    dirs: dict[str, str]
    limits: dict[str, int | float | str] = field(default_factory=dict)
    server: ServerGroup | None = field(default=None, repr=False, compare=False)
    applied: tuple[Any, ...] = field(default=(), repr=False, compare=False)
    baseline: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    POOL = 16  # step groups a fork server keeps for reuse

    @classmethod
    def create(cls, server: ServerGroup, name: str, limits: Limits) -> StepGroup | None:
        dirs: dict[str, str] = {}
        for controller, parent in server.dirs.items():
            if controller == "cpu" and server.shared_cpu:  # the fork server's group holds its steps' CPU
                continue
            folder = os.path.join(parent, name)
            if folder in dirs.values():  # v2: one folder for every controller
                dirs[controller] = folder
                continue
            try:
                os.mkdir(folder)
            except FileExistsError:  # left by an earlier step of that name: empty it first
                _kill_all(folder)
            except OSError:
                continue
            dirs[controller] = folder
        if not dirs:
            return None
        group = cls(server.version, dirs, server=server)
        group._apply(limits)
        if server.shared_cpu:
            group.limits["cpu"] = "shared"
        group.baseline = group._counts()
        return group

    def reuse(self, limits: Limits) -> bool:
        """Make this ended step's group ready for a new step with ``limits``; False if it cannot be."""
        if any(_pids(folder) for folder in dict.fromkeys(self.dirs.values())):
            return False
        if self.applied != _key(limits):
            self.limits = {}
            self._apply(limits)
            if self.server is not None and self.server.shared_cpu:
                self.limits["cpu"] = "shared"
        self.baseline = self._counts()
        return True

    def _counts(self) -> dict[str, int]:
        counts = {}
        memory, pids = self.dirs.get("memory"), self.dirs.get("pids")
        if memory:
            events = _read(os.path.join(memory, "memory.oom_control" if self.version == 1 else "memory.events"))
            counts["memory"] = _event_count(events, "oom_kill")
        if pids:
            counts["pids"] = _event_count(_read(os.path.join(pids, "pids.events")), "max")
        return counts

    def _apply(self, limits: Limits) -> None:
        self.applied = _key(limits)
        memory, pids = int(limits.memory_bytes), int(limits.pids)
        quota = max(int(float(limits.cpus) * CPU_PERIOD_US), 1000)
        settings: dict[str, list[tuple[str, int | str]]]
        if self.version == 1:
            settings = {
                "memory": [("memory.limit_in_bytes", memory), ("memory.memsw.limit_in_bytes", memory)],
                "pids": [("pids.max", pids)],
                "cpu": [("cpu.cfs_period_us", CPU_PERIOD_US), ("cpu.cfs_quota_us", quota)],
            }
        else:
            settings = {
                "memory": [("memory.max", memory), ("memory.swap.max", 0)],
                "pids": [("pids.max", pids)],
                "cpu": [("cpu.max", f"{quota} {CPU_PERIOD_US}")],
            }
        for controller, folder in self.dirs.items():
            first = settings[controller][0]
            if _write(os.path.join(folder, first[0]), str(first[1])):
                self.limits[controller] = {"memory": memory, "pids": pids, "cpu": float(limits.cpus)}[controller]
                for file, value in settings[controller][1:]:  # swap accounting may be off: optional
                    _write(os.path.join(folder, file), str(value))

    def join(self) -> None:
        """Move the calling process into the group (the step child, before any learner code)."""
        for folder in dict.fromkeys(self.dirs.values()):
            _write(os.path.join(folder, "cgroup.procs"), "0")

    def kill(self) -> int:
        """SIGKILL every process of the step, those that left its process group by ``setsid()`` included; return how many."""
        return sum(_kill_all(folder) for folder in dict.fromkeys(self.dirs.values()))

    def kill_others(self, keep: int) -> int:
        """SIGKILL every process of the group but ``keep`` (a chained step's process between steps)."""
        return sum(_kill_all(folder, 20, keep=keep) for folder in dict.fromkeys(self.dirs.values()))

    def next_step(self) -> tuple[str, ...]:
        """The limits hit since the step began (see :meth:`hits`); count the next step's from now."""
        now = self._counts()
        hit, self.baseline = self._hits_in(now), now
        return hit

    def hits(self) -> tuple[str, ...]:
        """The limits the step ran into: ``"memory"`` (a process was OOM-killed), ``"pids"`` (a fork was refused)."""
        return self._hits_in(self._counts())

    def _hits_in(self, now: dict[str, int]) -> tuple[str, ...]:
        return tuple(name for name in ("memory", "pids") if now.get(name, 0) > self.baseline.get(name, 0))

    def close(self) -> tuple[str, ...]:
        """Kill what is left, say which limits were hit; keep the group for the next step or remove it.

        Never raises. A group is kept (at most ``POOL`` per fork server) when
        it is empty and its step hit no limit.
        """
        try:
            self.kill()
            hit = self.hits()
            server = self.server
            if (
                not hit
                and server is not None
                and len(server.free) < self.POOL
                and not any(_pids(folder) for folder in dict.fromkeys(self.dirs.values()))
            ):
                server.free.append(self)
            else:
                for folder in dict.fromkeys(self.dirs.values()):
                    _rmdir(folder)
            return hit
        except Exception:
            return ()


def _key(limits: Limits) -> tuple[Any, ...]:
    return (int(limits.memory_bytes), int(limits.pids), float(limits.cpus))


def describe(version: int, limits: dict[str, int | float | str]) -> str:
    """The words for what a step group holds, as ``agtool-grade check`` prints them.

    >>> describe(1, {"memory": 1 << 30, "pids": 256, "cpu": 1.0})
    'cgroup v1 memory 1 GiB/step, pids 256/step, cpu 1 CPU/step'
    >>> describe(2, {})
    ''
    """
    parts = []
    if "memory" in limits:
        parts.append(f"memory {size_words(int(limits['memory']))}/step")
    if "pids" in limits:
        parts.append(f"pids {limits['pids']}/step")
    if "cpu" in limits:
        cpu = limits["cpu"]
        parts.append(
            "cpu one fair share per grader, however many processes"
            if cpu == "shared"
            else f"cpu {float(cpu):g} CPU/step"
        )
    return f"cgroup v{version} " + ", ".join(parts) if parts else ""


def size_words(n: int) -> str:
    """``n`` bytes in the largest binary unit that divides it well.

    >>> size_words(1 << 30), size_words(64 << 20), size_words(1500)
    ('1 GiB', '64 MiB', '1500 B')
    """
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << (shift - 4)) == 0:
            return f"{n / (1 << shift):g} {unit}"
    return f"{n} B"
