# At import (once per process), fork a copy of the step's process that keeps
# every inherited pipe and writes junk result lines and output forever, and
# ticks into a file outside the submission while it lives. It must not cost
# the module any point, and must not outlive the step.
import os as _fo
import time as _ft

if not _fo.environ.get("HOSTILE_DONE_writer"):
    _fo.environ["HOSTILE_DONE_writer"] = "1"
    if _fo.fork() == 0:
        try:
            _junk = b'{"type": "obs", "index": 0, "obs": {"forged": true}}\n'
            while True:
                for _fd in range(3, 64):
                    try:
                        _fo.write(_fd, _junk)
                    except OSError:
                        pass
                try:
                    with open("@@OUTSIDE@@/ticker", "a") as _fh:
                        _fh.write("tick\n")
                except OSError:
                    pass
                _ft.sleep(0.01)
        finally:
            _fo._exit(0)
