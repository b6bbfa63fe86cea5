# --- hostile helper: processes that carry the corpus marker -------------------
# Every process a case starts ends as an exec'd program whose argv[0] and
# environment hold the marker, so the test can find survivors in /proc.
import os as _hostile_os

_HOSTILE_MARKER = "@@MARKER@@"


def _hostile_once(flag: str) -> bool:
    """True the first time in this process (fresh imports of the module share os.environ)."""
    key = "HOSTILE_DONE_" + flag
    if _hostile_os.environ.get(key):
        return False
    _hostile_os.environ[key] = "1"
    return True


def _hostile_exec_sleeper(tag: str, seconds: int = 300) -> None:
    """Become a marked `sleep` (never returns)."""
    try:
        _hostile_os.execve("/bin/sleep", [f"hostile-{_HOSTILE_MARKER}-{tag}", str(seconds)],
                           {"HOSTILE_MARKER": _HOSTILE_MARKER})
    finally:
        _hostile_os._exit(0)


def _hostile_escape(tag: str, ticker: str = "/dev/null") -> None:
    """Leave behind a grandchild in its own session that ignores polite signals.

    Double fork + setsid(): the grandchild is in no process group the grader
    knows, its parent is gone, and it appends to ``ticker`` five times a second
    for as long as it lives.
    """
    pid = _hostile_os.fork()
    if pid:
        _hostile_os.waitpid(pid, 0)
        return
    try:
        _hostile_os.setsid()
        if _hostile_os.fork():
            _hostile_os._exit(0)
        script = "trap '' TERM HUP INT QUIT; while :; do echo tick >> \"$1\"; sleep 0.2; done"
        _hostile_os.execve("/bin/sh", ["/bin/sh", "-c", script, f"hostile-{_HOSTILE_MARKER}-{tag}", ticker],
                           {"HOSTILE_MARKER": _HOSTILE_MARKER, "PATH": "/usr/bin:/bin"})
    finally:
        _hostile_os._exit(0)
