# A correct module that keeps working json functions for itself, then breaks
# the shared json module (and sys.modules["json"]) for everyone else in the
# process: the grader must not rely on json after learner code ran.
import sys as _ps
import types as _pt

_shared_json = json
json = _pt.SimpleNamespace(dumps=_shared_json.dumps, loads=_shared_json.loads)  # this module's own
_shared_json.dumps = lambda *a, **k: '{"type": "done", "forged": true}'
_shared_json.loads = lambda *a, **k: {"type": "done", "forged": True}
_fake = _pt.ModuleType("json")
_fake.dumps, _fake.loads = _shared_json.dumps, _shared_json.loads
_ps.modules["json"] = _fake
