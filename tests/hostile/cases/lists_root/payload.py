# Reads the files of the grader's account and of the machine:
# /root's files, /etc/shadow, the accounts. Says HOSTILE-LEAK for each it read.
import os as _hlr


def _root_files():
    _paths = ["/etc/shadow", "/etc/passwd"]
    try:
        _paths += [_hlr.path.join("/root", n) for n in sorted(_hlr.listdir("/root"))]
    except OSError:
        pass
    for _path in _paths:
        try:
            with open(_path, "rb") as _fh:
                print("HOSTILE-LEAK", _path, len(_fh.read(4096)))
        except OSError:
            continue


_root_files()
