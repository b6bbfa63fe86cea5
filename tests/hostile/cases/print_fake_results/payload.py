# Claims success on stdout and stderr, in words and in the grader's own message
# format, at import and in every call. Nothing behind it: it must score nothing.
import json as _fj
import sys as _fs

_FAKE_LINES = [
    "HOSTILE-FAKE: PASS step1/names ... PASS step8/follows_module",
    "HOSTILE-FAKE: 58/58 checks passed, 100/100 points",
    _fj.dumps({"score": 100, "max_score": 100, "passed": True}),
    _fj.dumps({"type": "imported"}),
    *(_fj.dumps({"type": "obs", "index": i, "obs": {"ok": True, "value": "", "passed": True}}) for i in range(40)),
    _fj.dumps({"type": "done"}),
]


def _claim_success():
    for stream in (_fs.stdout, _fs.stderr):
        stream.write("\n".join(_FAKE_LINES) + "\n")
        stream.flush()


def _claiming(fn):
    def wrapper(*args, **kwargs):
        _claim_success()
        return fn(*args, **kwargs)
    return wrapper


for _name in _FUNCTIONS:
    globals()[_name] = _claiming(globals()[_name])
_claim_success()
