"""Make the fork server cheap to fork: its heap in transparent huge pages, where the kernel allows (opt-in).

Every step, and every ``fresh`` probe inside a step, is a ``fork()`` of the
fork server (LangGraph loaded: some 55 MiB of anonymous memory). ``fork()``
and the child's exit cost time in proportion to the page-table entries of
that memory, and on virtual machines each entry is dear: measured here
(Firecracker, kernel 6.18), a fork and exit of the server took 9-14 ms with
4 KiB pages and 6-8 ms once its large heap regions were 2 MiB pages, which is
paid some 26 times per submission. A child's first write to a shared huge page
splits it (the kernel copies 4 KiB, not 2 MiB), so children cost no more memory.

:func:`collapse_heap` asks for huge pages on the server's own private
writable memory (``MADV_HUGEPAGE``) and, on Linux 6.1 or later, collapses what
is already there at once (``MADV_COLLAPSE``); where either is refused (older
kernels, THP disabled, not Linux) it does nothing and says so.

Off unless ``$AGTOOL_HUGEPAGES=1``: the huge pages do not last. The fork
server's own first write to a page it shares with a living step child splits
that huge page back into small ones, so after one full grading only 2 MiB of
the 36 collapsed were still huge (``AnonHugePages`` in ``smaps_rollup``), and
30 gradings of the solution in a row cost the same CPU with and without
(254 and 251 ms a grading, two runs each, cpuacct), while the collapse adds
0.1 s to every fork server's start, which a cold Check waits for.

Example::

    >>> collapse_heap(enabled=False)
    {'collapsed_bytes': 0, 'regions': 0, 'why_not': '$AGTOOL_HUGEPAGES is not 1'}
    >>> done = collapse_heap()
    >>> sorted(done)
    ['collapsed_bytes', 'regions', 'why_not']
    >>> done["collapsed_bytes"] >= 0
    True
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import TYPE_CHECKING

from grader.engine.wire import JsonDict
from grader.settings import current, env_name

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

HUGEPAGES_ENV = env_name("hugepages")
HUGE = 2 << 20
MADV_HUGEPAGE, MADV_COLLAPSE = 14, 25  # linux/mman-common.h


def collapse_heap(maps: str = "/proc/self/maps", *, enabled: bool | None = None) -> JsonDict:
    """Advise, and collapse into huge pages, the 2 MiB-aligned parts of this process's heap regions.

    ``enabled``: the ``hugepages`` setting (default: this process's, :func:`grader.settings.current`).
    """
    done: JsonDict = {"collapsed_bytes": 0, "regions": 0, "why_not": ""}
    if not (current().hugepages if enabled is None else enabled):
        done["why_not"] = f"${HUGEPAGES_ENV} is not 1"
        return done
    madvise = _madvise()
    if madvise is None:
        done["why_not"] = "no madvise() here"
        return done
    try:
        with open(maps, encoding="ascii", errors="replace") as fh:
            regions = list(_heap_ranges(fh))
    except OSError as exc:
        done["why_not"] = f"{maps}: {exc.strerror}"
        return done
    for start, length in regions:
        if madvise(start, length, MADV_HUGEPAGE) != 0:
            done["why_not"] = f"MADV_HUGEPAGE refused ({os.strerror(ctypes.get_errno())})"
            break
        if madvise(start, length, MADV_COLLAPSE) == 0:
            done["collapsed_bytes"] += length
            done["regions"] += 1
        elif not done["why_not"]:
            done["why_not"] = f"MADV_COLLAPSE refused ({os.strerror(ctypes.get_errno())})"
    return done


def _heap_ranges(lines: Iterable[str]) -> list[tuple[int, int]]:
    """(start, length) of each private writable anonymous region's whole 2 MiB pages.

    >>> _heap_ranges(["7f0000000000-7f0000600000 rw-p 00000000 00:00 0 ",
    ...               "7f0000600000-7f0000700000 rw-p 00000000 00:00 0 ",
    ...               "55d000000000-55d000400000 r--p 00000000 08:01 5 /usr/bin/python3"])
    [(139637976727552, 6291456)]
    """
    out = []
    for line in lines:
        parts = line.split()
        if len(parts) < 5 or parts[1] != "rw-p":
            continue
        if len(parts) > 5 and parts[5] != "[heap]":  # file-backed or a stack: not ours to change
            continue
        low, high = (int(x, 16) for x in parts[0].split("-"))
        start, end = -(-low // HUGE) * HUGE, high // HUGE * HUGE
        if end > start:
            out.append((start, end - start))
    return out


def _madvise() -> Callable[[int, int, int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        fn = libc.madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn
