"""Step 9 in another style: one function per argument type, a tuple ledger entry turned into a dict at the end.

Appended to the reference's steps 1-8 it gives a correct module. Differences
from the reference on purpose: COERCIONS is a dict from rule name to a one-line
description, the value is handled by a ``type``-keyed dispatch table, the ASCII
checks are written with ``str.isascii()`` and ``str.isdigit()`` together,
``copy.deepcopy`` makes the new dict, and the ledger's ``rule`` joins names
with ``", "``.
"""
import copy as _copy

COERCIONS = {
    "strip": "trim ASCII whitespace at both ends of a str argument's value",
    "lower": "lower-case a value whose lower-case form alone is allowed",
    "int_from_str": "read '0'-'9' digits as an int for an int argument",
}


def _trim(text):
    start, end = 0, len(text)
    while start < end and text[start] in " \t\n\r\x0b\x0c":
        start += 1
    while end > start and text[end - 1] in " \t\n\r\x0b\x0c":
        end -= 1
    return text[start:end]


def _as_text(rule, value):
    names = []
    if _trim(value) != value:
        value, names = _trim(value), ["strip"]
    if "allowed" in rule and value not in rule["allowed"] and value.lower() in rule["allowed"]:
        value, names = value.lower(), names + ["lower"]
    return value, names


def _as_int(rule, value):
    text = _trim(value)
    if text.isascii() and text.isdigit():
        return int(text), ["int_from_str"]
    return value, []


_BY_TYPE = {str: _as_text, int: _as_int}


def coerce(name, raw_args):
    """A new dict with the allowlist applied, and one ledger entry per changed argument.

    >>> coerce("stock_lookup", {"sku": " SKU-2040 ", "region": "east", "limit": 1})[1]
    [{'arg': 'sku', 'from': ' SKU-2040 ', 'to': 'SKU-2040', 'rule': 'strip'}]
    """
    args = _copy.deepcopy(raw_args)
    entry = TOOLS.get(name)
    if entry is None:
        return args, []
    changes = []
    for arg, rule in entry["args"].items():
        value = raw_args.get(arg)
        handler = _BY_TYPE.get(rule.get("type"))
        if arg not in raw_args or handler is None or type(value) is not str:
            continue
        new, names = handler(rule, value)
        if names:
            args[arg] = new
            changes.append((arg, value, new, names))
    return args, [{"arg": a, "from": f, "to": t, "rule": ", ".join(n)} for a, f, t, n in changes]


def call_coerced(name, raw_args):
    """coerce, then the one door; the ledger rides along under 'coercions'."""
    coerced, ledger = coerce(name, raw_args)
    return {**call_tool(name, coerced), "coercions": ledger}
