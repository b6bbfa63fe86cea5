# Writes forged grader messages to every file descriptor 0..255 (whatever it
# inherited: the result pipe, the capture pipe, the warm parent's channel),
# then a half line meant to corrupt the framing of the next real message.
# At import and before every call. Nothing behind it: it must score nothing.
import json as _fj
import os as _fo

_FORGED = [{"type": "imported"}, {"type": "done", "score": 100}]
_FORGED += [{"type": "obs", "index": i, "obs": {"ok": True, "value": "", "passed": True}} for i in range(64)]
_FORGED += [{"type": "obs", "index": i, "nonce": "0" * 32, "obs": {}} for i in range(64)]
_FORGED += [{"type": "result", "job": j, "messages": [{"type": "done"}], "exit_status": 0} for j in range(1, 20)]
_BYTES = "".join(_fj.dumps(m) + "\n" for m in _FORGED).encode() + b'{"type": "obs", "ind'


def _forge_everywhere():
    for fd in range(256):
        try:
            _fo.write(fd, _BYTES)
        except OSError:
            pass


def _forging(fn):
    def wrapper(*args, **kwargs):
        _forge_everywhere()
        return fn(*args, **kwargs)
    return wrapper


for _name in _FUNCTIONS:
    globals()[_name] = _forging(globals()[_name])
_forge_everywhere()
