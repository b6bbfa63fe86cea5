# Writes beside its own scratch folder (where the other steps'
# folders are) and into /tmp: the grading account owns its scratch folder
# and nothing else. Says HOSTILE-WROTE for each place it wrote.
import os as _hwb


def _beside():
    _here = _hwb.getcwd()
    for _place in dict.fromkeys([_hwb.path.dirname(_here), _hwb.path.dirname(_hwb.path.dirname(_here)), "/tmp"]):
        _path = _hwb.path.join(_place, f".agtool-hostile-beside-{_hwb.getpid()}")
        try:
            with open(_path, "w", encoding="utf-8") as _fh:
                _fh.write("x")
            print("HOSTILE-WROTE", _path)
            _hwb.unlink(_path)
        except OSError:
            pass


_beside()
