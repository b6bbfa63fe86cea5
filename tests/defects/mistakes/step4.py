"""Plausible step-4 mistakes: each must fail the check it names, and no other step.

``validate_result`` is judged directly over every class of bad value on
every run; ``call_tool``'s use of it is judged with the grader's own
``validate_args`` and ``cache_key``, by the ``error`` alone.
"""

from __future__ import annotations

from ..catalog import d

_ROW_GUARD = "    if not isinstance(row, dict):\n        return False\n"
_TOO_BIG = 'if len(rows) > rows_rule["max_len"]:'
_RESULT_REFUSED = '    if reason:\n        return _failure("result:" + reason)'
_SHAPE_START = '    returns = TOOLS[name]["returns"]\n    if not isinstance(value, dict):\n        return "shape"\n'

MISTAKES: dict = {
    # -- "each row is a dict" not checked first: a row None, 3 or "x" raises instead of giving shape
    "row_dict_guard_missing": ("step4/shape_bad_row", d((_ROW_GUARD, ""))),
    "row_guard_by_truth": ("step4/shape_bad_row", d((_ROW_GUARD, "    if not row:\n        return False\n"))),
    "row_guard_for_str_only": (
        "step4/shape_bad_row",
        d((_ROW_GUARD, "    if isinstance(row, str):\n        return False\n")),
    ),
    # -- the row fields' types judged loosely (a bool or a float passes as an int)
    "row_count_by_isinstance": (
        "step4/shape_bad_row",
        d(
            (
                '    return all(field in row and _has_type(row[field], rule["type"]) for field, rule in item.items())',
                '    return all(field in row and isinstance(row[field], rule["type"]) for field, rule in item.items())',
            )
        ),
    ),
    "row_fields_present_only": (
        "step4/shape_bad_row",
        d(
            (
                '    return all(field in row and _has_type(row[field], rule["type"]) for field, rule in item.items())',
                "    return all(field in row for field in item)",
            )
        ),
    ),
    # -- the size boundary off by one (a result of exactly max_len rows is fine)
    "too_big_at_max_len": ("step4/valid_passes", d((_TOO_BIG, 'if len(rows) >= rows_rule["max_len"]:'))),
    "too_big_from_max_rows_minus_one": (
        "step4/valid_passes",
        d((_TOO_BIG, 'if len(rows) > rows_rule["max_len"] - 1:')),
    ),
    "count_zero_is_range": (
        "step4/valid_passes",
        d(('if "min" in rule and row[field] < rule["min"]:', 'if "min" in rule and row[field] < rule["min"] + 1:')),
    ),
    # -- call_tool's result refusal written another way
    "result_reason_without_prefix": (
        "step4/call_tool_result_prefix",
        d((_RESULT_REFUSED, "    if reason:\n        return _failure(reason)")),
    ),
    "result_prefix_misspelt": (
        "step4/call_tool_result_prefix",
        d((_RESULT_REFUSED, '    if reason:\n        return _failure("results:" + reason)')),
    ),
    "result_refused_as_raised": (
        "step4/call_tool_result_prefix",
        d((_RESULT_REFUSED, '    if reason:\n        return _failure("raised:" + reason)')),
    ),
    # -- a refused result kept in the failure (LAB_SPEC step 4: value None)
    "result_failure_keeps_value": (
        "step4/call_tool_result_prefix",
        d(
            (
                _RESULT_REFUSED,
                '    if reason:\n        return {"ok": False, "value": value, "error": "result:" + reason}',
            )
        ),
    ),
    "result_failure_keeps_rows": (
        "step4/call_tool_result_prefix",
        d(
            (
                _RESULT_REFUSED,
                "    if reason:\n"
                '        rows = value.get("rows") if isinstance(value, dict) else None\n'
                '        return {"ok": False, "value": rows, "error": "result:" + reason}',
            )
        ),
    ),
    "result_failure_empty_value": (
        "step4/call_tool_result_prefix",
        d((_RESULT_REFUSED, '    if reason:\n        return {"ok": False, "value": {}, "error": "result:" + reason}')),
    ),
    "result_failure_ok_none": (
        "step4/call_tool_result_prefix",
        d((_RESULT_REFUSED, '    if reason:\n        return {"ok": None, "value": None, "error": "result:" + reason}')),
    ),
    # -- empty judged before the shape: rows missing or of another type gives 'empty' (the hint names the order)
    "empty_checked_before_shape": (
        "step4/shape_missing_key",
        d((_SHAPE_START, _SHAPE_START + '    if not value.get("rows"):\n        return "empty"\n')),
    ),
}
