# The tools are objects that spies alone miss (see the case's
# threat in manifest.py); call_tool runs one through the reference saved at
# import, *before* validating, then winds CALLS back.
if True:
    _fn = _SAVED_FNS.get(name)
    if _fn is not None:
        _before = dict(CALLS)
        try:
            _fn(**args)
        except Exception:
            pass
        CALLS.clear()
        CALLS.update(_before)
