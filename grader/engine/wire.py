"""The probe protocol as declared types: what a probe may carry to the step child, and nothing else.

A check builds its probes as plain dicts with, beside what the step child
needs, what the judge expects (the spec's answer, labels for the learner, the
expected tool runs). Only the fields declared here travel (:func:`to_wire`):
every other field is the judging side's by construction, whatever its name,
so no answer can reach the process that runs learner code by a key that
forgot a prefix. :data:`PROBE_SCHEMA` is the same declaration as a JSON
Schema (``tests/test_registry.py`` validates every probe of every check with it).

Example::

    >>> to_wire({"kind": "calls", "params": {"operations": [
    ...     {"op": "call", "fn": "explain", "args": [], "label": "explain()", "case": {"reason": "x"}}],
    ...     "spies": {"stock_lookup": {"mode": "original", "note": "judge"}}, "expect_runs": 1}})
    {'kind': 'calls', 'params': {'operations': [{'op': 'call', 'fn': 'explain', 'args': []}], 'spies': {'stock_lookup': {'mode': 'original'}}}}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypedDict, get_args, get_type_hints

# A JSON object on either side of the protocol: a probe's params, an operation, a spy, an observation,
# a record. Its values are Any on purpose: they are encoded learner values (grader.engine.encode) or what
# a check wrote for its own judge, and each reader checks the keys and types it reads (a judge that
# cannot read one fails its check: grader.checks._common.safe_judge).
JsonDict = dict[str, Any]
# A function of the learner's module or a stand-in for one (a double, a spy, a trampoline): called with
# whatever a probe or the learner's own code passes, it returns whatever that code returns.
LearnerFn = Callable[..., Any]

# --------------------------------------------------------------------------- operations of a ``calls`` probe


class CallOperation(TypedDict, total=False):
    """Call a function of the module: ``fn(*args, **kwargs)``; ``args_after`` records the arguments after it.

    ``pair``: a return value that unpacks as two (a tuple or list subclass: a ``NamedTuple``) is recorded as
    the tuple of its two items.
    """

    op: Literal["call"]
    fn: str
    args: list[Any]
    kwargs: JsonDict
    args_after: bool
    pair: bool


class NameOperation(TypedDict, total=False):
    """Read (``attr``, ``keys``), set (``set``, with ``value``), double, watch or ``prebuild`` a module name."""

    op: Literal["attr", "keys", "set", "double", "watch", "prebuild"]
    name: str
    value: Any
    double: str  # ``double``: the kind (grader.engine.doubles.DOUBLES)
    params: JsonDict  # ``double``: the kind's parameters


class TableOperation(TypedDict, total=False):
    """Change ``TOOLS`` (``contract``: the value at ``path``, or ``delete`` it) or copy an entry (``add_tool``)."""

    op: Literal["contract", "add_tool"]
    path: list[Any]
    value: Any
    delete: bool
    name: str
    like: str


class ModuleOperation(TypedDict, total=False):
    """Read ``CACHE``'s keys, clear it, or run ``write_report`` (into ``folder``: ``scratch`` or ``default``)."""

    op: Literal["cache", "clear_cache", "report"]
    folder: str


Operation = CallOperation | NameOperation | TableOperation | ModuleOperation


class SpySpec(TypedDict, total=False):
    """What the spy in ``TOOLS[name]["fn"]`` does (grader.engine.probes.make_spy)."""

    mode: Literal["original", "return", "raise", "table"]
    value: Any
    exc: Any
    exc_by_sku: JsonDict  # ``raise``: the exception for a call of that sku (else ``exc``)
    ignore_limit: bool
    every_route: bool
    echo: bool
    fill_rows: list[Any]


class CallsParams(TypedDict, total=False):
    """A ``calls`` probe: its operations in order, the spies, and where it starts from."""

    operations: list[Operation]
    spies: dict[str, SpySpec]
    fresh: bool
    reset: bool  # the step child ignores it; a step job's list shows which probes the grading shares
    clear_cache: bool


class ReducersParams(TypedDict, total=False):
    """A ``state_reducers`` probe: a two-node graph over ``State`` adding ``updates`` to ``initial``."""

    fields: list[Any]
    initial: JsonDict
    updates: list[Any]


class NodesParams(TypedDict, total=False):
    """A ``graph_nodes`` probe: the nodes and edges of the graph ``builder()`` compiles."""

    builder: str


PARAMS_OF_KIND: dict[str, type] = {
    "calls": CallsParams,
    "state_reducers": ReducersParams,
    "graph_nodes": NodesParams,
    "tools_table": NodesParams,
}
OPERATION_TYPES: tuple[type, ...] = (CallOperation, NameOperation, TableOperation, ModuleOperation)


def _literals(cls: type) -> tuple[str, ...]:
    return get_args(get_type_hints(cls)["op"])  # the Literal's values


def _fields(cls: type) -> frozenset[str]:
    return frozenset(get_type_hints(cls))


_JSON_TYPES = {bool: "boolean", str: "string", list: "array", dict: "object"}


OPERATION_FIELDS: dict[str, frozenset[str]] = {op: _fields(cls) for cls in OPERATION_TYPES for op in _literals(cls)}
SPY_FIELDS = _fields(SpySpec)
PARAMS_FIELDS: dict[str, frozenset[str]] = {kind: _fields(cls) for kind, cls in PARAMS_OF_KIND.items()}


def to_wire(probe: JsonDict) -> JsonDict:
    """``probe`` (``{"kind", "params"}``) with the declared fields only: what the step child receives.

    An operation of an undeclared kind travels as ``{"op": kind}`` alone (the step child then
    reports it unknown); values (``args``, ``value``, a double's ``params``) travel as they are.
    A probe kind the protocol does not declare (the engine's own tests, with a probe function of
    their own) travels as it is; every registered check's kind is declared (``tests/test_registry.py``).

    >>> to_wire({"kind": "graph_nodes", "params": {"builder": "build_naive", "expect": ["pick"]}})
    {'kind': 'graph_nodes', 'params': {'builder': 'build_naive'}}
    """
    kind = probe.get("kind")
    params = probe.get("params") or {}
    if kind not in PARAMS_FIELDS:  # a kind of the engine's own tests (their probe_function): not the lab's protocol
        return {"kind": kind, "params": params}
    wanted = PARAMS_FIELDS[kind]
    out: JsonDict = {key: value for key, value in params.items() if key in wanted}
    if kind == "calls":
        out["operations"] = [_operation(o) for o in params.get("operations") or []]
        if params.get("spies"):
            out["spies"] = {
                name: {k: v for k, v in spy.items() if k in SPY_FIELDS} for name, spy in params["spies"].items()
            }
        if params.get("fresh") is not True:
            out.pop("fresh", None)
    return {"kind": kind, "params": out}


def _operation(operation: JsonDict) -> JsonDict:
    fields = OPERATION_FIELDS.get(operation.get("op", "call"), frozenset({"op"}))
    return {key: value for key, value in operation.items() if key in fields}


def _schema_of(cls: type, required: tuple[str, ...] = ()) -> JsonDict:
    properties: JsonDict = {}
    for name, annotation in get_type_hints(cls).items():
        if name == "op":
            properties[name] = {"enum": list(_literals(cls))}
        else:
            json_type = _JSON_TYPES.get(getattr(annotation, "__origin__", annotation))
            properties[name] = {"type": json_type} if json_type else {}
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


# The wire form as a JSON Schema: a probe as to_wire leaves it validates; a field no type declares does not.
PROBE_SCHEMA: JsonDict = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["kind", "params"],
    "additionalProperties": False,
    "properties": {"kind": {"enum": sorted(PARAMS_OF_KIND)}, "params": {"type": "object"}},
    "allOf": [
        {"if": {"properties": {"kind": {"const": kind}}}, "then": {"properties": {"params": _schema_of(cls)}}}
        for kind, cls in PARAMS_OF_KIND.items()
        if kind != "calls"
    ]
    + [
        {
            "if": {"properties": {"kind": {"const": "calls"}}},
            "then": {
                "properties": {
                    "params": {
                        **_schema_of(CallsParams),
                        "properties": {
                            **_schema_of(CallsParams)["properties"],
                            "operations": {
                                "type": "array",
                                "items": {"anyOf": [_schema_of(cls, ("op",)) for cls in OPERATION_TYPES]},
                            },
                            "spies": {"type": "object", "additionalProperties": _schema_of(SpySpec)},
                        },
                    }
                }
            },
        }
    ],
}
