"""Step 10 in another style: Levenshtein by dynamic programming, one handler per reason kind.

Appended to the solution's steps 1-8 it gives a correct module. Differs from
the reference on purpose: the edit distance is the full table (capped at 2),
each reason kind has its own small function in a dispatch table, and the
message is assembled from parts.
"""
from __future__ import annotations

_S10A_BLANKS = " \t\n\r\x0b\x0c"


def _s10a_distance(a, b):
    """Levenshtein distance of two strs (the whole table: short strings only)."""
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i]
        for j, char_b in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b)))
        previous = current
    return previous[-1]


def _s10a_allowed(rule, value):
    if not isinstance(value, str):
        return None
    norm = value.strip(_S10A_BLANKS).lower()
    options = list(rule["allowed"])
    if norm in options:
        return (norm,)
    close = []
    for option in options:
        if isinstance(option, str) and _s10a_distance(norm, option) == 1 and option not in close:
            close.append(option)
    return (close[0],) if len(close) == 1 else None


def _s10a_type(rule, value):
    if rule["type"] is not int or not isinstance(value, str):
        return None
    digits = value.strip(_S10A_BLANKS)
    if digits == "" or not digits.isascii() or not digits.isdigit():
        return None
    return (int(digits),)


_S10A_FIXERS = {"allowed": _s10a_allowed, "type": _s10a_type}


def _s10a_suggest(name, kind, arg, args):
    if kind == "extra":
        candidate = dict(args)
        del candidate[arg]
    elif kind in _S10A_FIXERS:
        fixed = _S10A_FIXERS[kind](TOOLS[name]["args"][arg], args[arg])
        if fixed is None:
            return None
        candidate = dict(args)
        candidate[arg] = fixed[0]
    else:
        return None
    return candidate if validate_args(name, candidate) == "" else None


def _s10a_message(name, kind, arg, args):
    if arg is None:
        return "Unknown tool " + repr(name) + ". Known: " + ", ".join(sorted(TOOLS)) + "."
    if kind == "missing":
        return "Missing required argument " + repr(arg) + "."
    parts = ["Argument " + repr(arg) + " got " + repr(args[arg]) + " (" + kind + ")."]
    rule = TOOLS[name]["args"].get(arg, {})
    if kind == "allowed":
        parts.append("Use one of: " + ", ".join(str(option) for option in rule["allowed"]) + ".")
    if kind == "range":
        parts.append("Use a value from " + str(rule.get("min")) + " to " + str(rule.get("max")) + ".")
    return " ".join(parts)


def explain(name, args):
    reason = validate_args(name, args)
    explanation = {"error": reason, "arg": None, "value": None, "message": "", "suggestion": None}
    if reason == "":
        return explanation
    kind, _, arg = reason.partition(":")
    if arg:
        explanation["arg"] = arg
        explanation["value"] = args.get(arg)
    explanation["message"] = _s10a_message(name, kind, arg or None, args)
    explanation["suggestion"] = _s10a_suggest(name, kind, arg, args)
    return explanation


def retry_with_suggestion(name, args):
    attempt, suggested, explanation = call_tool(name, args), False, None
    if not attempt["ok"] and attempt["error"].startswith("args:"):
        explanation = explain(name, args)
        if explanation["suggestion"] is not None:
            attempt, suggested = call_tool(name, explanation["suggestion"]), True
    result = dict(attempt)
    result.update(suggested=suggested, explanation=explanation)
    return result
