# cache_key stops its own process with SIGSTOP (a stopped process ignores everything but SIGKILL/SIGCONT).
import os as _so
import signal as _ss
_so.kill(_so.getpid(), _ss.SIGSTOP)
