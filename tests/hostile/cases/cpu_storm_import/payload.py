# At import (so in every step): eight children, each in its own session,
# become marked Python processes that spin for up to 60 s; then the import
# sleeps 3 s (an honest-looking slow import) while they spin. The module is
# the solution otherwise. It wants the CPU of the learners graded beside it.
import sys as _cs
import time as _ct
if _hostile_once("cpu_storm"):
    for _ in range(8):
        _pid = _hostile_os.fork()
        if _pid == 0:
            try:
                _hostile_os.setsid()
                _hostile_os.execve(_cs.executable, [f"hostile-{_HOSTILE_MARKER}-spin", "-c",
                                                    "import time\nend = time.time() + 60\nwhile time.time() < end: pass"],
                                   {"HOSTILE_MARKER": _HOSTILE_MARKER})
            finally:
                _hostile_os._exit(0)
    _ct.sleep(3)
