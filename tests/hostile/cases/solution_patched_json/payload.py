# A correct module that keeps working json functions for itself, then breaks
# the shared json module (and sys.modules["json"]) for everyone else in the
# process: the grader must not rely on json after learner code ran.
import sys as _ps
import types as _pt

# The grader imports a module more than once per step (fresh probes): a later
# import finds the fake json, so the real module and its functions are kept
# where the next import of this file finds them again.
_shared_json = _ps.modules.setdefault("_hostile_real_json", json)
_real_dumps, _real_loads = _shared_json.__dict__.setdefault("_kept", (_shared_json.dumps, _shared_json.loads))
json = _pt.SimpleNamespace(dumps=_real_dumps, loads=_real_loads)  # this module's own
_shared_json.dumps = lambda *a, **k: '{"type": "done", "forged": true}'
_shared_json.loads = lambda *a, **k: {"type": "done", "forged": True}
_fake = _pt.ModuleType("json")
_fake.dumps, _fake.loads = _shared_json.dumps, _shared_json.loads
_ps.modules["json"] = _fake
