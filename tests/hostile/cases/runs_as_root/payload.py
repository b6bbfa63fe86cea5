# Learner code must not run as root (nor as the account that owns
# the service's data). Says HOSTILE-ROOT when it does.
import os as _hrr

if 0 in (_hrr.getuid(), _hrr.geteuid(), _hrr.getgid(), _hrr.getegid()) or 0 in _hrr.getgroups():
    print("HOSTILE-ROOT", _hrr.getuid(), _hrr.geteuid(), _hrr.getgid(), _hrr.getgroups())
