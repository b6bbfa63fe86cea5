"""Plausible step-10 mistakes: each must fail the check it names, and no other step."""

from __future__ import annotations

from ..catalog import d

_ARG = 'arg = reason.partition(":")[2] or None'
_VALUE = '"value": args.get(arg) if arg else None'
_EMPTY = '{"error": "", "arg": None, "value": None, "message": "", "suggestion": None}'
_VALID = "    if not reason:\n        return " + _EMPTY + "\n"
_SHOWN = 'shown = f"Argument {arg!r} = {args[arg]!r}"'
_WANTED = "wanted = value.strip(_ASCII_SPACE).lower()"
_EXACT = "    if wanted in allowed:\n        return wanted\n"
_INT_FIX = (
    "def _int_fix(value: Any) -> Any:\n"
    '    """``int(value)`` when ``value`` is a str of ASCII digits (after strip), else ``None``."""\n'
)
_SUGGEST_CHECK = "if fixed is None or validate_args(name, fixed):"
_EXTRA = "        return {key: value for key, value in args.items() if key != arg}\n"
_NO_FIX = '    if kind not in ("allowed", "type"):\n'
_FIRST = "    first = call_tool(name, args)\n"
_RETRY = 'return {**call_tool(name, explanation["suggestion"]), "suggested": True, "explanation": explanation}'
_UNFIXED_RETURN = '        return {**first, "suggested": False, "explanation": explanation}'
_FIRST_OK_RETURN = '        return {**first, "suggested": False, "explanation": None}'

MISTAKES: dict = {
    # -- the fields next to the reason: the argument and its value.
    "explain_reason_with_args_prefix": (
        "step10/reason",
        d(('return {"error": reason, "arg": arg,', 'return {"error": "args:" + reason, "arg": arg,')),
    ),
    "explain_missing_value_is_the_name": ("step10/reason", d((_VALUE, '"value": args.get(arg, arg) if arg else None'))),
    "explain_arg_is_the_kind": ("step10/reason", d((_ARG, 'arg = reason.partition(":")[0] or None'))),
    "explain_value_is_the_whole_args": ("step10/reason", d((_VALUE, '"value": args if arg else None'))),
    # -- valid arguments.
    "explain_valid_suggests_the_args": (
        "step10/valid",
        d(
            (
                _VALID,
                '    if not reason:\n        return {"error": "", "arg": None, "value": None, "message": "", "suggestion": dict(args)}\n',
            )
        ),
    ),
    "explain_valid_says_so": ("step10/valid", d((_VALID, _VALID.replace('"message": ""', '"message": "Valid."')))),
    "explain_valid_returns_none": ("step10/valid", d((_VALID, "    if not reason:\n        return None\n"))),
    "explain_valid_returns_empty_dict": ("step10/valid", d((_VALID, "    if not reason:\n        return {}\n"))),
    # -- the message.
    "message_value_without_repr": ("step10/message", d((_SHOWN, 'shown = f"Argument {arg!r} = {args[arg]}"'))),
    "message_range_only_max": (
        "step10/message",
        d(
            (
                "return f\"accepted: {rule.get('min')}..{rule.get('max')}\"",
                "return f\"accepted: at most {rule.get('max')}\"",
            )
        ),
    ),
    "message_lists_the_spec_regions": (
        "step10/message",
        d(('", ".join(repr(option) for option in rule["allowed"])', '", ".join(repr(option) for option in REGIONS)')),
    ),
    "message_missing_without_name": (
        "step10/message",
        d(
            (
                'return f"{name} needs the argument {arg!r}, which was not given."',
                'return f"{name} needs an argument that was not given."',
            )
        ),
    ),
    # -- allowed: one honest fix only.
    "allowed_no_strip": ("step10/suggest_allowed", d((_WANTED, "wanted = value.lower()"))),
    "allowed_no_lower": ("step10/suggest_allowed", d((_WANTED, "wanted = value.strip(_ASCII_SPACE)"))),
    "allowed_from_the_spec_regions": (
        "step10/suggest_allowed",
        d(('fixed = _allowed_fix(args[arg], rule["allowed"])', "fixed = _allowed_fix(args[arg], REGIONS)")),
    ),
    "allowed_near_before_exact": ("step10/suggest_allowed", d((_EXACT, ""))),
    "allowed_substitutions_only": (
        "step10/suggest_allowed",
        d(("    return any(longer[:i] + longer[i + 1:] == shorter for i in range(len(longer)))", "    return False")),
    ),
    # -- type of an int argument: int_from_str, and only when it then validates.
    "int_fix_isdigit": (
        "step10/suggest_int",
        d(("if text and all(char in _ASCII_DIGITS for char in text):", "if text.isdigit():")),
    ),
    "suggestion_not_validated": ("step10/suggest_int", d((_SUGGEST_CHECK, "if fixed is None:"))),
    "int_fix_from_float": (
        "step10/suggest_int",
        d(
            (
                _INT_FIX,
                _INT_FIX + "    if isinstance(value, float) and value.is_integer():\n        return int(value)\n",
            )
        ),
    ),
    "int_fix_from_bool": (
        "step10/suggest_int",
        d((_INT_FIX, _INT_FIX + "    if isinstance(value, bool):\n        return int(value)\n")),
    ),
    # -- extra: the arguments without it.
    "extra_kept_when_none": (
        "step10/suggest_extra",
        d(('    if kind == "extra":\n' + _EXTRA, '    if kind == "extra" and args[arg] is not None:\n' + _EXTRA)),
    ),
    "extra_removed_case_insensitively": (
        "step10/suggest_extra",
        d((_EXTRA, "        return {key: value for key, value in args.items() if key.lower() != arg.lower()}\n")),
    ),
    "extra_removed_after_strip": (
        "step10/suggest_extra",
        d((_EXTRA, "        return {key: value for key, value in args.items() if key.strip() != arg.strip()}\n")),
    ),
    # -- no fix that invents a value.
    "range_high_set_to_max": (
        "step10/no_invented_fix",
        d(
            (
                _NO_FIX,
                '    if kind == "range" and args[arg] > TOOLS[name]["args"][arg]["max"]:\n'
                '        return {**args, arg: TOOLS[name]["args"][arg]["max"]}\n' + _NO_FIX,
            )
        ),
    ),
    "missing_limit_defaults": (
        "step10/no_invented_fix",
        d((_NO_FIX, '    if reason == "missing:limit":\n        return {**args, "limit": MAX_ROWS}\n' + _NO_FIX)),
    ),
    "missing_region_falls_back": (
        "step10/no_invented_fix",
        d(
            (
                _NO_FIX,
                '    if reason == "missing:region":\n        return {**args, "region": FALLBACK_REGION}\n' + _NO_FIX,
            )
        ),
    ),
    # -- explain runs nothing.
    "explain_tries_the_suggestion": (
        "step10/explain_no_body",
        d((_SUGGEST_CHECK, 'if fixed is None or not call_tool(name, fixed)["ok"]:')),
    ),
    "explain_runs_a_valid_call": (
        "step10/explain_no_body",
        d((_VALID, '    if not reason:\n        TOOLS[name]["fn"](**args)\n        return ' + _EMPTY + "\n")),
    ),
    "explain_checks_through_call_tool": (
        "step10/explain_no_body",
        d(
            (
                "    reason = validate_args(name, args)\n    if not reason:",
                '    reason = call_tool(name, args)["error"].removeprefix("args:")\n'
                '    reason = "" if reason.startswith("result:") else reason\n    if not reason:',
            )
        ),
    ),
    # -- the retry with a suggestion.
    "retry_with_the_same_args": (
        "step10/retry_fixed",
        d((_RETRY, _RETRY.replace('explanation["suggestion"]', "args", 1))),
    ),
    "retry_not_marked_suggested": (
        "step10/retry_fixed",
        d((_RETRY, _RETRY.replace('"suggested": True', '"suggested": False'))),
    ),
    "retry_returns_the_first_dict": (
        "step10/retry_fixed",
        d(
            (
                _RETRY,
                'call_tool(name, explanation["suggestion"])\n'
                '    return {**first, "suggested": True, "explanation": explanation}',
            )
        ),
    ),
    # -- no fix: no second call.
    "unfixed_marked_suggested": (
        "step10/retry_unfixed",
        d((_UNFIXED_RETURN, '        return {**first, "suggested": True, "explanation": explanation}')),
    ),
    "unfixed_explanation_dropped": (
        "step10/retry_unfixed",
        d((_UNFIXED_RETURN, '        return {**first, "suggested": False, "explanation": None}')),
    ),
    "unfixed_retried_with_none": (
        "step10/retry_unfixed",
        d(
            (
                _UNFIXED_RETURN,
                '        return {**call_tool(name, explanation["suggestion"] or args), "suggested": False, '
                '"explanation": explanation}',
            )
        ),
    ),
    # -- valid first call.
    "valid_called_twice": ("step10/retry_valid", d((_FIRST, "    call_tool(name, args)\n" + _FIRST))),
    "valid_failure_explained_by_its_error": (
        "step10/retry_valid",
        d(
            (
                _FIRST_OK_RETURN,
                '        return {**first, "suggested": False, '
                '"explanation": None if first["ok"] else {"error": first["error"]}}',
            )
        ),
    ),
    "valid_without_suggested": (
        "step10/retry_valid",
        d((_FIRST_OK_RETURN, '        return {**first, "explanation": None}')),
    ),
    # -- each edit at each place on every seed: a one-sided edit distance misses a fix every time.
    "allowed_deletions_not_counted": (
        "step10/suggest_allowed",
        d(
            (
                "    longer, shorter = (a, b) if len(a) > len(b) else (b, a)",
                "    if len(a) < len(b):\n        return False\n    longer, shorter = a, b",
            )
        ),
    ),
    "allowed_insertions_not_counted": (
        "step10/suggest_allowed",
        d(
            (
                "    longer, shorter = (a, b) if len(a) > len(b) else (b, a)",
                "    if len(a) > len(b):\n        return False\n    longer, shorter = b, a",
            )
        ),
    ),
    "allowed_letters_compared_in_place": (
        "step10/suggest_allowed",
        d(
            (
                "    if len(a) == len(b):\n        return sum(x != y for x, y in zip(a, b)) == 1",
                "    if abs(len(a) - len(b)) <= 1:\n        return sum(x != y for x, y in zip(a, b)) + abs(len(a) - len(b)) == 1",
            )
        ),
    ),
    # -- the retry judged on its own logic (the grader's explain in that name), on every seed.
    "retry_with_its_own_region_fix": (
        "step10/retry_fixed",
        d(
            (
                _RETRY,
                'return {**call_tool(name, {**args, "region": str(args.get("region")).strip().lower()}), '
                '"suggested": True, "explanation": explanation}',
            )
        ),
    ),
    "retry_only_for_allowed": (
        "step10/retry_fixed",
        d(
            (
                '    if explanation["suggestion"] is None:\n',
                '    if explanation["suggestion"] is None or not explanation["error"].startswith("allowed:"):\n',
            )
        ),
    ),
    "retry_explains_the_suggestion": (
        "step10/retry_fixed",
        d(
            (
                _RETRY,
                'return {**call_tool(name, explanation["suggestion"]), "suggested": True, '
                '"explanation": explain(name, explanation["suggestion"])}',
            )
        ),
    ),
    # -- own route: explain builds its int fix on step 9's coerce, and coerce accepts "３" and "²".
    #    Step 9 must fail, step 10 not (its probes put the grader's coerce in that name).
    "explain_on_a_broken_coerce": (
        "step9/never_coerced",
        d(
            (
                '    elif rule["type"] is int:\n        fixed = _int_fix(args[arg])\n',
                '    elif rule["type"] is int:\n        fixed = coerce(name, args)[0][arg]\n'
                "        fixed = fixed if type(fixed) is int else None\n",
            ),
            ("if bare and all(char in _DIGIT_CHARS for char in bare):", "if bare.isdigit():"),
        ),
    ),
    # -- (part-two hints) a suggestion is a corrected copy: the caller's dict is the same after explain and retry.
    "extra_pops_from_callers_args": (
        "step10/suggest_extra",
        d((_EXTRA, "        args.pop(arg)\n        return args\n")),
    ),
    "fix_written_into_callers_args": (
        "step10/suggest_allowed",
        d(
            (
                "    return None if fixed is None else {**args, arg: fixed}",
                "    if fixed is None:\n        return None\n    args[arg] = fixed\n    return args",
            )
        ),
    ),
    "retry_pops_extra_from_callers_args": (
        "step10/retry_fixed",
        d(
            (
                _RETRY,
                'if explanation["error"].startswith("extra:"):\n        args.pop(explanation["arg"])\n'
                '        return {**call_tool(name, args), "suggested": True, "explanation": explanation}\n    '
                + _RETRY,
            )
        ),
    ),
    # -- (part-two hints) a valid first call refused by its result has no explanation.
    "valid_result_failure_explained": (
        "step10/retry_valid",
        d(
            (
                _FIRST_OK_RETURN,
                '        return {**first, "suggested": False, "explanation": None if first["ok"] else explanation}',
            )
        ),
    ),
    # -- (part-two hints) one edit is one insertion, deletion or substitution: a swap of two letters is two.
    "transposition_is_one_edit": (
        "step10/suggest_allowed",
        d(
            (
                "    if len(a) == len(b):\n        return sum(x != y for x, y in zip(a, b)) == 1",
                "    if len(a) == len(b):\n        diffs = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]\n"
                "        swapped = (len(diffs) == 2 and diffs[1] == diffs[0] + 1 and a[diffs[0]] == b[diffs[1]]\n"
                "                   and a[diffs[1]] == b[diffs[0]])\n        return len(diffs) == 1 or swapped",
            )
        ),
    ),
    # -- (part-two hints) step 9's strip and lower (ASCII whitespace, str.lower), not str.strip() or casefold.
    "allowed_fix_strips_unicode": ("step10/suggest_allowed", d((_WANTED, "wanted = value.strip().lower()"))),
    "allowed_fix_by_casefold": (
        "step10/suggest_allowed",
        d((_WANTED, "wanted = value.strip(_ASCII_SPACE).casefold()")),
    ),
    "int_fix_strips_unicode": (
        "step10/suggest_int",
        d(("    text = value.strip(_ASCII_SPACE)\n", "    text = value.strip()\n")),
    ),
}
