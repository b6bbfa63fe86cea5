"""Plausible step-2 mistakes: each must fail the check it names, and no other step.

Grouped by the classes of cases the checks send: a rule the
contract does not state, every argument treated as required, ``bool`` refused
where a contract asks for ``bool``, types judged by something other than the
rule's type, and allowed values or bounds compared loosely. Each class is
sent whole on every run (``grader/checks/cases.py``), so each mistake fails on
every seed.
"""

from __future__ import annotations

from ..catalog import d

_TYPE_REFUSED = '            return f"type:{arg}"\n'
_REQUIRED = '            if rule.get("required"):\n                return f"missing:{arg}"\n            continue\n'
_BOOL_RULE = "    if isinstance(value, bool) and expected is not bool:\n        return False\n"
_TYPE_CHECK = 'if not _has_type(value, rule["type"]):'
_ALLOWED = 'if "allowed" in rule and value not in rule["allowed"]:'
_MIN_CHECK = 'if "min" in rule and value < rule["min"]:\n            return f"range:{arg}"'


def _after_type_check(line: str) -> tuple:
    """An edit adding ``line`` (and a refusal) right after the type check of validate_args."""
    return (_TYPE_REFUSED, _TYPE_REFUSED + f'        if {line}:\n            return f"allowed:{{arg}}"\n')


_RANGE = (
    '        if "min" in rule and value < rule["min"]:\n            return f"range:{arg}"\n'
    '        if "max" in rule and value > rule["max"]:\n            return f"range:{arg}"'
)

MISTAKES: dict = {
    # -- a rule the contract does not state (valid_passes sends every class of str for sku)
    "sku_pattern_enforced": (
        "step2/valid_passes",
        d(_after_type_check('arg == "sku" and not __import__("re").fullmatch(r"SKU-\\d{4}", value)')),
    ),
    "sku_prefix_enforced": (
        "step2/valid_passes",
        d(_after_type_check('arg == "sku" and not value.startswith("SKU-")')),
    ),
    "sku_length_capped": ("step2/valid_passes", d(_after_type_check('arg == "sku" and not 1 <= len(value) <= 16'))),
    "str_ascii_without_spaces": (
        "step2/valid_passes",
        d(_after_type_check('isinstance(value, str) and (not value.isascii() or " " in value)')),
    ),
    # -- every argument treated as required (optional_args makes each one optional in turn)
    "required_ignored": ("step2/optional_args", d((_REQUIRED, '            return f"missing:{arg}"\n'))),
    "required_for_the_spec_arguments": (
        "step2/optional_args",
        d(
            (
                '            if rule.get("required"):',
                '            if rule.get("required") or arg in ("sku", "region", "limit"):',
            )
        ),
    ),
    "optional_absent_read": (
        "step2/optional_args",
        d((_REQUIRED, '            if rule.get("required"):\n                return f"missing:{arg}"\n')),
    ),
    # -- bool refused where the contract asks for bool (declared_types adds a bool argument)
    "bool_refused_for_numbers_and_flags": (
        "step2/declared_types",
        d((_BOOL_RULE, "    if isinstance(value, bool) and expected in (int, bool):\n        return False\n")),
    ),
    "bool_refused_in_validate_args": (
        "step2/declared_types",
        d((_TYPE_CHECK, 'if isinstance(value, bool) or not _has_type(value, rule["type"]):')),
    ),
    "bool_by_exact_int_type": (
        "step2/declared_types",
        d((_BOOL_RULE, "    if isinstance(value, int) and type(value) is not int:\n        return False\n")),
    ),
    # -- types judged by something other than the rule's type object
    "bool_accepts_one_and_zero": (
        "step2/declared_types",
        d((_BOOL_RULE, "    if expected is bool:\n        return value in (True, False)\n" + _BOOL_RULE)),
    ),
    "float_from_numeric_str": (
        "step2/declared_types",
        d(
            (
                _BOOL_RULE,
                "    if expected is float and isinstance(value, str):\n"
                '        return value.replace(".", "", 1).isdigit()\n' + _BOOL_RULE,
            )
        ),
    ),
    "types_by_argument_name": (
        "step2/declared_types",
        d((_TYPE_CHECK, 'if not _has_type(value, {"sku": str, "region": str, "limit": int}.get(arg, str)):')),
    ),
    # -- allowed values and bounds compared loosely
    "region_unicode_normalised": (
        "step2/allowed_region",
        d(
            (
                _ALLOWED,
                'if "allowed" in rule and __import__("unicodedata").normalize("NFKC", value) not in rule["allowed"]:',
            )
        ),
    ),
    "region_no_break_space_dropped": (
        "step2/allowed_region",
        d((_ALLOWED, 'if "allowed" in rule and value.replace("\\xa0", "") not in rule["allowed"]:')),
    ),
    "region_whitespace_collapsed": (
        "step2/allowed_region",
        d((_ALLOWED, 'if "allowed" in rule and " ".join(value.split()) not in rule["allowed"]:')),
    ),
    "region_invisible_dropped": (
        "step2/allowed_region",
        d((_ALLOWED, 'if "allowed" in rule and value.replace("\\u200b", "") not in rule["allowed"]:')),
    ),
    "allowed_only_as_list": (
        "step2/reads_contract",
        d((_ALLOWED, 'if isinstance(rule.get("allowed"), list) and value not in rule["allowed"]:')),
    ),
    "bounds_read_together": (
        "step2/reads_contract",
        d(
            (
                _MIN_CHECK,
                'if "min" in rule and not rule["min"] <= value <= rule["max"]:\n            return f"range:{arg}"',
            )
        ),
    ),
    "min_exclusive_when_changed": (
        "step2/reads_contract",
        d(
            (
                _MIN_CHECK,
                'if "min" in rule and (value < rule["min"] or value == rule["min"] != 1):\n'
                '            return f"range:{arg}"',
            )
        ),
    ),
    # -- names compared loosely
    "argument_names_case_folded": (
        "step2/extra",
        d(
            (
                "    for arg in args:\n        if arg not in contract:\n",
                "    for arg in args:\n        if arg.lower() not in contract:\n",
            )
        ),
    ),
    "argument_names_stripped": (
        "step2/extra",
        d(
            (
                "    for arg in args:\n        if arg not in contract:\n",
                "    for arg in args:\n        if arg.strip() not in contract:\n",
            )
        ),
    ),
    "tool_name_stripped": (
        "step2/unknown_tool",
        d(
            (
                '    if name not in TOOLS:\n        return "unknown_tool"',
                '    if name.strip() not in TOOLS:\n        return "unknown_tool"\n    name = name.strip()',
            )
        ),
    ),
    # -- a rule with one bound alone (reads_contract sends min only and max only on every run)
    "range_only_with_both_bounds": (
        "step2/reads_contract",
        d(
            (
                _RANGE,
                '        if "min" in rule and "max" in rule and not rule["min"] <= value <= rule["max"]:\n'
                '            return f"range:{arg}"',
            )
        ),
    ),
    "min_defaults_to_one": (
        "step2/reads_contract",
        d(
            (
                _RANGE,
                '        if "min" in rule or "max" in rule:\n'
                '            if value < rule.get("min", 1):\n                return f"range:{arg}"\n'
                '            if "max" in rule and value > rule["max"]:\n                return f"range:{arg}"',
            )
        ),
    ),
    "max_checked_inside_min": (
        "step2/reads_contract",
        d(
            (
                _RANGE,
                '        if "min" in rule:\n'
                '            if value < rule["min"]:\n                return f"range:{arg}"\n'
                '            if "max" in rule and value > rule["max"]:\n                return f"range:{arg}"',
            )
        ),
    ),
    "range_object_of_both_bounds": (
        "step2/reads_contract",
        d(
            (
                _RANGE,
                "        try:\n"
                '            if value not in range(rule["min"], rule["max"] + 1):\n'
                '                return f"range:{arg}"\n'
                "        except KeyError:\n"
                "            pass  # no bounds",
            )
        ),
    ),
}
