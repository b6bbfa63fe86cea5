"""Doubles for the graph steps (6 and 7), merged into :data:`grader.engine.doubles.DOUBLES`.

``call_tool_spec``: the door of LAB_SPEC steps 3-5 over the **spec's own**
contract (the argument and result rules of LAB_SPEC step 1), calling the
module's (spied) ``TOOLS[name]["fn"]``. The ``call_tool`` kind of
:mod:`grader.engine.doubles` reads the module's ``TOOLS`` contract, which is
right for the steps that change that contract on purpose; the graph steps
never do, and a step-1 slip in the table (a region left out of ``allowed``,
a ``max`` off by one) would otherwise reach step 6 or 7 on only the seeds
that draw that value. Over the spec's contract the graph checks see the same
door on every seed, whatever the table says (the table is step 1's to judge).
``params["script"]`` works as for ``call_tool``.

Example::

    >>> import types
    >>> m = types.SimpleNamespace(TOOLS={"stock_lookup": {"fn": lambda **a: 1 / 0, "args": {}}}, CACHE={})
    >>> door = DOUBLES["call_tool_spec"](m, {})
    >>> door("stock_lookup", {"sku": "SKU-1001", "region": "mars", "limit": 2})["error"]
    'args:allowed:region'
    >>> door("stock_lookup", {"sku": "SKU-1001", "region": "north", "limit": 2})["error"]
    'raised:ZeroDivisionError'
"""

from __future__ import annotations

import copy
import dataclasses
import types
from collections.abc import Callable
from typing import Any

from grader import spec as lab_spec
from grader.engine import doubles as base
from grader.engine.encode import decode
from grader.engine.wire import JsonDict, LearnerFn

# LAB_SPEC step 1: both tools share one argument contract and one result contract.
SPEC_ARGS = lab_spec.args_contract()
SPEC_RETURNS = lab_spec.returns_contract()


def _module_fn(module: Any, name: str) -> LearnerFn:
    """A function that calls the module's ``TOOLS[name]["fn"]`` as it is at call time (the grader's spy).

    A table without that entry fails inside the door's ``try`` (``raised:KeyError``), like a tool that raises.
    """

    def fn(**args: Any) -> Any:
        return module.TOOLS[name]["fn"](**args)

    return fn


class SpecView:
    """The module as the spec's door sees it: the spec's contract, the module's tool functions and ``CACHE``.

    >>> import types
    >>> view = SpecView(types.SimpleNamespace(CACHE={"k": 1}))
    >>> sorted(view.TOOLS), view.TOOLS["legacy_stock"]["args"]["limit"]["max"], view.CACHE
    (['legacy_stock', 'stock_lookup'], 5, {'k': 1})
    """

    def __init__(self, module: Any) -> None:
        self._module = module
        self.TOOLS = {
            name: {"fn": _module_fn(module, name), "args": SPEC_ARGS, "returns": SPEC_RETURNS}
            for name in lab_spec.TOOL_NAMES
        }

    @property
    def CACHE(self) -> Any:
        return getattr(self._module, "CACHE", None)


def call_tool_spec_double(module: Any, params: JsonDict) -> LearnerFn:
    """``call_tool``: the spec's door over the spec's contract, the module's tool functions and ``CACHE``."""
    return base.call_tool_double(SpecView(module), params)


# --------------------------------------------------------------------------
# Step 6's nodes, for step 7's checks
# --------------------------------------------------------------------------
#
# Step 7's graph runs step 6's nodes (pick, fetch, reply, giveup). LAB_SPEC names the
# nodes but leaves most State fields to the learner, so these doubles act only on a
# module whose State has exactly the fields of the lab's own layout (REFERENCE_FIELDS);
# for any other module they run the learner's node unchanged. pick, reply and giveup run
# the learner's node first and keep its form (a dict, or a Command with its goto), with
# the spec's values put in; fetch (one call_tool: running the learner's would call twice)
# is replaced outright, unless it routes by Command itself. Step 7's checks use pick and
# fetch; reply and giveup stay the learner's there (what they say after a repair, or after
# two reasons, only shows in step 7's runs).

REFERENCE_FIELDS = frozenset({"order", "tool", "args", "ok", "rows", "answer", "errors", "calls", "attempts", "fixes"})


def reference_layout(module: Any) -> bool:
    """The module's ``State`` declares exactly :data:`REFERENCE_FIELDS`.

    >>> import types
    >>> reference_layout(types.SimpleNamespace(State=type("S", (), {"__annotations__": dict.fromkeys(REFERENCE_FIELDS)})))
    True
    >>> reference_layout(types.SimpleNamespace())
    False
    """
    fields = getattr(getattr(module, "State", None), "__annotations__", None)
    return isinstance(fields, dict) and frozenset(fields) == REFERENCE_FIELDS


_FunctionType = types.FunctionType  # type(_module_fn)


def _own_copy(fn: Any) -> LearnerFn | None:
    """A function running ``fn``'s code: the double op reroutes ``fn`` itself to the double."""
    if type(fn) is not _FunctionType:
        return fn if callable(fn) else None
    copy = _FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    return copy


def _with_values(got: Any, values: JsonDict) -> Any:
    """``got`` (a node's return) with ``values`` put in its update: a dict, a Command, else ``values`` alone."""
    if isinstance(got, dict):
        return {**got, **values}
    if dataclasses.is_dataclass(got) and hasattr(got, "goto") and hasattr(got, "update"):
        update = got.update if isinstance(got.update, dict) else {}
        # got is a node's Command (an instance); replace() raises on a dataclass class, as before
        return dataclasses.replace(got, update={**update, **values})  # type: ignore[type-var]
    return dict(values)


def _node_double(name: str, values: Callable[[Any, Any, JsonDict], JsonDict]) -> Callable[[Any, JsonDict], LearnerFn]:
    """A factory: run the learner's node ``name``, then put in ``values(module, state)`` (see above).

    >>> import types
    >>> State = type("State", (), {"__annotations__": dict.fromkeys(REFERENCE_FIELDS)})
    >>> def pick(state): return {"tool": "legacy_stock", "args": {}, "note": 1}
    >>> order = {"sku": "SKU-1", "region": "north", "limit": 2}
    >>> DOUBLES["pick"](types.SimpleNamespace(State=State, pick=pick), {})({"order": order})
    {'tool': 'stock_lookup', 'args': {'sku': 'SKU-1', 'region': 'north', 'limit': 2}, 'note': 1}
    >>> DOUBLES["pick"](types.SimpleNamespace(State=dict, pick=pick), {})({"order": order})["tool"]
    'legacy_stock'
    """

    def factory(module: Any, params: JsonDict) -> LearnerFn:
        own = _own_copy(getattr(module, name, None))
        active = reference_layout(module)

        def node(state: Any) -> Any:
            if not active and own is not None:
                return own(state)
            try:
                got = own(state) if own is not None else None
            except Exception:
                got = None
            return _with_values(got, values(module, state, params))

        node.__name__ = node.__qualname__ = name
        return node

    return factory


def pick_values(module: Any, state: Any, params: JsonDict) -> JsonDict:
    """LAB_SPEC step 6 ``pick``: the order's tool (default stock_lookup) and its values unchanged.

    ``params["args"]``: these arguments instead (a step-6 check then knows what the call used).
    """
    order = state["order"]
    args = decode(params["args"]) if "args" in params else {k: order[k] for k in lab_spec.ARG_NAMES}
    return {"tool": order.get("tool", "stock_lookup"), "args": args}


def reply_values(module: Any, state: Any, params: JsonDict) -> JsonDict:
    """LAB_SPEC step 6 ``reply``: the answer from the first row and the arguments of the call that produced it."""
    first, args = state["rows"][0], state["args"]
    return {"answer": f"{args['sku']} in {args['region']}: bin {first['bin']} holds {first['count']}."}


def giveup_values(module: Any, state: Any, params: JsonDict) -> JsonDict:
    """LAB_SPEC step 6 ``giveup``: the answer names the last reason in ``errors``."""
    return {"answer": f"Could not answer: {state['errors'][-1]}"}


def fetch_node_double(module: Any, params: JsonDict) -> LearnerFn:
    """LAB_SPEC step 6 ``fetch``: one ``call_tool`` (the module's name, so the grader's door when doubled).

    The update records the call (tool, the state's args, error), the error on failure, the rows on success.
    ``attempts`` is the learner's: counting the fetches made is the repair loop's rule (LAB_SPEC
    step 7), so the learner's fetch runs too, on the same result (:func:`_attempts_counted`).

    >>> import types
    >>> State = type("State", (), {"__annotations__": dict.fromkeys(REFERENCE_FIELDS)})
    >>> door = lambda tool, args: {"ok": False, "value": None, "error": "args:range:limit"}
    >>> m = types.SimpleNamespace(State=State, call_tool=door, fetch=lambda state: {"ok": True, "attempts": 2})
    >>> update = DOUBLES["fetch"](m, {})({"tool": "stock_lookup", "args": {"limit": 9}})
    >>> update["errors"], update["attempts"], m.call_tool is door
    (['args:range:limit'], 2, True)
    """
    own = _own_copy(getattr(module, "fetch", None))
    active = reference_layout(module) and not base.routes_by_command(own)

    def fetch(state: Any) -> Any:
        if not active and own is not None:
            return own(state)
        # The state's own args dict in the calls entry, not a copy: fetch changes nothing, and a
        # repair that changes that dict in place (instead of copying) then shows in calls[0].
        tool, args = state["tool"], state["args"]
        result = module.call_tool(tool, args)
        update = {"ok": result["ok"], "calls": [{"tool": tool, "args": args, "error": result["error"]}]}
        if result["ok"]:
            update["rows"] = result["value"]["rows"]
        else:
            # params["errors_before"]: reasons recorded ahead of this one (a step-6 check of giveup's
            # "last reason" needs two, and the naive graph fetches once).
            update["errors"] = list(params.get("errors_before") or []) + [result["error"]]
        update.update(_attempts_counted(module, own, state, result))
        return update

    return fetch


def _attempts_counted(module: Any, own: Any, state: Any, result: JsonDict) -> JsonDict:
    """``{"attempts": n}`` as the learner's fetch counts it, run with ``call_tool`` answering ``result`` again.

    Nothing when that fetch leaves attempts to another node (a dict without it); ``{"attempts": 1}``
    when it fails or returns no update at all (a broken fetch is step 6's to judge).
    """
    door = getattr(module, "call_tool", None)
    module.call_tool = lambda *args, **kwargs: copy.deepcopy(result)
    try:
        got = own(state) if own is not None else None
    except Exception:
        return {"attempts": 1}
    finally:
        module.call_tool = door
    if not isinstance(got, dict):
        return {"attempts": 1}
    return {"attempts": got["attempts"]} if "attempts" in got else {}


def can_repair_answer_double(module: Any, params: JsonDict) -> LearnerFn:
    """``can_repair``: the learner's answer as the graph reads it, and False where it raises.

    For step 7's runs that judge what ``handle`` does after a reason the spec does not
    list: whether can_repair itself copes with every reason (a bool, no exception) is
    ``step7/can_repair_table``'s to judge, on every reason; here only what the rest of
    the graph does with its answers counts, whichever reasons the seed drew.

    >>> import types
    >>> def can_repair(reason): return {"args:allowed:region": "yes"}[reason]
    >>> can = can_repair_answer_double(types.SimpleNamespace(can_repair=can_repair), {})
    >>> can("args:allowed:region"), can("args:allowed:sku")
    (True, False)
    """
    own = _own_copy(getattr(module, "can_repair", None))

    def can_repair(reason: Any) -> bool:
        try:
            return bool(own(reason)) if own is not None else False
        except Exception:
            return False

    return can_repair


DOUBLES: dict[str, Callable[[Any, JsonDict], LearnerFn]] = {
    "call_tool_spec": call_tool_spec_double,
    "can_repair_answer": can_repair_answer_double,
    # Named as the nodes: the recording wrapper takes the kind's name, and a graph built
    # with add_node(node.__name__, node) must still find "pick" and "fetch".
    "pick": _node_double("pick", pick_values),
    "fetch": fetch_node_double,
    "reply": _node_double("reply", reply_values),
    "giveup": _node_double("giveup", giveup_values),
}

# doubles.py merges this table when it is imported first (the usual order). When this
# module is imported first, doubles.py finishes its merge before DOUBLES above exists;
# then the kinds are added here, once doubles.py is complete (make_double defined).
if hasattr(base, "make_double"):
    for _kind, _factory in DOUBLES.items():
        base.DOUBLES.setdefault(_kind, _factory)
