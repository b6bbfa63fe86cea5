# Step 8's report forged: write_report writes no file at all (see the manifest's edits)
# and, at import, replaces the grader's report reader in its probe module
# (looked up by name through sys.modules, or imported again) with one that
# returns full, well-formed files. Step 8 must not be full.
import importlib as _il
import sys as _sys

_FORGED: dict = {}


def _forged_reader(folder):
    return {"json_exists": True, "md_exists": True, "json": dict(_FORGED), "md": _markdown(dict(_FORGED))}


try:
    _probes = _sys.modules.get("grader.engine.probes") or _il.import_module("grader.engine.probes")
    _probes._read_report_files = _forged_reader
except Exception:
    pass
