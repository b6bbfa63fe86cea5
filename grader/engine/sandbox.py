"""Bubblewrap around the fork server: own PID namespace, no network, read-only files.

:class:`grader.engine.client.EngineClient` starts the fork server behind
:func:`bwrap_prefix` when asked to (``sandbox="bwrap"`` or ``"auto"``, or
``$AGTOOL_SANDBOX``) and :func:`bwrap_usable` says bubblewrap works here;
otherwise it runs without.

Example::

    >>> bwrap_prefix()[:3]
    ['bwrap', '--die-with-parent', '--new-session']
    >>> bwrap_usable()  # where bubblewrap is installed and user namespaces are allowed
    True
"""
from __future__ import annotations

import os
import subprocess
import sys

from grader.settings import env_name

SANDBOXES = ("none", "bwrap", "auto")  # "bwrap" warns when unusable, "auto" falls back silently
SANDBOX_ENV = env_name("sandbox")
SANDBOX_TMP_BYTES = 256 << 20


def importable_paths() -> list[str]:
    """This process's absolute import paths (never ``''``, the working folder).

    The fork server gets them on its ``sys.path`` (it runs with ``-I``), and
    bubblewrap binds back those its private ``/tmp`` would hide.

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


def server_import_paths(extra: "list[str] | tuple[str, ...]" = ()) -> list[str]:
    """The import paths the fork server (and so every step child) may have besides the interpreter's.

    ``extra`` (given explicitly, e.g. the engine's own test probes), then this
    process's paths *except* those inside a checkout (its root, ``tests/``...):
    from there a step could import ``solutions.tools`` or a test's module. A
    virtualenv inside the checkout stays. The ``grader`` package itself is
    imported by the fork server before it drops the checkout from its path
    (see :mod:`grader.engine.client`), so no step can import anything else there.

    >>> PACKAGE_ROOT in server_import_paths() if is_checkout() else True
    False
    """
    hidden = PACKAGE_ROOT if is_checkout() else None

    def allowed(path: str) -> bool:
        real = os.path.realpath(path)
        if hidden is None or not (real == hidden or real.startswith(hidden + os.sep)):
            return True
        return any(real == p or real.startswith(p + os.sep) for p in _environment_dirs())

    return list(dict.fromkeys([*extra, *(p for p in importable_paths() if allowed(p))]))


def _environment_dirs() -> "list[str]":
    return [os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, os.path.dirname(sys.executable))]


def bwrap_prefix(keep: "list[str] | tuple[str, ...]" = (),
                 writable: "list[str] | tuple[str, ...]" = ()) -> list[str]:
    """The bubblewrap command line that runs the fork server sandboxed.

    Its own PID namespace (step code cannot see or signal the grader's other
    processes), no network, the whole file system read-only, and a small
    private ``/tmp`` (the steps' scratch folders). The interpreter, its
    environment and the import paths are bound back read-only where the
    private ``/tmp`` would hide them (a checkout or a virtualenv under /tmp).

    A checkout the grader runs from is hidden under an empty ``tmpfs``, with
    only its ``grader/`` package (and a virtualenv, or the paths in ``keep``,
    that live inside it) bound back: ``solutions/tools.py``, the tests' correct
    modules and the notebooks are neither importable nor readable by a step.

    ``writable`` folders (the fork server's cgroup, :mod:`grader.engine.cgroups`)
    are bound back writable; each step child makes them read-only again for
    itself before learner code runs (:mod:`grader.engine.confine`).
    """
    rebind = []
    # The folder holding the grader package too: an editable install imports it from there.
    package_root = PACKAGE_ROOT
    for path in _under_tmp([sys.prefix, sys.base_prefix, os.path.dirname(sys.executable), package_root,
                            *importable_paths(), *keep]):
        rebind += ["--ro-bind", path, path]
    return ["bwrap", "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net", "--unshare-ipc",
            "--unshare-uts", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--size", str(SANDBOX_TMP_BYTES), "--tmpfs", "/tmp", *rebind, *_hide_checkout(keep),
            *[arg for path in writable for arg in ("--bind", path, path)], "--chdir", "/tmp"]


def _hide_checkout(keep: "list[str] | tuple[str, ...]") -> list[str]:
    """bwrap arguments that put an empty tmpfs over the checkout and bind back what the server needs."""
    if not is_checkout():
        return []
    root = os.path.realpath(PACKAGE_ROOT)
    needed = [os.path.join(root, "grader"), *_environment_dirs(), *keep]
    inside = sorted({real for real in (os.path.realpath(p) for p in needed if p)
                     if real.startswith(root + os.sep) and os.path.exists(real)})
    args = ["--tmpfs", root]
    for path in inside:
        args += ["--ro-bind", path, path]
    return args


def _under_tmp(paths: "list[str]") -> "list[str]":
    """The distinct real paths below /tmp, parents before children (bwrap mounts in order)."""
    found = {os.path.realpath(p) for p in paths if p}
    return sorted(p for p in found if p.startswith("/tmp/") and os.path.exists(p))


_bwrap_checked: "bool | None" = None


def bwrap_usable() -> bool:
    """Whether bubblewrap is installed and may create namespaces here (probed once per process)."""
    global _bwrap_checked
    if _bwrap_checked is None:
        try:
            done = subprocess.run([*bwrap_prefix(), "true"], capture_output=True, timeout=10)
            _bwrap_checked = done.returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            _bwrap_checked = False
    return _bwrap_checked
