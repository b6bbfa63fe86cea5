"""Plausible step-9 mistakes: each must fail the check it names, and no other step.

``coerce`` is judged over the spec's contract (put in ``TOOLS`` by each probe)
and ``call_coerced`` with the grader's ``call_tool``/``validate_args`` doubles,
so a coercion mistake costs step 9 alone.
"""

from __future__ import annotations

from ..catalog import d

_TABLE = 'COERCIONS = ("strip", "lower", "int_from_str")'
_SPACE = '_SPACE_CHARS = " \\t\\n\\r\\x0b\\x0c"'
_STRIP_NEW = "    new = bare if applied else value"
_STRIP_IF = '    applied = ["strip"] if rule.get("type") is str and bare != value else []'
_LOWER_IF = "    if allowed is not None and new not in allowed and new.lower() in allowed:"
_ALLOWED = '    allowed = rule.get("allowed")'
_LOWER_SET = '\n        new, applied = new.lower(), applied + ["lower"]'
_BARE = "    bare = value.strip(_SPACE_CHARS)"
_DIGITS_IF = "        if bare and all(char in _DIGIT_CHARS for char in bare):"
_DIGITS_BLOCK = _DIGITS_IF + '\n            return int(bare), ["int_from_str"]\n'
_INT_RETURN = '            return int(bare), ["int_from_str"]'
_INT_IF = '    if rule.get("type") is int:'
_NOT_STR = "    if not isinstance(value, str):\n        return value, []"
_UNKNOWN = '    if name not in TOOLS:\n        return args, []\n    contract = TOOLS[name]["args"]'
_UNLISTED = "        if arg not in contract:\n            continue"
_CONTRACT = '        return args, []\n    contract = TOOLS[name]["args"]'
_COPY = "    args = dict(raw_args)"
_SET = "            args[arg] = new\n"
_APPEND = '            coercions.append({"arg": arg, "from": value, "to": new, "rule": "+".join(applied)})'
_CHANGED = "        if applied:\n" + _SET + _APPEND
_RETURN = "    return args, coercions\n"
_DOOR = '    return {**call_tool(name, args), "coercions": coercions}'

MISTAKES: dict = {
    # -- the table does not name the three rules
    "coercions_without_lower": ("step9/coercions_table", d((_TABLE, 'COERCIONS = ("strip", "int_from_str")'))),
    "coercions_empty": ("step9/coercions_table", d((_TABLE, "COERCIONS = ()"))),
    "coercions_strip_named_trim": ("step9/coercions_table", d((_TABLE, _TABLE.replace('"strip"', '"trim"')))),
    # -- strip: one end only, spaces only, or not for `allowed` arguments
    "strip_right_end_only": (
        "step9/strip",
        d((_STRIP_NEW, "    new = value.rstrip(_SPACE_CHARS) if applied else value")),
    ),
    "strip_spaces_only": ("step9/strip", d((_SPACE, '_SPACE_CHARS = " "'))),
    "strip_skips_allowed_args": (
        "step9/strip",
        d((_STRIP_IF, _STRIP_IF.replace("is str and", 'is str and "allowed" not in rule and'))),
    ),
    # -- lower where it does not belong, or not after strip
    "lower_every_string": ("step9/lower", d((_LOWER_IF, "    if new.lower() != new:"))),
    "lower_without_checking_lower_form": (
        "step9/lower",
        d((_LOWER_IF, "    if allowed is not None and new not in allowed:")),
    ),
    "lower_tested_before_strip": (
        "step9/lower",
        d((_LOWER_IF, _LOWER_IF.replace("new.lower() in", "value.lower() in"))),
    ),
    # -- int_from_str too narrow
    "int_without_strip": (
        "step9/int_from_str",
        d((_DIGITS_IF, "        if value and all(char in _DIGIT_CHARS for char in value):")),
    ),
    "int_keeps_the_string": ("step9/int_from_str", d((_INT_RETURN, '            return bare, ["int_from_str"]'))),
    "int_refuses_leading_zero": (
        "step9/int_from_str",
        d((_DIGITS_IF, _DIGITS_IF.replace("if bare and", 'if bare and bare[0] != "0" and'))),
    ),
    "int_checks_the_range": (
        "step9/int_from_str",
        d((_DIGITS_IF, _DIGITS_IF.replace("):", ") and 1 <= int(bare) <= MAX_ROWS:"))),
    ),
    # -- coerced what is never coerced
    "int_by_isdigit": ("step9/never_coerced", d((_DIGITS_IF, "        if bare.isdigit():"))),
    "int_by_try_int": (
        "step9/never_coerced",
        d(
            (
                _DIGITS_BLOCK,
                '        try:\n            return int(bare), ["int_from_str"]\n'
                "        except ValueError:\n            pass\n",
            )
        ),
    ),
    "bool_to_int": (
        "step9/never_coerced",
        d((_NOT_STR, '    if isinstance(value, bool):\n        return int(value), ["int_from_str"]\n' + _NOT_STR)),
    ),
    "whole_float_to_int": (
        "step9/never_coerced",
        d(
            (
                _NOT_STR,
                "    if isinstance(value, float) and value.is_integer():\n"
                '        return int(value), ["int_from_str"]\n' + _NOT_STR,
            )
        ),
    ),
    "unknown_tool_uses_stock_contract": (
        "step9/never_coerced",
        d((_UNKNOWN, '    contract = TOOLS.get(name, TOOLS["stock_lookup"])["args"]')),
    ),
    "unlisted_args_stripped": (
        "step9/never_coerced",
        d(
            (
                _UNLISTED,
                "        if arg not in contract:\n"
                "            args[arg] = value.strip() if isinstance(value, str) else value\n"
                "            continue",
            )
        ),
    ),
    # -- the rules do not follow the table
    "contract_read_at_import": (
        "step9/follows_contract",
        d((_CONTRACT, "        return args, []\n    contract = _STOCK_ARGS")),
    ),
    "lower_against_regions": (
        "step9/follows_contract",
        d((_ALLOWED, '    allowed = REGIONS if "allowed" in rule else None')),
    ),
    "int_only_for_bounded_args": ("step9/follows_contract", d((_INT_IF, '    if "max" in rule:'))),
    "strip_whatever_the_type": (
        "step9/follows_contract",
        d((_STRIP_IF, '    applied = ["strip"] if bare != value else []')),
    ),
    # -- keys added or removed, input changed
    "input_changed_in_place": ("step9/same_keys_input_unchanged", d((_COPY, "    args = raw_args"))),
    "default_limit_added": ("step9/same_keys_input_unchanged", d((_COPY, '    args = {"limit": 1, **raw_args}'))),
    "unlisted_args_dropped": (
        "step9/same_keys_input_unchanged",
        d((_UNLISTED, "        if arg not in contract:\n            del args[arg]\n            continue")),
    ),
    "raw_dict_written_too": (
        "step9/same_keys_input_unchanged",
        d((_SET, "            args[arg] = raw_args[arg] = new\n")),
    ),
    # -- the ledger
    "ledger_names_last_rule": ("step9/ledger", d((_APPEND, _APPEND.replace('"+".join(applied)', "applied[-1]")))),
    "ledger_entry_for_every_arg": (
        "step9/ledger",
        d((_CHANGED, "        args[arg] = new\n" + _APPEND.replace("    ", "", 1))),
    ),
    "ledger_from_to_swapped": (
        "step9/ledger",
        d((_APPEND, _APPEND.replace('"from": value, "to": new', '"from": new, "to": value'))),
    ),
    "ledger_rule_unnamed": ("step9/ledger", d((_APPEND, _APPEND.replace('"+".join(applied)', '"coerced"')))),
    # -- coerce runs a body
    "coerce_tries_the_call": ("step9/no_body_run", d((_CONTRACT, _CONTRACT + "\n    call_tool(name, dict(raw_args))"))),
    "coerce_probes_the_tool": (
        "step9/no_body_run",
        d((_RETURN, '    try:\n        TOOLS[name]["fn"](**args)\n    except Exception:\n        pass\n' + _RETURN)),
    ),
    "coerce_calls_when_valid": (
        "step9/no_body_run",
        d((_RETURN, "    if not validate_args(name, args):\n        call_tool(name, args)\n" + _RETURN)),
    ),
    # -- call_coerced does not pass the coerced call through call_tool once
    "call_coerced_sends_raw": (
        "step9/call_coerced",
        d((_DOOR, _DOOR.replace("call_tool(name, args)", "call_tool(name, raw_args)"))),
    ),
    "call_coerced_key_named_ledger": (
        "step9/call_coerced",
        d((_DOOR, _DOOR.replace('"coercions": coercions', '"ledger": coercions'))),
    ),
    "call_coerced_calls_twice": ("step9/call_coerced", d((_DOOR, "    call_tool(name, raw_args)\n" + _DOOR))),
    "call_coerced_drops_error": (
        "step9/call_coerced",
        d(
            (
                _DOOR,
                '    out = call_tool(name, args)\n    return {"ok": out["ok"], '
                '"value": out["value"], "coercions": coercions}',
            )
        ),
    ),
    # -- a call still invalid after coercion
    "refusal_without_prefix": (
        "step9/call_coerced_refused",
        d(
            (
                _DOOR,
                "    reason = validate_args(name, args)\n    if reason:\n"
                '        return {"ok": False, "value": None, "error": reason, '
                '"coercions": coercions}\n' + _DOOR,
            )
        ),
    ),
    "refusal_error_rewritten": (
        "step9/call_coerced_refused",
        d(
            (
                _DOOR,
                '    out = call_tool(name, args)\n    if not out["ok"]:\n'
                '        out = {**out, "error": out["error"].replace("args:", "")}\n'
                '    return {**out, "coercions": coercions}',
            )
        ),
    ),
    "refusal_retried_raw": (
        "step9/call_coerced_refused",
        d(
            (
                _DOOR,
                '    out = call_tool(name, args)\n    if not out["ok"]:\n'
                "        out = call_tool(name, raw_args)\n"
                '    return {**out, "coercions": coercions}',
            )
        ),
    ),
    "refusal_drops_coercions": (
        "step9/call_coerced_refused",
        d(
            (
                _DOOR,
                '    out = call_tool(name, args)\n    if not out["ok"]:\n'
                '        return out\n    return {**out, "coercions": coercions}',
            )
        ),
    ),
    # -- each whitespace character, each end, on every seed: a partial strip fails on all of them
    "strip_misses_vertical_tab": ("step9/strip", d((_SPACE, '_SPACE_CHARS = " \\t\\n\\r\\x0c"'))),
    "strip_tabs_and_spaces_only": ("step9/strip", d((_SPACE, '_SPACE_CHARS = " \\t"'))),
    "strip_only_when_both_ends_padded": (
        "step9/strip",
        d((_STRIP_IF, _STRIP_IF.replace("bare != value", "value[:1].isspace() and value[-1:].isspace()"))),
    ),
    # -- every non-ASCII digit, sign and separator on every seed
    "int_by_isdecimal": ("step9/never_coerced", d((_DIGITS_IF, "        if bare.isdecimal():"))),
    "int_accepts_a_plus_sign": (
        "step9/never_coerced",
        d((_DIGITS_IF, '        if bare.lstrip("+") and all(char in _DIGIT_CHARS for char in bare.lstrip("+")):')),
    ),
    "int_ignores_underscores": (
        "step9/never_coerced",
        d((_DIGITS_IF, '        if bare.strip("_") and all(char in _DIGIT_CHARS + "_" for char in bare):')),
    ),
    # -- a call valid once coerced whose result is refused, on every seed
    "result_failure_drops_coercions": (
        "step9/call_coerced",
        d(
            (
                _DOOR,
                "    out = call_tool(name, args)\n"
                '    if out["error"].startswith("result:"):\n        return out\n'
                '    return {**out, "coercions": coercions}',
            )
        ),
    ),
    "result_failure_retried_raw": (
        "step9/call_coerced",
        d(
            (
                _DOOR,
                "    out = call_tool(name, args)\n"
                '    if out["error"].startswith("result:"):\n'
                "        out = call_tool(name, raw_args)\n"
                '    return {**out, "coercions": coercions}',
            )
        ),
    ),
    "result_failure_without_ledger": (
        "step9/call_coerced",
        d(
            (
                _DOOR,
                "    out = call_tool(name, args)\n"
                '    return {**out, "coercions": coercions if out["ok"] or '
                'out["error"].startswith("args:") else []}',
            )
        ),
    ),
    # -- (part-two hints) strip is ASCII whitespace only and lower is str.lower, on every seed: a str.strip() that
    #    also eats '\u00a0'/'\u3000', or a casefold that turns 'ſ' into 's', is a different rule.
    "strip_unicode_blanks": ("step9/strip", d((_BARE, "    bare = value.strip()"))),
    "int_from_str_strips_unicode": (
        "step9/never_coerced",
        d((_BARE, '    bare = value.strip() if rule.get("type") is int else value.strip(_SPACE_CHARS)')),
    ),
    "lower_by_casefold": (
        "step9/lower",
        d(
            (
                _LOWER_IF + _LOWER_SET,
                _LOWER_IF.replace("new.lower()", "new.casefold()")
                + _LOWER_SET.replace("new.lower()", "new.casefold()"),
            )
        ),
    ),
    "lower_ascii_letters_only": (
        "step9/lower",
        d(
            (
                _LOWER_IF + _LOWER_SET,
                "    ascii_lower = new.translate(_ASCII_LOWER)\n"
                + _LOWER_IF.replace("new.lower()", "ascii_lower")
                + _LOWER_SET.replace("new.lower()", "ascii_lower"),
            ),
            (
                _SPACE,
                _SPACE + '\n_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")',
            ),
        ),
    ),
    # -- a fourth rule (follows_contract and never_coerced send values only an unlisted rule would change)
    "bool_from_str_rule": (
        "step9/follows_contract",
        d(
            (
                _INT_IF,
                '    if rule.get("type") is bool and value.strip(_SPACE_CHARS).lower() in ("true", "false"):\n'
                '        return value.strip(_SPACE_CHARS).lower() == "true", ["bool_from_str"]\n' + _INT_IF,
            )
        ),
    ),
    "yes_no_words_rule": (
        "step9/follows_contract",
        d(
            (
                _INT_IF,
                '    words = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}\n'
                '    if rule.get("type") is bool and value.lower() in words:\n'
                '        return words[value.lower()], ["bool_from_str"]\n' + _INT_IF,
            )
        ),
    ),
    "bool_word_for_any_argument": (
        "step9/never_coerced",
        d(
            (
                _INT_IF,
                '    if value in ("true", "false"):\n        return value == "true", ["bool_from_str"]\n' + _INT_IF,
            )
        ),
    ),
    "null_word_to_none": (
        "step9/never_coerced",
        d(
            (
                _INT_IF,
                '    if value.strip(_SPACE_CHARS).lower() in ("null", "none"):\n        return None, ["none_from_str"]\n'
                + _INT_IF,
            )
        ),
    ),
}
