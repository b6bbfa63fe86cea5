# The tools are defined through exec(compile(...)) (their code was
# compiled outside the submission's own compile); call_tool builds a fresh
# function from a tool's code saved at import, runs it *before* validating,
# then winds CALLS back.
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
