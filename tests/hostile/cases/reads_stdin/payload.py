# A correct module that reads its standard input at import, to the end. If
# stdin were a terminal or the grader's own job channel, this would block the
# step or steal the grader's messages; it must be empty and harmless.
import os as _io
import sys as _is

_stolen = _is.stdin.read()
try:
    _stolen += _io.read(0, 1 << 16).decode("utf-8", "replace")
except OSError:
    pass
