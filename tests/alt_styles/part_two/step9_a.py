"""Step 9 in another style: a list of rule functions run in order, regular expressions, a list-valued ledger rule.

Appended to the reference's steps 1-8 it gives a correct module. Differences
from the reference on purpose: COERCIONS is a tuple of ``(name, function)``
pairs that ``coerce`` runs in order (each returns the new value or ``None``
for "does not apply"), ASCII digits are matched with ``re.fullmatch("[0-9]+")``
and ASCII whitespace with a character class, the ledger's ``rule`` is a list of
names, and ``call_coerced`` builds its dict with ``dict.update``.
"""
import re as _re

_EDGES = _re.compile(r"^[ \t\n\r\x0b\x0c]+|[ \t\n\r\x0b\x0c]+$")


def _rule_strip(rule, value):
    if rule.get("type") is not str or not isinstance(value, str):
        return None
    trimmed = _EDGES.sub("", value)
    return trimmed if trimmed != value else None


def _rule_lower(rule, value):
    if "allowed" not in rule or not isinstance(value, str):
        return None
    allowed = rule["allowed"]
    if value in allowed or value.lower() not in allowed:
        return None
    return value.lower()


def _rule_int(rule, value):
    if rule.get("type") is not int or not isinstance(value, str):
        return None
    digits = _EDGES.sub("", value)
    return int(digits) if _re.fullmatch("[0-9]+", digits) else None


COERCIONS = (("strip", _rule_strip), ("lower", _rule_lower), ("int_from_str", _rule_int))


def coerce(name, raw_args):
    """The coerced copy of ``raw_args`` and its ledger.

    >>> coerce("legacy_stock", {"sku": "SKU-1001", "region": "WEST", "limit": "02"})[1][1]["rule"]
    ['int_from_str']
    """
    out = {key: raw_args[key] for key in raw_args}
    ledger = []
    rules = TOOLS[name]["args"] if name in TOOLS else {}
    for key in out:
        if key not in rules:
            continue
        value, names = out[key], []
        for rule_name, apply in COERCIONS:
            changed = apply(rules[key], value)
            if changed is not None:
                value = changed
                names.append(rule_name)
        if names:
            ledger.append({"arg": key, "from": raw_args[key], "to": value, "rule": names})
            out[key] = value
    return out, ledger


def call_coerced(name, raw_args):
    """``call_tool`` on the coerced arguments, plus the ledger."""
    args, ledger = coerce(name, raw_args)
    result = call_tool(name, args)
    result = dict(result)
    result.update(coercions=ledger)
    return result
