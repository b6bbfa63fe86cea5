"""Doubles for step 10 (``explain``), merged into :data:`grader.engine.doubles.DOUBLES`.

``explain`` may build its suggestions on step 9's ``coerce`` (strip, lower,
int_from_str): the step-10 checks put this double in that name, so a step-9
mistake costs step 9 only.

``spec_coerce`` (for ``coerce``)
    LAB_SPEC step 9 over the module's current ``TOOLS`` (the contract the
    probe wrote there): a new dict with the same keys, and one ledger entry
    per changed argument (``rule`` written ``strip+lower`` style).
"""
from __future__ import annotations

from typing import Any, Callable

_SPACE = " \t\n\r\x0b\x0c"  # ASCII whitespace only
_DIGITS = "0123456789"  # ASCII digits only ("３".isdigit() is True)


def coerced_value(rule: Any, value: Any) -> "tuple[Any, list[str]]":
    """One argument's value after the step-9 rules, and the names of the rules applied.

    >>> coerced_value({"type": str, "allowed": ["north"]}, " North "), coerced_value({"type": int}, "\\uff13")
    (('north', ['strip', 'lower']), ('\\uff13', []))
    """
    if not isinstance(value, str) or not isinstance(rule, dict):
        return value, []
    bare = value.strip(_SPACE)
    if rule.get("type") is int:
        if bare and all(char in _DIGITS for char in bare):
            return int(bare), ["int_from_str"]
        return value, []
    applied = ["strip"] if rule.get("type") is str and bare != value else []
    new = bare if applied else value
    allowed = rule.get("allowed")
    if allowed is not None and new not in allowed and new.lower() in allowed:
        new, applied = new.lower(), applied + ["lower"]
    return new, applied


def coerce_double(module: Any, params: dict) -> Callable:
    """``coerce(name, raw_args)`` by LAB_SPEC step 9 over ``module.TOOLS`` at call time."""

    def coerce(name: Any, raw_args: Any) -> tuple:
        args = dict(raw_args)
        tools = getattr(module, "TOOLS")
        if name not in tools:
            return args, []
        contract, ledger = tools[name]["args"], []
        for arg, value in raw_args.items():
            if arg in contract:
                new, applied = coerced_value(contract[arg], value)
                if applied:
                    args[arg] = new
                    ledger.append({"arg": arg, "from": value, "to": new, "rule": "+".join(applied)})
        return args, ledger

    return coerce


DOUBLES = {"spec_coerce": coerce_double}
