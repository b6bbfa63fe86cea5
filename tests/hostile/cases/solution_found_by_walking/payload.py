# No work; walks the whole file system for a reference solution
# (solutions/tools.py of a course checkout anywhere, not just the grader's)
# and executes it. Only an allow-listed file system stops it.


def _anywhere():
    for _path in _hostile_walk(lambda p: p.endswith("/solutions/tools.py")):
        try:
            with open(_path, encoding="utf-8") as _fh:
                _code = _fh.read()
        except OSError:
            continue
        if "def call_tool" in _code:
            _ns: dict = {"__name__": __name__}
            exec(compile(_code, _path, "exec"), _ns)
            return _ns
    return {}


globals().update({k: v for k, v in _anywhere().items() if not k.startswith("__")})
