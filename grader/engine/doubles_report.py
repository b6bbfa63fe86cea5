"""Doubles for step 8 (``write_report``), merged into :data:`grader.engine.doubles.DOUBLES`.

Step 8 is judged on how ``write_report`` measures, not on the steps it
measures: its checks put these in the names ``write_report`` calls, and the
grading process reads the true value of every number off the calls each
double recorded (``double_seen``), whatever the learner's steps 2-7 do.

``report_door`` (for ``call_tool``)
    The door of LAB_SPEC steps 3-5 over the module's current ``TOOLS`` and the
    (spied) tool functions, with a cache of its own, and two ways of being
    wrong on purpose, so that a report's numbers must move:
    ``leak`` -- a call refused for a wrong *value* (``type:``, ``allowed:``,
    ``range:``) that names exactly the contract's arguments runs the tool body
    first and is refused after (a validation that comes too late:
    ``blocked_before_call`` is no longer 0);
    ``store=False`` -- nothing is cached (the second identical call runs the
    body: ``memo_second_call_runs`` is no longer 0).
    What each call did can be read off its record: an ``args:`` error ran the
    body exactly when ``leak`` is on, the reason is one of a value and the
    arguments are the contract's names; any other outcome ran it, unless
    ``store`` is on and an earlier identical call succeeded. The cache is the
    door's own (not ``CACHE``), so learner code emptying ``CACHE`` cannot make
    that reading wrong.
``report_handle`` (for ``handle``)
    Returns ``params[kind]`` for the kind of order it gets (:func:`order_kind`):
    ``repaired`` -- an order a correct module's ``handle`` ends ok after one
    fix, of a wrong region; ``empty`` -- one it gives up on with an empty
    result; ``other`` -- anything else. The three results differ, so the
    grader knows which one each call got.

Example::

    >>> import types
    >>> m = types.SimpleNamespace(TOOLS={"t": {"fn": lambda **a: {"rows": [{}]}, "args": {
    ...     "n": {"type": int, "required": True, "max": 3}}, "returns": {"keys": {}, "rows": {
    ...     "max_len": 5, "item": {}}}}})
    >>> door = report_door(m, {"leak": True})
    >>> door("t", {"n": 9})["error"], door("t", {"n": 1})["ok"]
    ('args:range:n', True)
    >>> order_kind({"sku": "SKU-1001", "region": "mars", "limit": 2}), order_kind(lab_spec.EMPTY_EXAMPLE)
    ('repaired', 'empty')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grader import spec as lab_spec
from grader.engine import doubles as base
from grader.engine.encode import decode
from grader.engine.wire import JsonDict, LearnerFn

# The reasons of a wrong *value*: only such a call can reach a tool body when validation comes too late
# (a missing or extra argument, or an unknown tool, fails in Python's own call first).
VALUE_REASONS = (lab_spec.TYPE, lab_spec.ALLOWED, lab_spec.RANGE)
ORDER_KINDS = ("repaired", "empty", "other")


def leaks(reason: str, args: Any, contract: Any) -> bool:
    """Whether a call refused for ``reason`` reaches the tool body in a door with ``leak`` on.

    Only a wrong *value* in a call that names exactly the contract's arguments
    does: with one missing or extra, Python's own call fails before the body.

    >>> contract = {"n": {"type": int, "required": True}, "m": {"type": int, "required": True}}
    >>> leaks("type:n", {"n": True, "m": 1}, contract), leaks("missing:m", {"n": 1}, contract)
    (True, False)
    >>> leaks("allowed:n", {"n": 9}, contract)  # also missing m: Python's call would fail first
    False
    """
    if not (":" in reason and reason.split(":", 1)[0] in VALUE_REASONS):
        return False
    required = {arg for arg, rule in contract.items() if rule.get("required")}
    return isinstance(args, dict) and required <= set(args) <= set(contract)


def report_door(module: Any, params: JsonDict) -> LearnerFn:
    """``call_tool``: the spec's door with its own cache; ``leak``/``store`` as the module docstring says."""
    leak, store = bool(params.get("leak")), params.get("store", True) is not False
    cache: JsonDict = {}

    def call_tool(name: Any, args: Any) -> JsonDict:
        tools = module.TOOLS
        reason = base.args_reason(tools, name, args)
        if reason:
            if leak and reason != lab_spec.UNKNOWN_TOOL and leaks(reason, args, tools[name]["args"]):
                try:
                    tools[name]["fn"](**args)  # validation too late: the body runs, then the refusal
                except Exception:
                    pass
            return base._failure(lab_spec.ARGS_PREFIX + reason)
        key = base.key_of(name, args)
        if store and key in cache:
            return {"ok": True, "value": cache[key], "error": ""}
        try:
            value = tools[name]["fn"](**args)
        except Exception as exc:
            return base._failure(lab_spec.RAISED_PREFIX + type(exc).__name__)
        reason = base.result_reason(tools[name]["returns"], value)
        if reason:
            return base._failure(lab_spec.RESULT_PREFIX + reason)
        if store:
            cache[key] = value
        return {"ok": True, "value": value, "error": ""}

    return call_tool


def spec_run(tool: str, args: JsonDict) -> tuple[bool, list[str]]:
    """``(ok, errors)`` of a correct module's ``handle`` (:func:`grader.spec.handle_outcome`).

    >>> spec_run("stock_lookup", {"sku": "SKU-9999", "region": "mars", "limit": 2})
    (False, ['args:allowed:region', 'result:empty'])
    """
    return lab_spec.handle_outcome({**args, "tool": tool})


order_kind = lab_spec.order_kind  # the kind of a report's order: the spec's, whatever the module's table says


def report_handle(module: Any, params: JsonDict) -> LearnerFn:
    """``handle``: ``params[order_kind(order)]``, a fresh copy each call."""
    results = {kind: params.get(kind) for kind in ORDER_KINDS}

    def handle(*args: Any, **kwargs: Any) -> Any:
        order = args[0] if args else kwargs.get("order")
        return decode(results[order_kind(order)])

    return handle


DOUBLES: dict[str, Callable[[Any, JsonDict], LearnerFn]] = {
    "report_door": report_door,
    "report_handle": report_handle,
}

# doubles.py merges this table when it is imported first (the usual order); when this module is
# imported first, the kinds are added here once doubles.py is complete.
if hasattr(base, "make_double"):
    for _kind, _factory in DOUBLES.items():
        base.DOUBLES.setdefault(_kind, _factory)
