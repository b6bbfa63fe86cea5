"""Bubblewrap around the fork server: own PID namespace, no network, an allow-listed file system.

:class:`grader.engine.client.EngineClient` starts the fork server behind
:func:`bwrap_prefix` when the isolation :func:`require` settles on says so
(``sandbox="bwrap"``, or ``"auto"`` where bubblewrap works; ``$AGTOOL_SANDBOX``).
A sandbox asked for by name that is not usable stops grading
(:class:`IsolationUnavailable`, naming the problem and the fix): it never
falls back to running learner code without one.

Example::

    >>> bwrap_prefix()[:3]
    ['bwrap', '--die-with-parent', '--new-session']
    >>> require("none").sandbox
    'none'
    >>> bwrap_usable()  # where bubblewrap is installed and user namespaces are allowed
    True
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from dataclasses import dataclass

from grader.engine.namespaces import OWN_NAMESPACES
from grader.settings import Settings, current, env_name

SANDBOXES = ("none", "bwrap", "auto")  # "bwrap" fails closed where unusable, "auto" says what it chose
SANDBOX_ENV = env_name("sandbox")
SANDBOX_TMP_BYTES = 256 << 20
# The grader's subpackages a step child never needs (judging, batches, the
# service, the course): hidden under empty folders inside the sandbox.
HIDDEN_SUBPACKAGES = ("checks", "batch", "service", "course", "outputs")
# Of /etc, only what the dynamic loader and the clock read: no accounts, no hosts, no keys.
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime")
SYSTEM_DIRS = ("/usr", "/bin", "/lib", "/lib32", "/lib64", "/libx32", "/sbin")
SANDBOX_MADE = ("/tmp", "/dev", "/proc")  # made by bubblewrap itself, never bound from here
GRADING_USER_FIX = (
    "create it once, as root: useradd --system --no-create-home --shell /usr/sbin/nologin --user-group {user}"
)


class IsolationUnavailable(RuntimeError):
    """The isolation asked for is not available here: grading must stop (the message says how to fix it)."""


@dataclass(frozen=True)
class Isolation:
    """The isolation learner code runs under: the sandbox in force and the account it runs as.

    ``uid``/``gid`` are the account the step children switch to (``-1``: they
    stay this process's). Every report carries :meth:`words`.

    >>> Isolation("bwrap", "agtool-sandbox", 999, 995).words()
    'bwrap (allow-listed files, no network, own PID namespace), user agtool-sandbox'
    >>> Isolation("none", "root").secure
    False
    """

    sandbox: str
    user: str
    uid: int = -1
    gid: int = -1

    @property
    def switches_user(self) -> bool:
        return self.uid >= 0

    @property
    def secure(self) -> bool:
        """A sandbox is in force and learner code does not run as root."""
        return self.sandbox == "bwrap" and self.user != "root"

    def words(self) -> str:
        """How a report names the isolation (``none``: learner code can read what its user can)."""
        if self.sandbox == "bwrap":
            return f"bwrap (allow-listed files, no network, own PID namespace), user {self.user}"
        return f"none (learner code runs as {self.user}, sees every file that account can read)"

    def step_user(self) -> str:
        """The fork server's ``$AGTOOL_STEP_USER``: ``uid:gid``, or ``""`` to stay.

        >>> Isolation("bwrap", "u", 5, 6).step_user(), Isolation("none", "root").step_user()
        ('5:6', '')
        """
        return f"{self.uid}:{self.gid}" if self.switches_user else ""


def require(sandbox: str, settings: Settings | None = None) -> Isolation:
    """The isolation ``sandbox`` (``none``, ``bwrap``, ``auto``) gives here; raise if it cannot be had.

    ``bwrap`` needs bubblewrap to work and, when this process is root, the
    grading account (``settings.grading_user``) to exist: learner code then
    runs as it. ``auto`` takes bubblewrap where it works (as the grading
    account where it exists, else as root, and says so), else none. The
    grading service calls this at start-up; every engine client does
    before it starts a fork server.

    >>> require("none").sandbox
    'none'
    >>> require("nonsense")
    Traceback (most recent call last):
    ...
    ValueError: sandbox must be one of none, bwrap, auto, not 'nonsense'
    """
    if sandbox not in SANDBOXES:
        raise ValueError(f"sandbox must be one of {', '.join(SANDBOXES)}, not {sandbox!r}")
    settings = settings or current()
    if sandbox == "none":
        return Isolation("none", _account_name(os.geteuid()))
    problem = bwrap_problem()
    if problem:
        if sandbox == "auto":
            return Isolation("none", _account_name(os.geteuid()))
        raise IsolationUnavailable(
            f"--sandbox bwrap was asked for, but {problem}. Install bubblewrap (apt-get install bubblewrap), "
            "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu also "
            "kernel.apparmor_restrict_unprivileged_userns=0), or grade without a sandbox by saying so: --sandbox none"
        )
    if os.geteuid() != 0:
        return Isolation("bwrap", _account_name(os.geteuid()))  # the two-account setup: SECURITY.md
    try:
        return Isolation("bwrap", *grading_account(settings.grading_user))
    except IsolationUnavailable:
        if sandbox == "auto":
            return Isolation("bwrap", "root")
        raise


def limits_in_force(isolation: Isolation, settings: Settings | None = None) -> str:
    """What bounds a step's memory and processes on this machine, in words (the service logs it at start).

    Probed by making (and removing) the cgroup a fork server would get: a
    host that delegates none (a systemd service without ``Delegate=yes``)
    falls back to resource limits, and this says so, and whether the process
    limit is the step's own (its own user namespace, in bubblewrap, on Linux
    5.14+) or the grading account's across every sandbox.

    >>> "processes" in limits_in_force(Isolation("none", "root"), Settings(cgroups="off"))
    True
    """
    from grader.engine import cgroups, namespaces

    group = cgroups.ServerGroup.create(settings or current())
    try:
        controllers = sorted(group.dirs) if group is not None else []
        version = group.version if group is not None else 0
    finally:
        if group is not None:
            group.remove()
    words = [
        f"cgroup v{version} {', '.join(controllers)}"
        if controllers
        else "no cgroups (none delegated to this process: run as root, or give the service Delegate=yes)"
    ]
    if "memory" not in controllers:
        words.append("memory by RLIMIT_AS per step")
    if "pids" not in controllers:
        words.append(namespaces.own_process_count_words(isolation.sandbox == "bwrap"))
    return "; ".join(words)


def grading_account(name: str) -> tuple[str, int, int]:
    """(name, uid, gid) of the grading account ``name``; raise if it is missing or is root.

    >>> grading_account("root")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    grader.engine.sandbox.IsolationUnavailable: the grading account 'root' is root: learner code must not run as root...
    """
    try:
        entry = pwd.getpwnam(name) if name else None
    except KeyError:
        entry = None
    if entry is None:
        raise IsolationUnavailable(
            f"the grading account {name!r} (${env_name('grading_user')}) does not exist, and learner code must "
            f"not run as root: {GRADING_USER_FIX.format(user=name or 'agtool-sandbox')}"
        )
    if entry.pw_uid == 0:
        raise IsolationUnavailable(
            f"the grading account {name!r} is root: learner code must not run as root; "
            f"set ${env_name('grading_user')} to an unprivileged account"
        )
    return entry.pw_name, entry.pw_uid, entry.pw_gid


def _account_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def importable_paths() -> list[str]:
    """This process's absolute import paths (never ``''``, the working folder).

    The fork server gets them on its ``sys.path`` (it runs with ``-I``), and
    bubblewrap binds them in, read-only.

    Example::

        >>> "" in importable_paths()
        False
    """
    return [p for p in sys.path if p and os.path.isabs(p) and os.path.exists(p)]


# The folder that holds the ``grader`` package: site-packages for an install,
# the project checkout for an editable install or a run from the source tree.
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def is_checkout(root: str = PACKAGE_ROOT) -> bool:
    """Whether ``root`` is a project checkout (it then holds ``solutions/``, tests...), not site-packages.

    >>> is_checkout("/usr/lib/python3/dist-packages"), is_checkout("/srv/agtool-lab")
    (False, True)
    """
    return os.path.basename(os.path.normpath(root)) not in ("site-packages", "dist-packages")


def server_import_paths(extra: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The import paths the fork server (and so every step child) may have besides the interpreter's.

    ``extra`` (given explicitly, e.g. the engine's own test probes), then
    those of this process's paths that lie in the interpreter's own library
    folders (:func:`library_paths`: the standard library, the virtualenv's and
    the base interpreter's site-packages, the user site). An allow-list, never
    what the process happens to import from: the working folder a service was
    started in (``python -m`` puts it first), a ``PYTHONPATH`` entry, the
    project checkout (``solutions/``, ``tests/``) are none of them. The
    ``grader`` package itself is imported by the fork server before it drops
    the checkout from its path (see :mod:`grader.engine.client`), so no step
    can import anything else there.

    >>> PACKAGE_ROOT in server_import_paths() if is_checkout() else True
    False
    >>> os.getcwd() in server_import_paths() or os.getcwd() in library_paths()
    False
    """
    libraries = library_paths()

    def allowed(path: str) -> bool:
        real = os.path.realpath(path)
        return any(real == lib or real.startswith(lib.rstrip(os.sep) + os.sep) for lib in libraries)

    return list(dict.fromkeys([*extra, *(p for p in importable_paths() if allowed(p))]))


def library_paths() -> list[str]:
    """The interpreter's own library folders (real paths): its standard library and site-packages, the user site.

    >>> import sysconfig; os.path.realpath(sysconfig.get_path("stdlib")) in library_paths()
    True
    """
    import site
    import sysconfig

    found = []
    for scheme_vars in (None, {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}):
        found += [sysconfig.get_path(key, vars=scheme_vars) for key in ("stdlib", "platstdlib", "purelib", "platlib")]
    found += site.getsitepackages() if hasattr(site, "getsitepackages") else []
    if site.ENABLE_USER_SITE:
        found.append(site.getusersitepackages())
    return sorted({os.path.realpath(p) for p in found if p and os.path.isdir(p)})


def bwrap_prefix(keep: list[str] | tuple[str, ...] = (), writable: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The bubblewrap command line that runs the fork server sandboxed.

    Its own PID namespace (step code cannot see or signal the grader's other
    processes), no network, and an **allow-listed** file system: the system's
    programs and libraries (``/usr``), the interpreter, its standard library
    and the import paths the fork server needs (read-only), the ``grader``
    package without the parts judging or serving use, a minimal ``/dev``, its
    own ``/proc``, and a small private ``/tmp`` (the steps' scratch folders)
    that only its owner may write. Nothing else exists in it: no homes, no
    ``/root``, no service data, no submissions, no outputs, no checkout
    (``solutions/``, ``tests/``, notebooks), no ``/etc`` but the loader's files.

    ``writable`` folders (the fork server's cgroup, :mod:`grader.engine.cgroups`)
    are bound writable; each step child makes them read-only again for
    itself before learner code runs (:mod:`grader.engine.confine`).

    >>> "/home" in bwrap_prefix(), ["--ro-bind", "/", "/"] == bwrap_prefix()[7:10]
    (False, False)
    """
    args = [
        "bwrap",
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        *_system_binds(),
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--perms",
        "0755",
        "--size",
        str(SANDBOX_TMP_BYTES),
        "--tmpfs",
        "/tmp",
    ]
    made: set[str] = {"/", "/tmp", "/dev", "/proc", "/etc", *SYSTEM_DIRS}
    bound = allowed_paths(keep)
    for path in bound:
        args += [*_parents(path, made), "--ro-bind", path, path]
    for link, target in _interpreter_links(bound):
        args += [*_parents(link, made), "--symlink", target, link]
    for path in _hidden_parts():
        args += ["--perms", "0755", "--tmpfs", path, "--remount-ro", path]
    for path in writable:
        args += [*_parents(path, made), "--bind", path, path]
    return [*args, "--chdir", "/tmp"]


def allowed_paths(keep: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The real paths bound read-only into the sandbox besides the system's, outermost only, sorted.

    >>> any(p.endswith(os.sep + "solutions") or p == os.path.realpath(PACKAGE_ROOT) for p in allowed_paths())
    False
    """
    wanted = [
        sys.prefix,
        sys.base_prefix,
        os.path.dirname(sys.executable),
        os.path.dirname(os.path.realpath(sys.executable)),
        os.path.join(PACKAGE_ROOT, "grader"),
        *server_import_paths(keep),
        *keep,
    ]
    found = sorted({os.path.realpath(p) for p in wanted if p and os.path.exists(p)})
    outer: list[str] = []
    for path in found:
        covered = any(path == o or path.startswith(o.rstrip("/") + "/") for o in (*outer, *SYSTEM_DIRS))
        # Never a folder the sandbox makes itself, nor one above it: a script's folder /tmp on the
        # import path would hide the private /tmp (a folder below /tmp is bound over it, as wanted).
        own = any(path == d or d.startswith(path.rstrip("/") + "/") for d in SANDBOX_MADE)
        if not covered and not own:
            outer.append(path)
    return outer


def _interpreter_links(bound: list[str] | tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """The symlinks on the way to the interpreter as it is run, as (link, target): made again in the sandbox.

    The binds are real paths; a venv reached through a link (a clone whose ``.venv`` links to another
    checkout's, ``/opt/agtool`` linking to ``/srv/agtool``) would leave ``sys.executable`` with nothing
    at its path inside. Only the first link of the path is made: its target is bound (the interpreter's
    folders are), so the rest of the path resolves there.

    >>> all(os.path.islink(link) for link, _ in _interpreter_links())
    True
    """
    links = []
    path = os.path.abspath(sys.executable)
    parts = path.split(os.sep)
    for i in range(2, len(parts)):
        here = os.sep.join(parts[:i])
        if any(here == d or here.startswith(d.rstrip(os.sep) + os.sep) for d in (*SYSTEM_DIRS, *bound)):
            break  # inside a folder bound as it is: its links are there already
        if os.path.islink(here):
            links.append((here, os.path.realpath(here)))
            break
    return links


def _system_binds() -> list[str]:
    """/usr and its usual companions (bound, or the same symlinks as here), and the loader's /etc files."""
    args: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in ETC_FILES:
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    return args


def _parents(path: str, made: set[str]) -> list[str]:
    """``--dir`` arguments (mode 0755) for each parent of ``path`` not made yet.

    Without them bubblewrap makes missing parents with the host's modes:
    ``/root`` (0700) would keep the grading account from an interpreter below it.
    """
    args, parent = [], os.path.dirname(path)
    chain = []
    while parent not in made and parent != "/":
        chain.append(parent)
        parent = os.path.dirname(parent)
    for folder in reversed(chain):
        made.add(folder)
        args += ["--perms", "0755", "--dir", folder]
    made.add(path)
    return args


def _hidden_parts() -> list[str]:
    """The grader's subpackages a step never needs, hidden under empty read-only folders."""
    package = os.path.realpath(os.path.join(PACKAGE_ROOT, "grader"))
    return [os.path.join(package, name) for name in HIDDEN_SUBPACKAGES if os.path.isdir(os.path.join(package, name))]


_bwrap_checked: str | None = None


def bwrap_problem() -> str:
    """Why bubblewrap cannot run the fork server here (``""``: it can); probed once per process.

    >>> bwrap_problem() == "" if bwrap_usable() else bwrap_problem().startswith("bubblewrap")
    True
    """
    global _bwrap_checked
    if _bwrap_checked is None:
        _bwrap_checked = _probe_bwrap()
    return _bwrap_checked


def _probe_bwrap() -> str:
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    try:
        done = subprocess.run(
            [*bwrap_prefix(), sys.executable, "-I", "-c", _WALLS_PROBE], capture_output=True, timeout=20
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap (bwrap) could not be run ({type(exc).__name__}: {exc})"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", errors="replace").strip().splitlines()[-1:] or ["no message"]
        return f"bubblewrap (bwrap) cannot make its namespaces here ({said[0][:200]})"
    return ""


# Run inside bubblewrap by the probe: a step child's walls (grader.engine.namespaces and
# grader.engine.syscall_filter) must be possible there too, as an account that is not root.
_WALLS_PROBE = """
import ctypes, os, sys
try:
    import pyseccomp  # as the fork server does: before any switch (finding the library may need /tmp)
except BaseException as exc:
    pyseccomp = exc
pid = os.fork()
if pid == 0:
    try:
        if isinstance(pyseccomp, BaseException):
            raise pyseccomp
        if os.geteuid() == 0:
            os.setgroups([]); os.setresgid(65534, 65534, 65534); os.setresuid(65534, 65534, 65534)
        if ctypes.CDLL(None, use_errno=True).unshare({flags}) != 0:
            os.write(2, b"a step cannot make its own user, IPC and network namespaces (user namespaces are not allowed)\\n")
            os._exit(3)
        pyseccomp.SyscallFilter(pyseccomp.ALLOW).load()
        os._exit(0)
    except BaseException as exc:
        os.write(2, f"a step cannot load its syscall filter ({type(exc).__name__}: {exc})\\n".encode())
        os._exit(4)
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
""".replace("{flags}", str(OWN_NAMESPACES))  # the flags grader.engine.namespaces.enter_own unshares


def bwrap_usable() -> bool:
    """Whether bubblewrap is installed and may create namespaces here (probed once per process)."""
    return not bwrap_problem()
