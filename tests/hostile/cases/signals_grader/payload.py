# May learner code signal the grader's processes? Asks (signal 0
# only checks the permission) for its parent (the fork server), pid 1 of its
# namespace (bubblewrap) and every process of another account it can see.
# Says HOSTILE-SIGNAL for each it may signal.
import os as _hsg


def _signal_others():
    _me, _targets = _hsg.getuid(), {_hsg.getppid(), 1}
    for _name in _hsg.listdir("/proc"):
        try:
            if _name.isdigit() and _hsg.stat(f"/proc/{_name}").st_uid != _me:
                _targets.add(int(_name))
        except OSError:
            pass
    for _pid in sorted(_targets - {_hsg.getpid(), 0}):
        try:
            _hsg.kill(_pid, 0)
            print("HOSTILE-SIGNAL", _pid)
        except OSError:
            pass


_signal_others()
