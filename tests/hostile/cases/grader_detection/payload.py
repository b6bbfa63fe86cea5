# What a module can observe to tell a graded run from the
# learner's own Check: its module name, its file's path, its environment's
# keys, the files it can see, its account. Printed on one line; the test
# compares the line of a Check with that of a graded run.
import os as _hgd
import re as _hgr


def _shape(text):
    return _hgr.sub(r"[0-9a-f]{8}", "<hex>", _hgr.sub(r"-[A-Za-z0-9_]{8}(?=/|$)", "-<rand>", text))


def _visible():
    _out = []
    for _folder in ("/", "/home", "/root", "/srv", "/etc"):
        try:
            _out.append(f"{_folder}={len(_hgd.listdir(_folder))}")
        except OSError:
            _out.append(f"{_folder}=-")
    return ",".join(_out)


print("HOSTILE-SEES", f"name={_hgr.sub(r'_[0-9]+$', '_<n>', _shape(__name__))}", f"file={_shape(__file__)}",
      f"env={','.join(sorted(_hgd.environ))}", f"files={_visible()}", f"uid={_hgd.getuid()}")
