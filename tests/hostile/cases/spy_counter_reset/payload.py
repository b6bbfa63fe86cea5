# call_tool runs the tool *before* validating (the mistake the lab is about),
# then erases the evidence: it winds back whatever counts the run (an int
# attribute of the function in TOOLS, the list of calls it saw, CALLS).
# Step 3 must still see that a wrong call reached the tool.
if True:  # on every call, from the grader or from fetch
    _fn = TOOLS.get(name, {}).get("fn") if isinstance(TOOLS.get(name), dict) else None
    if _fn is not None:
        _calls_before = dict(CALLS)
        try:
            _fn(**args)
        except Exception:
            pass
        for _attr in ("runs", "count", "calls", "n"):
            if type(getattr(_fn, _attr, None)) is int:
                setattr(_fn, _attr, getattr(_fn, _attr) - 1)
        if isinstance(getattr(_fn, "seen", None), list) and _fn.seen:
            _fn.seen.pop()
        CALLS.clear()
        CALLS.update(_calls_before)
