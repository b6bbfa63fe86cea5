"""Planted defects of step 9: one per check, each rejected by its check and by no other step."""

from __future__ import annotations

from ..catalog import d

_TABLE = 'COERCIONS = ("strip", "lower", "int_from_str")'
_STRIP_NEW = "    new = bare if applied else value"
_LOWER_IF = "    if allowed is not None and new not in allowed and new.lower() in allowed:"
_DIGITS_IF = "        if bare and all(char in _DIGIT_CHARS for char in bare):"
_CONTRACT = '        return args, []\n    contract = TOOLS[name]["args"]'
_COPY = "    args = dict(raw_args)"
_ENTRY = '"rule": "+".join(applied)})'
_DOOR = '    return {**call_tool(name, args), "coercions": coercions}'

DEFECTS: dict = {
    "step9/coercions_table": d(
        (_TABLE, _TABLE.replace('"int_from_str"', '"to_int"')), why="the int rule under another name"
    ),
    "step9/strip": d(
        (_STRIP_NEW, "    new = value.lstrip(_SPACE_CHARS) if applied else value"), why="only the left end stripped"
    ),
    "step9/lower": d(
        (_LOWER_IF, "    if allowed is not None and new.lower() != new:"),
        why="lower-cased although the lower form is not allowed",
    ),
    "step9/int_from_str": d(
        (_DIGITS_IF, "        if value and all(char in _DIGIT_CHARS for char in value):"),
        why="digits read before strip: ' 3 ' left alone",
    ),
    "step9/never_coerced": d(
        (_DIGITS_IF, "        if bare.isdigit():"), why="str.isdigit() lets '３', '²', '٣' through"
    ),
    "step9/follows_contract": d(
        (_CONTRACT, "        return args, []\n    contract = _STOCK_ARGS"),
        why="the import-time contract, not TOOLS when called",
    ),
    "step9/same_keys_input_unchanged": d((_COPY, "    args = raw_args"), why="the input changed in place"),
    "step9/ledger": d((_ENTRY, '"rule": applied[-1]})'), why="only the last rule named"),
    "step9/no_body_run": d(
        (_CONTRACT, _CONTRACT + "\n    call_tool(name, dict(raw_args))"), why="coerce tries the call"
    ),
    "step9/call_coerced": d(
        (_DOOR, '    return {**call_tool(name, raw_args), "coercions": coercions}'),
        why="the raw arguments sent to call_tool",
    ),
    "step9/call_coerced_refused": d(
        (
            _DOOR,
            "    reason = validate_args(name, args)\n    if reason:\n"
            '        return {"ok": False, "value": None, "error": reason, '
            '"coercions": coercions}\n' + _DOOR,
        ),
        why="its own refusal, without the args: prefix",
    ),
}
