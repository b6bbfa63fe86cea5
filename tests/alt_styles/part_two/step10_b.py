"""Step 10 in another style: neighbours by generated edits, a regex for digits, a small class.

Appended to the solution's steps 1-8 it gives a correct module. Differs from
the reference and from style a on purpose: the strings at distance 1 are
tested by trying every single-position cut, the digit test is a regular
expression with ASCII only, and the explanation is a dataclass turned into
a dict.
"""
from __future__ import annotations

import dataclasses as _s10b_dc
import re as _s10b_re
import string as _s10b_string

_S10B_DIGITS = _s10b_re.compile(r"[0-9]+")


def _s10b_neighbours(a, b):
    """True when a single edit separates a and b."""
    if a == b:
        return False
    for i in range(max(len(a), len(b))):
        head_a, head_b = a[:i], b[:i]
        if head_a != head_b:
            return False
        tails = (a[i + 1:], b[i + 1:]), (a[i:], b[i + 1:]), (a[i + 1:], b[i:])
        if any(x == y for x, y in tails):
            return True
    return False


@_s10b_dc.dataclass
class _S10bExplanation:
    error: str = ""
    arg: object = None
    value: object = None
    message: str = ""
    suggestion: object = None


def _s10b_fix_value(kind, rule, value):
    """The fixed value, or the module's sentinel _S10B_NONE when no honest fix exists."""
    if not isinstance(value, str):
        return _S10B_NONE
    text = value.strip(_s10b_string.whitespace)
    if kind == "allowed":
        text = text.lower()
        if text in rule["allowed"]:
            return text
        hits = sorted({o for o in rule["allowed"] if isinstance(o, str) and _s10b_neighbours(text, o)})
        return hits[0] if len(hits) == 1 else _S10B_NONE
    if kind == "type" and rule["type"] is int and _S10B_DIGITS.fullmatch(text):
        return int(text)
    return _S10B_NONE


_S10B_NONE = object()


def _s10b_suggestion(name, kind, arg, args):
    if kind == "extra":
        fixed = {k: v for k, v in args.items() if k != arg}
    elif kind in ("allowed", "type"):
        value = _s10b_fix_value(kind, TOOLS[name]["args"][arg], args[arg])
        if value is _S10B_NONE:
            return None
        fixed = {**args, arg: value}
    else:
        return None
    return None if validate_args(name, fixed) else fixed


def explain(name, args):
    reason = validate_args(name, args)
    if not reason:
        return _s10b_dc.asdict(_S10bExplanation())
    kind, _, arg = reason.partition(":")
    out = _S10bExplanation(error=reason, arg=arg or None, value=args.get(arg) if arg else None)
    if not arg:
        out.message = f"no tool is called {name!r}"
    elif kind == "missing":
        out.message = f"{arg!r} is required but missing"
    else:
        rule = TOOLS[name]["args"].get(arg, {})
        accepted = {"allowed": lambda: f"; allowed: {list(rule['allowed'])}",
                    "range": lambda: f"; must be within [{rule.get('min')}, {rule.get('max')}]"}
        out.message = f"{arg!r}: {args[arg]!r} refused ({kind})" + accepted.get(kind, lambda: "")()
    out.suggestion = _s10b_suggestion(name, kind, arg, args)
    return _s10b_dc.asdict(out)


def retry_with_suggestion(name, args):
    first = call_tool(name, args)
    if first["ok"] or first["error"][:5] != "args:":
        return dict(first, suggested=False, explanation=None)
    why = explain(name, args)
    if why["suggestion"] is None:
        return dict(first, suggested=False, explanation=why)
    return dict(call_tool(name, why["suggestion"]), suggested=True, explanation=why)
