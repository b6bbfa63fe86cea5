"""The grader's doubles: spec-faithful stand-ins for one step's function, put in a module name for one probe.

A check of step N judges step N's own logic. Where step N's function calls
another step's function by its module-level name (``call_tool`` calling
``validate_args``, ``handle`` calling ``call_tool``...), the ``double``
operation of a ``calls`` probe (:mod:`grader.engine.probes`) puts one of these
in that name for the rest of the probe, so a mistake of the other step cannot
reach this step's verdict. A module that inlines the other step's logic is
judged on that logic, which is then its own.

Each kind in :data:`DOUBLES` is a factory ``factory(module, params) ->
function``: the function behaves as LAB_SPEC says a correct module's function
of that name behaves, reading the module's *current* data (``TOOLS``,
``CACHE``), never the learner's other functions, and never importing a
solution. Nothing here judges. :func:`make_double` wraps the function so that
each call is recorded (arguments as they were at the call, what it returned
or raised) in a list the probe returns as ``double_seen``; ``params["when"]``
(exact calls with their answers) works for every kind.

Kinds: ``validate_args`` (step 2; ``refuse``: ``[[tool, args, reason]...]``),
``validate_result`` (step 4), ``cache_key`` (step 5), ``call_tool`` (the
door of steps 3-5; ``script``: results to give in order, ``None`` for "the
real door this time"), ``can_repair``, ``repair`` (step 7; ``tool_key``/
``args_key`` name the State fields), ``handle`` and ``run_naive``
(``results`` in order, the last one repeated). More kinds may come from
the modules ``grader.engine.doubles_<name>`` holding a ``DOUBLES`` dict
of their own; they are merged here (a kind defined twice is an error).

Example::

    >>> import types
    >>> m = types.SimpleNamespace(TOOLS={"t": {"args": {"n": {"type": int, "required": True, "max": 3}}}})
    >>> seen = []
    >>> check = make_double("validate_args", m, {}, seen)
    >>> check("t", {"n": 4}), check("t", {"n": True}), check("u", {})
    ('range:n', 'type:n', 'unknown_tool')
    >>> seen[0]
    {'args': ['t', {'n': 4}], 'returned': 'range:n'}
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

from grader import spec as lab_spec
from grader.engine.encode import decode, encode, strict_equal
from grader.engine.wire import JsonDict, LearnerFn

# Taken when the grader is imported, before any learner code runs: a submission
# that patches builtins (``builtins.isinstance = ...``) does not change the doubles.
_isinstance, _len, _type, _sorted, _repr = isinstance, len, type, sorted, repr

MAX_DOUBLE_SEEN = 60  # calls remembered per doubled name (the call line shows them)
_FunctionType = _type(lambda: None)


# ---------------------------------------------------------------------------
# Spec rules (LAB_SPEC steps 2, 4, 5), over whatever contract table is given
# ---------------------------------------------------------------------------


def type_ok(value: Any, expected: Any) -> bool:
    """``value`` has the contract type ``expected``; a ``bool`` is never an ``int`` (LAB_SPEC step 2).

    >>> type_ok(True, int), type_ok(3, int), type_ok(True, bool), type_ok("3", int)
    (False, True, True, False)
    """
    if _isinstance(value, bool) and expected is not bool:
        return False
    return _isinstance(value, expected)


def args_reason(tools: Any, name: Any, args: Any) -> str:
    """LAB_SPEC step 2: ``""`` or the one reason ``validate_args(name, args)`` gives, over ``tools``.

    >>> tools = {"t": {"args": {"r": {"type": str, "required": True, "allowed": ["a"]},
    ...                         "o": {"type": int, "required": False, "min": 1}}}}
    >>> [args_reason(tools, "t", a) for a in ({"r": "a"}, {"r": "b"}, {"r": "a", "o": 0}, {"r": "a", "x": 1}, {})]
    ['', 'allowed:r', 'range:o', 'extra:x', 'missing:r']
    """
    if name not in tools:
        return lab_spec.UNKNOWN_TOOL
    contract = tools[name]["args"]
    for arg in args:
        if arg not in contract:
            return lab_spec.arg_reason(lab_spec.EXTRA, arg)
    for arg, rule in contract.items():
        if arg not in args:
            if rule.get("required"):
                return lab_spec.arg_reason(lab_spec.MISSING, arg)
            continue
        reason = _value_reason(args[arg], rule)
        if reason:
            return lab_spec.arg_reason(reason, arg)
    return ""


def _value_reason(value: Any, rule: JsonDict) -> str:
    if not type_ok(value, rule["type"]):
        return lab_spec.TYPE
    if "allowed" in rule and value not in rule["allowed"]:
        return lab_spec.ALLOWED
    if ("min" in rule and value < rule["min"]) or ("max" in rule and value > rule["max"]):
        return lab_spec.RANGE
    return ""


def result_reason(returns: JsonDict, value: Any) -> str:
    """LAB_SPEC step 4: ``""`` or the one reason ``validate_result`` gives ``value`` under ``returns``.

    A row must be a dict (``rows=[None]`` is ``shape``, not an exception).

    >>> returns = {"keys": {"rows": list}, "rows": {"max_len": 2, "item": {"n": {"type": int, "min": 0}}}}
    >>> [result_reason(returns, v) for v in (None, {"rows": [None]}, {"rows": []}, {"rows": [{"n": -1}]})]
    ['shape', 'shape', 'empty', 'range']
    >>> result_reason(returns, {"rows": [{"n": 1}] * 3}), result_reason(returns, {"rows": [{"n": 0}]})
    ('too_big', '')
    """
    if not _isinstance(value, dict):
        return lab_spec.SHAPE
    for key, expected in returns["keys"].items():
        if key not in value or not type_ok(value[key], expected):
            return lab_spec.SHAPE
    rows, rule = value.get("rows"), returns["rows"]
    item = rule["item"]
    if not _isinstance(rows, list) or not all(_row_ok(row, item) for row in rows):
        return lab_spec.SHAPE
    if not rows:
        return lab_spec.EMPTY
    if _len(rows) > rule["max_len"]:
        return lab_spec.TOO_BIG
    for row in rows:
        for field, field_rule in item.items():
            if "min" in field_rule and row[field] < field_rule["min"]:
                return lab_spec.RANGE
    return ""


def _row_ok(row: Any, item: JsonDict) -> bool:
    return _isinstance(row, dict) and all(
        field in row and type_ok(row[field], rule["type"]) for field, rule in item.items()
    )


def canonical(value: Any) -> str:
    """Text of ``value`` that keeps types apart (``2``/``"2"``/``2.0``/``True``) and ignores dict order.

    >>> canonical({"b": 2, "a": "2"}) == canonical({"a": "2", "b": 2}), canonical(2) == canonical("2")
    (True, False)
    """
    if _isinstance(value, dict):
        items = _sorted(canonical(k) + ":" + canonical(v) for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if _isinstance(value, (list, tuple)):
        return _type(value).__name__ + "[" + ",".join(canonical(v) for v in value) + "]"
    if _isinstance(value, (set, frozenset)):
        return _type(value).__name__ + "{" + ",".join(_sorted(canonical(v) for v in value)) + "}"
    return _type(value).__name__ + "(" + _repr(value) + ")"


def key_of(name: Any, args: Any) -> str:
    """LAB_SPEC step 5: one string per (tool name, arguments), whatever the argument order.

    >>> key_of("t", {"n": 2, "s": "x"}) == key_of("t", {"s": "x", "n": 2})
    True
    >>> key_of("t", {"n": 2}) == key_of("t", {"n": "2"})
    False
    """
    return canonical(name) + "|" + canonical(args)


# ---------------------------------------------------------------------------
# The kinds
# ---------------------------------------------------------------------------


def _tools(module: Any) -> Any:
    return module.TOOLS


def spec_contract() -> JsonDict:
    """LAB_SPEC step 1's ``args`` and ``returns`` of one tool (both tools share them), as a new dict.

    >>> spec_contract()["args"]["limit"]
    {'type': <class 'int'>, 'required': True, 'min': 1, 'max': 5}
    """
    return {"args": lab_spec.args_contract(), "returns": lab_spec.returns_contract()}


class SpecTable:
    """The module as a double sees it with ``params["contract"] == "spec"``: the spec's contract table.

    ``TOOLS`` holds the spec's two tools with the spec's ``args``/``returns`` (``changes``, a list of
    ``[tool, key, ..., value]``, applied: the grader's own changes of the contract), and an ``fn`` that
    calls the module's ``TOOLS[name]["fn"]`` at call time (the grader's spy); ``CACHE`` is the module's.
    A step-1 slip in the module's table then cannot reach a later step's double.

    >>> view = SpecTable(None, [["stock_lookup", "args", "limit", "max", 3]])
    >>> view.TOOLS["stock_lookup"]["args"]["limit"]["max"], view.TOOLS["legacy_stock"]["args"]["limit"]["max"]
    (3, 5)
    """

    def __init__(self, module: Any, changes: list[Any] | None = None) -> None:
        self._module = module
        self.TOOLS = {name: {"fn": self._tool(name), **spec_contract()} for name in lab_spec.TOOL_NAMES}
        for *path, value in changes or []:
            target = self.TOOLS
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = decode(value)

    def _tool(self, name: str) -> LearnerFn:
        def fn(**args: Any) -> Any:
            return self._module.TOOLS[name]["fn"](**args)

        return fn

    @property
    def CACHE(self) -> Any:
        return getattr(self._module, "CACHE", None)


def validate_args_double(module: Any, params: JsonDict) -> LearnerFn:
    """``validate_args`` by LAB_SPEC step 2 over the module's ``TOOLS`` at call time.

    ``params["refuse"]``: ``[[tool, args, reason], ...]`` -- exactly those calls give ``reason``.

    >>> import types
    >>> m = types.SimpleNamespace(TOOLS={"t": {"args": {"s": {"type": str, "required": True}}}})
    >>> check = validate_args_double(m, {"refuse": [["t", {"s": "x"}, "allowed:s"]]})
    >>> check("t", {"s": "x"}), check("t", {"s": "y"}), check("t", {"s": 1})
    ('allowed:s', '', 'type:s')
    """
    refuse: list[tuple[Any, Any, str]] = [(tool, args, reason) for tool, args, reason in params.get("refuse") or []]

    def validate_args(name: Any, args: Any) -> str:
        for tool, wanted, reason in refuse:
            if name == tool and strict_equal(encode(args), wanted):
                return reason
        return args_reason(_tools(module), name, args)

    return validate_args


def validate_result_double(module: Any, params: JsonDict) -> LearnerFn:
    """``validate_result`` by LAB_SPEC step 4 over the module's ``TOOLS[name]["returns"]`` at call time.

    >>> import types
    >>> returns = {"keys": {"rows": list}, "rows": {"max_len": 1, "item": {}}}
    >>> validate_result_double(types.SimpleNamespace(TOOLS={"t": {"returns": returns}}), {})("t", {"rows": [{}, {}]})
    'too_big'
    """

    def validate_result(name: Any, value: Any) -> str:
        return result_reason(_tools(module)[name]["returns"], value)

    return validate_result


def cache_key_double(module: Any, params: JsonDict) -> LearnerFn:
    """``cache_key`` by LAB_SPEC step 5 (:func:`key_of`).

    >>> key = cache_key_double(None, {})
    >>> key("t", {"a": 1, "b": 2}) == key("t", {"b": 2, "a": 1}) != key("t", {"a": "1", "b": 2})
    True
    """

    def cache_key(name: Any, args: Any) -> str:
        return key_of(name, args)

    return cache_key


def _door(module: Any, name: Any, args: Any, own_cache: JsonDict) -> JsonDict:
    """LAB_SPEC steps 3-5: validate, look up the cache, call ``TOOLS[name]["fn"](**args)``, check, store."""
    tools = _tools(module)
    reason = args_reason(tools, name, args)
    if reason:
        return _failure(lab_spec.ARGS_PREFIX + reason)
    cache: Any = getattr(module, "CACHE", None)  # the learner's CACHE, a dict (checked through the bound builtin)
    cache = cache if _isinstance(cache, dict) else own_cache
    key = key_of(name, args)
    if key in cache:
        return {"ok": True, "value": cache[key], "error": ""}
    try:
        value = tools[name]["fn"](**args)
    except Exception as exc:
        return _failure(lab_spec.RAISED_PREFIX + _type(exc).__name__)
    reason = result_reason(tools[name]["returns"], value)
    if reason:
        return _failure(lab_spec.RESULT_PREFIX + reason)
    cache[key] = value
    return {"ok": True, "value": value, "error": ""}


def _failure(error: str) -> JsonDict:
    return {"ok": False, "value": None, "error": error}


def _scripted(entry: JsonDict) -> JsonDict:
    """A script entry as a whole result: ``error`` alone means a failure, ``value`` alone a success."""
    error = entry.get("error", "")
    return {"ok": entry.get("ok", not error), "value": decode(entry.get("value")), "error": error}


def call_tool_double(module: Any, params: JsonDict) -> LearnerFn:
    """``call_tool``: the spec's door over the module's ``TOOLS``/``CACHE`` and the (spied) tool functions.

    ``params["script"]``: results given in order instead (``{"ok", "value", "error"}``, missing fields
    filled: ``{"error": "args:range:limit"}`` is a failure); a ``None`` entry, or the end of the script,
    means the real door for that call.

    >>> import types
    >>> tools = {"t": {"fn": lambda n: {"rows": [{}] * n}, "args": {"n": {"type": int, "required": True, "min": 1}},
    ...               "returns": {"keys": {"rows": list}, "rows": {"max_len": 2, "item": {}}}}}
    >>> door = call_tool_double(types.SimpleNamespace(TOOLS=tools, CACHE={}), {"script": [{"error": "x"}]})
    >>> door("t", {"n": 1})["error"], door("t", {"n": 0})["error"], door("t", {"n": 3})["error"], door("t", {"n": 1})
    ('x', 'args:range:n', 'result:too_big', {'ok': True, 'value': {'rows': [{}]}, 'error': ''})
    """
    script = list(params.get("script") or [])
    own_cache: JsonDict = {}  # when the module has no CACHE dict

    def call_tool(name: Any, args: Any) -> JsonDict:
        entry = script.pop(0) if script else None
        if entry is not None:
            return _scripted(entry)
        return _door(module, name, args, own_cache)

    return call_tool


def can_repair_double(module: Any, params: JsonDict) -> LearnerFn:
    """``can_repair``: true for exactly the spec's three repairable reasons (the learner's choice aside).

    >>> can = can_repair_double(None, {})
    >>> can("args:allowed:region"), can("result:empty"), can("args:missing:sku")
    (True, False, False)
    """

    def can_repair(reason: Any) -> bool:
        return reason in lab_spec.REPAIRABLE

    return can_repair


def _state_key(state: Any, given: str | None, default: str, looks_right: Callable[[Any], bool]) -> str:
    """The State field a repair reads: ``given``, else ``default`` when present, else the one field that fits."""
    if given:
        return given
    if default in state:
        return default
    fits = [key for key, value in state.items() if key != "order" and looks_right(value)]
    return fits[0] if fits else default


def repair_double(module: Any, params: JsonDict) -> LearnerFn:
    """The ``repair`` node by LAB_SPEC step 7: the fix of the last reason in ``errors``, and its ``fixes`` line.

    The State's field names other than ``errors``/``fixes`` are the learner's: ``params["tool_key"]``
    and ``params["args_key"]`` name them, else ``tool``/``args``, else the one field that fits.

    >>> fix = repair_double(None, {})
    >>> fix({"tool": "stock_lookup", "args": {"sku": "S", "region": "mars", "limit": 9},
    ...      "errors": ["args:allowed:region"]})["args"]["region"]
    'central'
    """

    own = getattr(module, "repair", None)
    routes = routes_by_command(own)

    def repair(state: Any) -> Any:
        reason = state["errors"][-1]
        tool_key = _state_key(state, params.get("tool_key"), "tool", lambda v: v in lab_spec.TOOL_NAMES)
        args_key = _state_key(state, params.get("args_key"), "args", lambda v: _isinstance(v, dict) and "sku" in v)
        tool, args = state[tool_key], dict(state[args_key])
        if reason == lab_spec.REPAIR_REGION:
            args["region"] = lab_spec.FALLBACK_REGION
        elif reason == lab_spec.REPAIR_LIMIT:
            args["limit"] = min(max(args["limit"], 1), lab_spec.MAX_ROWS)
        elif reason == lab_spec.REPAIR_TOOL:
            tool = "stock_lookup"
        values = {tool_key: tool, args_key: args, "fixes": [f"{reason}: the grader's repair"]}
        return _routed(own, state, values) if routes else values

    return repair


def routes_by_command(fn: Any) -> bool:
    """``fn`` is annotated to return a LangGraph ``Command``: it routes itself (its form must stay, and its
    graph may have no edge out of it).

    >>> def repair(state) -> "Command[Literal['fetch']]": ...
    >>> routes_by_command(repair), routes_by_command(len)
    (True, False)
    """
    annotations = getattr(fn, "__annotations__", None)
    return isinstance(annotations, dict) and "Command" in str(annotations.get("return", ""))


def _routed(own: Any, state: Any, values: JsonDict) -> Any:
    """The spec's ``values`` with the learner's route: a repair that routes by ``Command`` goes where it goes.

    Its graph may hold no static edge back to ``fetch``, so a plain update would end the run. The
    learner's repair runs on a copy of the state only to read its ``goto``; what it computed is dropped.
    """
    import copy

    from langgraph.types import Command

    try:
        goto = own(copy.deepcopy(state)).goto
    except Exception:
        goto = "fetch"
    return Command(update=values, goto=goto or "fetch")


def _results_in_order(fn_name: str) -> Callable[[Any, JsonDict], LearnerFn]:
    def factory(module: Any, params: JsonDict) -> LearnerFn:
        results = list(params.get("results") or [None])
        count = [0]

        def double(*args: Any, **kwargs: Any) -> Any:
            value = results[min(count[0], _len(results) - 1)]
            count[0] += 1
            return decode(value)  # a fresh copy every time: what the caller changes stays with it

        double.__name__ = double.__qualname__ = fn_name
        return double

    factory.__doc__ = f"``{fn_name}``: returns ``params['results']`` in order (the last one repeated)."
    return factory


DOUBLES: dict[str, Callable[[Any, JsonDict], LearnerFn]] = {
    "validate_args": validate_args_double,
    "validate_result": validate_result_double,
    "cache_key": cache_key_double,
    "call_tool": call_tool_double,
    "can_repair": can_repair_double,
    "repair": repair_double,
    "handle": _results_in_order("handle"),
    "run_naive": _results_in_order("run_naive"),
}


def _merge_extensions() -> None:
    """Add the kinds of every module ``grader.engine.doubles_<name>`` (its ``DOUBLES``).

    A kind that two modules define differently is an error, not a silent overwrite.
    """
    package = importlib.import_module("grader.engine")
    for info in _sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if not info.name.startswith("doubles_"):
            continue
        extra = getattr(importlib.import_module(f"grader.engine.{info.name}"), "DOUBLES", {})
        for kind, factory in extra.items():
            if DOUBLES.get(kind, factory) is not factory:  # the same factory again (added by itself) is fine
                raise RuntimeError(f"double kind {kind!r} defined twice (grader.engine.{info.name})")
            DOUBLES[kind] = factory


# ---------------------------------------------------------------------------
# Recording and installing
# ---------------------------------------------------------------------------


def make_double(kind: str, module: Any, params: JsonDict, seen: list[Any]) -> LearnerFn:
    """The double of ``kind`` for ``module``, recording each call into ``seen`` (see the module docstring).

    ``params["when"]``: ``[[args, answer], ...]`` -- a call whose positional arguments equal ``args``
    (encoded, type-strict) gets ``answer`` (decoded afresh), whatever the kind. ``params["contract"]``
    ``"spec"``: the kind reads the spec's contract table instead of the module's (:class:`SpecTable`,
    with ``params["changes"]``).

    >>> f = make_double("can_repair", None, {"when": [[["args:missing:sku"], True]]}, [])
    >>> f("args:missing:sku"), f("args:allowed:region"), f("raised:KeyError")
    (True, True, False)
    """
    seen_module = SpecTable(module, params.get("changes")) if params.get("contract") == "spec" else module
    impl = DOUBLES[kind](seen_module, params)
    when = [(args, answer) for args, answer in params.get("when") or []]

    def double(*args: Any, **kwargs: Any) -> Any:
        entry: JsonDict = {"args": encode(list(args))}
        if kwargs:
            entry["kwargs"] = encode(kwargs)
        if _len(seen) < MAX_DOUBLE_SEEN:
            seen.append(entry)
        try:
            value = _answer(when, entry, impl, args, kwargs)
        except BaseException as exc:
            entry["raised"] = _type(exc).__name__
            raise
        entry["returned"] = encode(value)
        return value

    double.__name__ = double.__qualname__ = kind
    return double


def _answer(when: list[Any], entry: JsonDict, impl: LearnerFn, args: tuple[Any, ...], kwargs: JsonDict) -> Any:
    if not kwargs:
        for wanted, answer in when:
            if strict_equal(entry["args"], wanted):
                return decode(answer)
    return impl(*args, **kwargs)


def _trampoline(*args: Any, _agtool_double: Any = None, **kwargs: Any) -> Any:
    return _agtool_double(*args, **kwargs)


_TRAMPOLINE = _trampoline.__code__


def install(module: Any, name: str, double: LearnerFn) -> Callable[[], None]:
    """Put ``double`` in ``module.<name>``; return the function that undoes it.

    The function object that held the name (a plain top-level function) runs the
    double too while it is installed: a reference saved at import
    (``_check = validate_args``, a graph compiled once) reaches it as well.

    >>> import types
    >>> def f(x): return "learner"
    >>> m = types.SimpleNamespace(f=f); saved = f
    >>> undo = install(m, "f", lambda x: "double")
    >>> m.f(1), saved(1)
    ('double', 'double')
    >>> undo(); m.f(1), saved(1)
    ('learner', 'learner')
    """
    missing = object()
    old: Any = getattr(module, name, missing)  # the learner's object, or the sentinel
    setattr(module, name, double)
    undo_code = _reroute(old, double) if _type(old) is _FunctionType and not old.__closure__ else None

    def undo() -> None:
        if undo_code is not None:
            undo_code()
        if old is missing:
            delattr(module, name)
        else:
            setattr(module, name, old)

    return undo


def _reroute(fn: Any, double: LearnerFn) -> Callable[[], None]:
    """Make the function object ``fn`` call ``double``; return the undo."""
    code, defaults, kwdefaults = fn.__code__, fn.__defaults__, fn.__kwdefaults__
    fn.__code__, fn.__defaults__, fn.__kwdefaults__ = _TRAMPOLINE, None, {"_agtool_double": double}

    def undo() -> None:
        fn.__code__, fn.__defaults__, fn.__kwdefaults__ = code, defaults, kwdefaults

    return undo


# Last, so an extension module may use everything above (it imports this module while it loads).
_merge_extensions()
