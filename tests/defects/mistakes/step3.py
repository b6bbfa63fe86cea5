"""Plausible step-3 mistakes: each must fail the check it names, and no other step.

``call_tool`` is judged with the grader's own ``validate_args``,
``validate_result`` and ``cache_key`` in the module, so a mistake of the
door itself costs step 3 alone, whatever later step's check calls it (steps
6-8 put the grader's door in ``call_tool``'s name).
"""

from __future__ import annotations

from ..catalog import d

_EXCEPT = "    except Exception as exc:  # the boundary: no exception crosses it"
_STORE = '    CACHE[key] = value\n    return {"ok": True, "value": value, "error": ""}'
_ARGS_REFUSED = '        return _failure("args:" + reason)'
_RAISED = '        return _failure("raised:" + type(exc).__name__)'
_CACHED = '        return {"ok": True, "value": CACHE[key], "error": ""}\n'

MISTAKES: dict = {
    # -- the boundary catches too little: a tool's own exception leaves call_tool
    "catches_value_error_only": (
        "step3/raised_as_value",
        d((_EXCEPT, "    except ValueError as exc:  # the boundary: no exception crosses it")),
    ),
    "catches_lookup_errors_only": (
        "step3/raised_as_value",
        d((_EXCEPT, "    except (KeyError, IndexError, LookupError) as exc:  # the boundary")),
    ),
    "catches_builtin_errors_only": (
        "step3/raised_as_value",
        d((_EXCEPT, "    except (ArithmeticError, LookupError, ValueError, TypeError, RuntimeError, OSError) as exc:")),
    ),
    # -- failure values of the wrong shape (the args failure dict is step 3's alone)
    "args_failure_without_value": (
        "step3/args_prefix",
        d((_ARGS_REFUSED, '        return {"ok": False, "error": "args:" + reason}')),
    ),
    "args_failure_value_is_reason": (
        "step3/args_prefix",
        d((_ARGS_REFUSED, '        return {"ok": False, "value": reason, "error": "args:" + reason}')),
    ),
    "args_failure_ok_none": (
        "step3/args_prefix",
        d((_ARGS_REFUSED, '        return {"ok": None, "value": None, "error": "args:" + reason}')),
    ),
    # -- a success of the wrong shape
    "success_error_none": (
        "step3/success_result",
        d((_STORE, '    CACHE[key] = value\n    return {"ok": True, "value": value, "error": None}')),
    ),
    "success_rows_as_tuple": (
        "step3/success_result",
        d(
            (
                _STORE,
                '    CACHE[key] = value\n    return {"ok": True, "value": dict(value, rows=tuple(value["rows"])), '
                '"error": ""}',
            )
        ),
    ),
    "success_without_error_key": (
        "step3/success_result",
        d((_STORE, '    CACHE[key] = value\n    return {"ok": True, "value": value}')),
    ),
    # -- every Exception a tool may raise (raised_as_value sends each kind on every run)
    "type_error_escapes": (
        "step3/raised_as_value",
        d((_EXCEPT, "    except TypeError:\n        raise  # a wrong keyword is our bug, not the tool's\n" + _EXCEPT)),
    ),
    "bugs_escape": (
        "step3/raised_as_value",
        d(
            (
                _EXCEPT,
                "    except (AttributeError, AssertionError):\n        raise  # programming errors surface\n" + _EXCEPT,
            )
        ),
    ),
    "own_class_named_by_builtin_base": (
        "step3/raised_as_value",
        d(
            (
                _RAISED,
                '        kind = next(c for c in type(exc).__mro__ if c.__module__ == "builtins")\n'
                '        return _failure("raised:" + kind.__name__)',
            )
        ),
    ),
    "stop_iteration_escapes": (
        "step3/raised_as_value",
        d((_EXCEPT, "    except StopIteration:\n        raise  # let a generator end\n" + _EXCEPT)),
    ),
    # -- error None on every success, cached ones included: step 3's success_result alone (step 5's
    # cached call is judged on its counts and value)
    "success_error_none_everywhere": (
        "step3/success_result",
        d(
            (_STORE, '    CACHE[key] = value\n    return {"ok": True, "value": value, "error": None}'),
            (_CACHED, '        return {"ok": True, "value": CACHE[key], "error": None}\n'),
        ),
    ),
}
