"""Doubles for step 10 (``explain``), merged into :data:`grader.engine.doubles.DOUBLES`.

``explain`` may build its suggestions on step 9's ``coerce`` (strip, lower,
int_from_str): the step-10 checks put this double in that name, so a step-9
mistake costs step 9 only.

``spec_coerce`` (for ``coerce``)
    LAB_SPEC step 9 over the module's current ``TOOLS`` (the contract the
    probe wrote there): a new dict with the same keys, and one ledger entry
    per changed argument (``rule`` written ``strip+lower`` style).

``spec_explain`` (for ``explain``)
    LAB_SPEC step 10 over the module's current ``TOOLS``: the reason of the
    grader's ``validate_args``, the argument and its value, a message, and a
    suggestion exactly when one honest fix exists (and it validates). The
    ``retry_with_suggestion`` checks put it in ``explain``, so a slip in
    ``explain`` costs the explain checks only, on every seed, and the retry is
    judged on its own logic.
"""

from __future__ import annotations

from typing import Any

from grader import spec as lab_spec
from grader.engine import doubles as base
from grader.engine.wire import JsonDict, LearnerFn

_DIGITS = "0123456789"  # ASCII digits only ("３".isdigit() is True)


def coerced_value(rule: Any, value: Any) -> tuple[Any, list[str]]:
    """One argument's value after the step-9 rules, and the names of the rules applied.

    >>> coerced_value({"type": str, "allowed": ["north"]}, " North "), coerced_value({"type": int}, "\\uff13")
    (('north', ['strip', 'lower']), ('\\uff13', []))
    """
    if not isinstance(value, str) or not isinstance(rule, dict):
        return value, []
    bare = value.strip(lab_spec.ASCII_WHITESPACE)
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


def coerce_double(module: Any, params: JsonDict) -> LearnerFn:
    """``coerce(name, raw_args)`` by LAB_SPEC step 9 over ``module.TOOLS`` at call time."""

    def coerce(name: Any, raw_args: Any) -> tuple[Any, ...]:
        args = dict(raw_args)
        tools = module.TOOLS
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


def _fixed_value(rule: JsonDict, kind: str, value: Any) -> Any:
    """The one value an ``allowed``/``type`` refusal honestly stands for, else ``None`` (validated later)."""
    if not isinstance(value, str):
        return None
    if kind == lab_spec.ALLOWED:
        wanted = value.strip(lab_spec.ASCII_WHITESPACE).lower()
        options = [option for option in rule.get("allowed", ()) if isinstance(option, str)]
        if wanted in options:
            return wanted
        near = {option for option in options if lab_spec.one_edit(wanted, option)}
        return near.pop() if len(near) == 1 else None
    if kind == lab_spec.TYPE and rule.get("type") is int:
        new, applied = coerced_value(rule, value)
        return new if applied else None
    return None


def suggestion_for(tools: JsonDict, name: Any, args: JsonDict, reason: str) -> JsonDict | None:
    """The complete corrected copy of ``args`` when exactly one honest fix exists and it validates, else ``None``.

    >>> tools = {"t": {"args": {"r": {"type": str, "required": True, "allowed": ["east", "west", "north"]},
    ...                         "n": {"type": int, "required": True, "min": 1, "max": 5}}}}
    >>> [suggestion_for(tools, "t", {"r": r, "n": n}, base.args_reason(tools, "t", {"r": r, "n": n}))
    ...  for r, n in (("nrth", 1), ("wast", 1), ("east", " 2 "), ("east", "9"))]
    [{'r': 'north', 'n': 1}, None, {'r': 'east', 'n': 2}, None]
    """
    kind, _, arg = reason.partition(":")
    if kind == lab_spec.EXTRA:
        fixed: JsonDict | None = {key: value for key, value in args.items() if key != arg}
    elif kind in (lab_spec.ALLOWED, lab_spec.TYPE) and arg in args:
        value = _fixed_value(tools[name]["args"][arg], kind, args[arg])
        fixed = None if value is None else {**args, arg: value}
    else:  # range, missing, unknown_tool: any fix would invent a value
        fixed = None
    return fixed if fixed is not None and not base.args_reason(tools, name, fixed) else None


def _message(tools: JsonDict, name: Any, reason: str, arg: str | None, args: JsonDict) -> str:
    if arg is None:
        return f"There is no tool {name!r}: use one of {sorted(tools)}."
    if arg not in args:
        return f"{name} needs the argument {arg!r}, which was not given."
    rule = tools[name]["args"].get(arg, {})
    accepted = {
        lab_spec.ALLOWED: f" Accepted: {list(rule.get('allowed', ()))}.",
        lab_spec.RANGE: f" Accepted: {rule.get('min')}..{rule.get('max')}.",
    }
    return (
        f"{name}: argument {arg!r} = {args[arg]!r} was refused ({reason}).{accepted.get(reason.partition(':')[0], '')}"
    )


def explain_double(module: Any, params: JsonDict) -> LearnerFn:
    """``explain(name, args)`` by LAB_SPEC step 10 over ``module.TOOLS`` at call time.

    >>> import types
    >>> m = types.SimpleNamespace(TOOLS={"t": {"args": {"r": {"type": str, "required": True, "allowed": ["a"]}}}})
    >>> explain = explain_double(m, {})
    >>> explain("t", {"r": " A "})["suggestion"], explain("t", {"r": "a"}) == lab_spec.EMPTY_EXPLANATION
    ({'r': 'a'}, True)
    """

    def explain(name: Any, args: Any) -> JsonDict:
        tools = module.TOOLS
        reason = base.args_reason(tools, name, args)
        if not reason:
            return dict(lab_spec.EMPTY_EXPLANATION)
        arg = reason.partition(":")[2] or None
        return {
            "error": reason,
            "arg": arg,
            "value": args.get(arg) if arg else None,
            "message": _message(tools, name, reason, arg, args),
            "suggestion": suggestion_for(tools, name, args, reason),
        }

    return explain


DOUBLES = {"spec_coerce": coerce_double, "spec_explain": explain_double}
