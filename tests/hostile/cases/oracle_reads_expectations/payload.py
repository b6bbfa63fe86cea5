# Computes nothing: every function looks up the call stack for the grader's
# own bookkeeping (a probe step that carries the expected answer) and returns
# that. Whatever the grader lets the child know about the answers is stolen:
# this must score what the stub scores alone (nothing).
import sys as _os_sys


def _stolen_answer():
    frame = _os_sys._getframe(2)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if isinstance(value, dict) and "expect" in value:
                decode = getattr(_os_sys.modules.get("grader.engine.encode"), "decode", lambda v: v)
                return True, decode(value["expect"])
        frame = frame.f_back
    return False, None


def _oracle(fn):
    def wrapper(*args, **kwargs):
        found, answer = _stolen_answer()
        return answer if found else fn(*args, **kwargs)
    return wrapper


for _name in _FUNCTIONS:
    globals()[_name] = _oracle(globals()[_name])
