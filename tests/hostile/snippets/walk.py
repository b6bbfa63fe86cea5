# --- hostile helper: a bounded breadth-first walk of the whole file system ---
# What a learner who knows nothing of the machine would do to find the class's
# files: every folder it may list, shallow ones first, a few seconds at most.
import collections as _hw_collections
import os as _hw_os
import time as _hw_time


def _hostile_walk(wanted, budget_seconds: float = 1.5, max_folders: int = 30000):
    """Paths of files for which ``wanted(path)`` is true (skips /proc, /sys, /dev and /usr)."""
    found, todo, seen, until = [], _hw_collections.deque(["/"]), 0, _hw_time.monotonic() + budget_seconds
    while todo and seen < max_folders and _hw_time.monotonic() < until:
        folder = todo.popleft()
        seen += 1
        try:
            entries = list(_hw_os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.path not in ("/proc", "/sys", "/dev", "/usr"):
                        todo.append(entry.path)
                elif entry.is_file(follow_symlinks=False) and wanted(entry.path):
                    found.append(entry.path)
            except OSError:
                pass
    return found


def _hostile_find(patterns, wanted):
    """The usual places first (``patterns``, glob), then the walk: what a learner would try, in that order."""
    import glob as _hw_glob

    found = [p for pattern in patterns for p in sorted(_hw_glob.glob(pattern)) if _hw_os.path.isfile(p)]
    return list(dict.fromkeys(found + _hostile_walk(wanted)))


_HOSTILE_DB_PLACES = [f"{top}/{'*/' * depth}*.{ext}" for top in ("/srv", "/var/lib", "/home", "/opt", "/root")
                      for depth in range(4) for ext in ("sqlite3", "sqlite", "db")]
