"""Planted defects of step 10: one per check, each rejected by its check and by no other step."""

from __future__ import annotations

from ..catalog import d

_EMPTY = '{"error": "", "arg": None, "value": None, "message": "", "suggestion": None}'
_VALID = "    if not reason:\n        return " + _EMPTY + "\n"
_NO_FIX = (
    '    if kind not in ("allowed", "type"):\n'
    "        # range, missing, unknown_tool: any fix would invent a value.\n        return None\n"
)
_UNFIXED_RETURN = '        return {**first, "suggested": False, "explanation": explanation}'
_FIRST_OK_RETURN = '        return {**first, "suggested": False, "explanation": None}'

DEFECTS: dict = {
    "step10/reason": d(('"value": args.get(arg) if arg else None', '"value": None'), why="value always None"),
    "step10/valid": d(
        (_VALID, _VALID.replace('"message": ""', '"message": "ok"')), why="valid arguments get a message"
    ),
    "step10/message": d(
        (
            'return "accepted values: " + ", ".join(repr(option) for option in rule["allowed"])',
            'return "accepted values: see the contract"',
        ),
        why="the allowed values are not listed",
    ),
    "step10/suggest_allowed": d(
        ("return near.pop() if len(near) == 1 else None", "return near.pop() if near else None"),
        why="one of two candidates picked",
    ),
    "step10/suggest_int": d(
        (
            "if text and all(char in _ASCII_DIGITS for char in text):",
            'if text.lstrip("+-") and all(char in _ASCII_DIGITS for char in text.lstrip("+-")):',
        ),
        why="a sign is accepted: '+3' -> 3",
    ),
    "step10/suggest_extra": d(
        ("        return {key: value for key, value in args.items() if key != arg}\n", "        return None\n"),
        why="no suggestion for an extra argument",
    ),
    "step10/no_invented_fix": d(
        (
            _NO_FIX,
            '    if kind == "range":\n        rule = TOOLS[name]["args"][arg]\n'
            '        return {**args, arg: min(max(args[arg], rule["min"]), rule["max"])}\n' + _NO_FIX,
        ),
        why="an out-of-range value is clamped as a suggestion",
    ),
    "step10/explain_no_body": d(
        (_VALID, "    if not reason:\n        call_tool(name, args)\n        return " + _EMPTY + "\n"),
        why="explain tries a valid call",
    ),
    "step10/retry_fixed": d(
        ('call_tool(name, explanation["suggestion"])', 'call_tool(name, {**args, **explanation["suggestion"]})'),
        why="the retry merges the suggestion into the original arguments",
    ),
    "step10/retry_unfixed": d(
        (_UNFIXED_RETURN, '        return {**call_tool(name, args), "suggested": False, "explanation": explanation}'),
        why="a plain second call without a fix",
    ),
    "step10/retry_valid": d(
        (_FIRST_OK_RETURN, '        return {**first, "suggested": False, "explanation": explain(name, args)}'),
        why="explanation is explain's dict for valid arguments",
    ),
}
