# No work; reads a classmate's module from the hub's home folders
# (/home/<learner>/agtool/tools.py) and takes its names. Only an allow-listed
# file system (no /home in the sandbox) stops it.
import glob as _hg


def _classmate():
    for _path in sorted(_hg.glob("/home/*/agtool/tools.py") + _hg.glob("/home/*/*/agtool/tools.py")):
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


globals().update({k: v for k, v in _classmate().items() if not k.startswith("__")})
