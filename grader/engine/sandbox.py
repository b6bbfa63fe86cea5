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

SANDBOXES = ("none", "bwrap", "auto")  # "bwrap" warns when unusable, "auto" falls back silently
SANDBOX_ENV = "AGTOOL_SANDBOX"
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


def bwrap_prefix() -> list[str]:
    """The bubblewrap command line that runs the fork server sandboxed.

    Its own PID namespace (step code cannot see or signal the grader's other
    processes), no network, the whole file system read-only, and a small
    private ``/tmp`` (the steps' scratch folders). The interpreter, its
    environment and the import paths are bound back read-only where the
    private ``/tmp`` would hide them (a checkout or a virtualenv under /tmp).
    """
    rebind = []
    # The folder holding the grader package too: an editable install imports it from there.
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for path in _under_tmp([sys.prefix, sys.base_prefix, os.path.dirname(sys.executable), package_root,
                            *importable_paths()]):
        rebind += ["--ro-bind", path, path]
    return ["bwrap", "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net", "--unshare-ipc",
            "--unshare-uts", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--size", str(SANDBOX_TMP_BYTES), "--tmpfs", "/tmp", *rebind, "--chdir", "/tmp"]


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
