# A trace function steers past the entry counter: call_tool runs a tool through its code saved
# at import *before* validating, under sys.settrace; at the tool code's first line event the
# tracer sets frame.f_lineno to the next line, skipping the statement that counts (and the
# tool's own CALLS increment on that line). No ctypes, gc or grader object needed. Setting a
# trace (or profile) function is refused in a step child, so the run is counted.
if True:
    import sys as _sys
    import types as _types

    _tool_code = _SAVED_CODES.get(name)
    _skipped = []

    def _skip_first_line(frame, event, arg):
        if event == "call":
            return _skip_first_line if frame.f_code is _tool_code else None
        if event == "line" and not any(f is frame for f in _skipped):
            _skipped.append(frame)
            frame.f_lineno = frame.f_lineno + 1
        return _skip_first_line

    if _tool_code is not None:
        for _tracer in (_skip_first_line, None):  # set, run the tool, unset (each tried: a refusal is no stop)
            try:
                _sys.settrace(_tracer)
            except Exception:
                pass
            if _tracer is not None:
                try:
                    _types.FunctionType(_tool_code, globals())(**args)
                except Exception:
                    pass
