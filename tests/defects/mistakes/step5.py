"""Plausible step-5 mistakes: each must fail the check it names, and no other step.

The cache inside ``call_tool`` is judged with the grader's own
``validate_args`` and ``validate_result`` in the module: a step-2 or step-4
slip cannot reach these checks, and a step-5 one costs step 5 alone.
"""

from __future__ import annotations

from ..catalog import d

_KEY = '    return name + ":" + json.dumps(args, sort_keys=True, ensure_ascii=False)'
_VALIDATE_THEN_CACHE = (
    "    reason = validate_args(name, args)\n    if reason:\n        # Refused before the body runs: a wrong call never "
    'reaches the tool.\n        return _failure("args:" + reason)\n    key = cache_key(name, args)\n    if key in CACHE:\n'
    '        return {"ok": True, "value": CACHE[key], "error": ""}\n'
)
_EXCEPT = (
    "    except Exception as exc:  # the boundary: no exception crosses it\n"
    '        return _failure("raised:" + type(exc).__name__)'
)

MISTAKES: dict = {
    # -- cache_key built with str(): 2 and "2" (equal text, other types) share a key
    "key_from_str_pairs": (
        "step5/key_distinguishes",
        d((_KEY, '    return name + ":" + "&".join(f"{k}={args[k]}" for k in sorted(args))')),
    ),
    "key_from_str_values": (
        "step5/key_distinguishes",
        d((_KEY, '    return name + ":" + json.dumps({k: str(v) for k, v in args.items()}, sort_keys=True)')),
    ),
    "key_from_percent_format": (
        "step5/key_distinguishes",
        d((_KEY, '    return "%s(%s)" % (name, ",".join("%s=%s" % item for item in sorted(args.items())))')),
    ),
    # -- the cache consulted before (or instead of) validation
    "cache_before_validation": (
        "step5/validation_before_cache",
        d(
            (
                _VALIDATE_THEN_CACHE,
                '    key = cache_key(name, args)\n    if key in CACHE:\n        return {"ok": True, "value": CACHE[key], "error": ""}\n'
                '    reason = validate_args(name, args)\n    if reason:\n        return _failure("args:" + reason)\n',
            )
        ),
    ),
    "cached_calls_skip_validation": (
        "step5/validation_before_cache",
        d(
            (
                _VALIDATE_THEN_CACHE,
                '    key = cache_key(name, args)\n    reason = "" if key in CACHE else validate_args(name, args)\n'
                '    if reason:\n        return _failure("args:" + reason)\n'
                '    if key in CACHE:\n        return {"ok": True, "value": CACHE[key], "error": ""}\n',
            )
        ),
    ),
    "validation_result_ignored_when_cached": (
        "step5/validation_before_cache",
        d(
            (
                _VALIDATE_THEN_CACHE,
                "    reason = validate_args(name, args)\n    key = cache_key(name, args)\n    if key in CACHE:\n"
                '        return {"ok": True, "value": CACHE[key], "error": ""}\n'
                '    if reason:\n        return _failure("args:" + reason)\n',
            )
        ),
    ),
    # -- failures remembered: the next identical call does not run the tool
    "raised_failure_cached": (
        "step5/failure_not_cached",
        d(
            (
                _EXCEPT,
                "    except Exception as exc:  # the boundary: no exception crosses it\n"
                '        CACHE[key] = None\n        return _failure("raised:" + type(exc).__name__)',
            )
        ),
    ),
    "bad_result_cached": (
        "step5/failure_not_cached",
        d(
            (
                "    reason = validate_result(name, value)\n    if reason:\n",
                "    CACHE[key] = value\n    reason = validate_result(name, value)\n    if reason:\n        CACHE.pop(key)\n"
                "        CACHE[key] = value\n",
            )
        ),
    ),
    "every_result_cached_before_check": (
        "step5/failure_not_cached",
        d(('        value = TOOLS[name]["fn"](**args)\n', '        value = CACHE[key] = TOOLS[name]["fn"](**args)\n')),
    ),
}
