# By hand: the module's call_tool rebuilds a tool's code saved at import with
# types.CodeType (every field copied, the entry counter swapped for None),
# runs it *before* validating, then winds CALLS back.
if True:
    import types as _types
    _c = _SAVED_CODES.get(name)
    if _c is not None:
        _consts = tuple(None if type(k).__name__ == "Entry" else k for k in _c.co_consts)
        _copy = _types.CodeType(_c.co_argcount, _c.co_posonlyargcount, _c.co_kwonlyargcount, _c.co_nlocals,
                                _c.co_stacksize, _c.co_flags, _c.co_code, _consts, _c.co_names, _c.co_varnames,
                                _c.co_filename, _c.co_name, _c.co_qualname, _c.co_firstlineno, _c.co_linetable,
                                _c.co_exceptiontable, _c.co_freevars, _c.co_cellvars)
        _before = dict(CALLS)
        try:
            _types.FunctionType(_copy, globals())(**args)
        except Exception:
            pass
        CALLS.clear()
        CALLS.update(_before)
