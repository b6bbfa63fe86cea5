# Looks for a batch's outputs and submissions (results/*.json,
# feedback.md, grades.csv, classmates' tools.py) anywhere it can read and
# prints what it found. Says HOSTILE-LEAK for each file it could read.


def _outputs():
    import os as _hbo

    _own = _hbo.path.dirname(_hbo.path.dirname(_hbo.getcwd())) + "/"  # its own steps' scratch folders

    def wanted(path):
        return not path.startswith(_own) and (
            (path.endswith((".json", "/feedback.md", "/grades.csv")) and "/results/" in path)
            or path.endswith("/agtool/tools.py"))

    for _path in _hostile_walk(wanted)[:20]:
        try:
            with open(_path, encoding="utf-8", errors="replace") as _fh:
                print("HOSTILE-LEAK", _path, _fh.read(80).replace("\n", " "))
        except OSError:
            continue


_outputs()
