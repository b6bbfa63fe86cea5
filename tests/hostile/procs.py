"""Find (and end) processes a corpus case left behind, by the marker they carry.

Every process a hostile case starts is an exec'd program whose command line
and environment hold the case's marker (see ``snippets/spawn.py``), so a scan
of ``/proc`` tells whether the grader let any of them outlive the run.

Example::

    >>> marked_processes("no-such-marker-anywhere")
    []
"""

from __future__ import annotations

import os
import signal


def marked_processes(marker: str) -> list[tuple[int, str]]:
    """(pid, command line) of every living process whose cmdline or environment holds ``marker``."""
    needle = marker.encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        cmdline = _read(f"/proc/{name}/cmdline")
        if needle in cmdline or needle in _read(f"/proc/{name}/environ"):
            if _state(name) not in ("Z", "X", ""):  # zombies are dead; their parent reaps them
                found.append((int(name), cmdline.replace(b"\0", b" ").decode("utf-8", "replace").strip()))
    return sorted(found)


def kill_marked(marker: str) -> int:
    """SIGKILL the processes :func:`marked_processes` finds (only ours: they carry our marker)."""
    killed = 0
    for pid, _ in marked_processes(marker):
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except (ProcessLookupError, PermissionError):
            pass
    return killed


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def _state(pid: str) -> str:
    stat = _read(f"/proc/{pid}/stat").decode("ascii", "replace")
    parts = stat.rsplit(")", 1)
    return parts[1].split()[0] if len(parts) == 2 and parts[1].split() else ""
