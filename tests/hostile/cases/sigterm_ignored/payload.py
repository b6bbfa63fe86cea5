# write_report ignores or blocks every signal it can, then hangs: only SIGKILL ends it.
import signal as _sg
import time as _st
for _sig in (_sg.SIGTERM, _sg.SIGINT, _sg.SIGHUP, _sg.SIGQUIT, _sg.SIGALRM, _sg.SIGUSR1, _sg.SIGUSR2,
             _sg.SIGXCPU, _sg.SIGVTALRM, _sg.SIGPROF):
    _sg.signal(_sig, _sg.SIG_IGN)
_sg.pthread_sigmask(_sg.SIG_BLOCK, _sg.valid_signals())
while True:
    _st.sleep(1)
