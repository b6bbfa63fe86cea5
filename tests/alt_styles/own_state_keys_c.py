"""A correct learner module in another style: the call's values are flat State keys.

Differences from the reference on purpose: ``State`` keeps ``sku``,
``region``, ``limit`` and ``tool`` as keys of their own (no ``args`` dict):
``pick`` copies them out of the order, ``fetch`` assembles the arguments from
them, ``repair`` changes only the key a reason is about, ``reply`` reads
``state["region"]`` (the region the last call used). ``fetch`` also keeps
``used`` (the arguments of the call that produced the rows). The module has
type hints throughout, an ``Enum`` of reasons for the result check, a
``frozenset`` of repairable reasons next to a dict of fix functions, and
``NamedTuple`` rows for the table.
"""
from __future__ import annotations

import enum
import json
import operator
from pathlib import Path
from typing import Annotated, Any, NamedTuple, TypedDict

from langgraph.graph import END, START, StateGraph

REGIONS = ["north", "south", "east", "west", "central"]
FALLBACK_REGION = "central"
MAX_ROWS = 5
CALLS = {"stock_lookup": 0, "legacy_stock": 0}


class _Row(NamedTuple):
    sku: str
    region: str
    bin: str
    count: int


_ROWS = [
    _Row("SKU-1001", "north", "N-01", 12), _Row("SKU-1001", "north", "N-02", 4),
    _Row("SKU-1001", "south", "S-01", 7), _Row("SKU-1001", "central", "C-01", 30),
    _Row("SKU-2040", "east", "E-01", 3), _Row("SKU-2040", "west", "W-01", 0),
    _Row("SKU-2040", "central", "C-02", 15), _Row("SKU-3300", "north", "N-11", 2),
    _Row("SKU-3300", "north", "N-12", 5), _Row("SKU-3300", "north", "N-13", 1),
    _Row("SKU-3300", "north", "N-14", 9), _Row("SKU-3300", "north", "N-15", 4),
    _Row("SKU-3300", "north", "N-16", 6), _Row("SKU-3300", "north", "N-17", 3),
    _Row("SKU-3300", "central", "C-03", 11), _Row("SKU-4411", "south", "S-02", 22),
    _Row("SKU-4411", "west", "W-02", 5), _Row("SKU-4411", "central", "C-04", 9),
    _Row("SKU-5000", "west", "W-03", 2),
]
STOCK: list[dict] = [row._asdict() for row in _ROWS]


def _bins_for(sku: str, region: str) -> list[dict]:
    return [{"bin": r["bin"], "count": r["count"]} for r in STOCK if r["sku"] == sku and r["region"] == region]


def stock_lookup(sku: str, region: str, limit: int) -> dict:
    CALLS["stock_lookup"] += 1
    bins = _bins_for(sku, region)
    return {"sku": sku, "region": region, "rows": bins[:limit]}


def legacy_stock(sku: str, region: str, limit: int) -> dict:
    CALLS["legacy_stock"] += 1
    return {"sku": sku, "region": region, "rows": _bins_for(sku, region)}


def _entry(fn) -> dict:
    return {
        "fn": fn,
        "args": {
            "sku": {"type": str, "required": True},
            "region": {"type": str, "required": True, "allowed": REGIONS},
            "limit": {"type": int, "required": True, "min": 1, "max": MAX_ROWS},
        },
        "returns": {
            "keys": {"sku": str, "region": str, "rows": list},
            "rows": {"max_len": MAX_ROWS, "item": {"bin": {"type": str}, "count": {"type": int, "min": 0}}},
        },
    }


TOOLS: dict[str, dict] = {"stock_lookup": _entry(stock_lookup), "legacy_stock": _entry(legacy_stock)}


def _matches(value: Any, kind: type) -> bool:
    if kind is not bool and isinstance(value, bool):
        return False
    return isinstance(value, kind)


def validate_args(name: str, args: dict) -> str:
    if name not in TOOLS:
        return "unknown_tool"
    rules: dict = TOOLS[name]["args"]
    extras = [a for a in args if a not in rules]
    if extras:
        return "extra:" + extras[0]
    missing = [a for a, r in rules.items() if r.get("required") and a not in args]
    if missing:
        return "missing:" + missing[0]
    for arg, rule in rules.items():
        if arg not in args:
            continue
        value = args[arg]
        if not _matches(value, rule["type"]):
            return "type:" + arg
        if "allowed" in rule and value not in rule["allowed"]:
            return "allowed:" + arg
        if ("min" in rule and value < rule["min"]) or ("max" in rule and value > rule["max"]):
            return "range:" + arg
    return ""


class _Bad(str, enum.Enum):
    SHAPE = "shape"
    EMPTY = "empty"
    TOO_BIG = "too_big"
    RANGE = "range"


def _result_problem(returns: dict, value: Any) -> "_Bad | None":
    if not isinstance(value, dict):
        return _Bad.SHAPE
    for key, kind in returns["keys"].items():
        if key not in value or not _matches(value[key], kind):
            return _Bad.SHAPE
    item: dict = returns["rows"]["item"]
    rows: list = value["rows"]
    for row in rows:
        if not isinstance(row, dict) or any(f not in row or not _matches(row[f], r["type"]) for f, r in item.items()):
            return _Bad.SHAPE
    if not rows:
        return _Bad.EMPTY
    if len(rows) > returns["rows"]["max_len"]:
        return _Bad.TOO_BIG
    for row in rows:
        for f, r in item.items():
            if "min" in r and row[f] < r["min"]:
                return _Bad.RANGE
    return None


def validate_result(name: str, value: Any) -> str:
    problem = _result_problem(TOOLS[name]["returns"], value)
    return "" if problem is None else problem.value


CACHE: dict[str, dict] = {}


def cache_key(name: str, args: dict) -> str:
    return json.dumps([name, [[k, args[k]] for k in sorted(args)]])


def call_tool(name: str, args: dict) -> dict:
    reason = validate_args(name, args)
    if reason:
        return {"ok": False, "value": None, "error": "args:" + reason}
    key = cache_key(name, args)
    if key in CACHE:
        return {"ok": True, "value": CACHE[key], "error": ""}
    try:
        value = TOOLS[name]["fn"](**args)
    except Exception as exc:
        return {"ok": False, "value": None, "error": "raised:" + type(exc).__name__}
    reason = validate_result(name, value)
    if reason:
        return {"ok": False, "value": None, "error": "result:" + reason}
    CACHE[key] = value
    return {"ok": True, "value": value, "error": ""}


class State(TypedDict, total=False):
    order: dict
    tool: str
    sku: Any
    region: Any
    limit: Any
    used: dict
    ok: bool
    rows: list
    answer: str
    errors: Annotated[list, operator.add]
    calls: Annotated[list, operator.add]
    attempts: Annotated[int, operator.add]
    fixes: Annotated[list, operator.add]


def pick(state: State) -> dict:
    order = state["order"]
    return {"tool": order.get("tool", "stock_lookup"),
            "sku": order["sku"], "region": order["region"], "limit": order["limit"]}


def fetch(state: State) -> dict:
    tool = state["tool"]
    args = {"sku": state["sku"], "region": state["region"], "limit": state["limit"]}
    result = call_tool(tool, args)
    if result["ok"]:
        return {"ok": True, "rows": result["value"]["rows"], "used": dict(args), "attempts": 1,
                "calls": [{"tool": tool, "args": dict(args)}]}
    return {"ok": False, "errors": [result["error"]], "attempts": 1, "calls": [{"tool": tool, "args": dict(args)}]}


def reply(state: State) -> dict:
    first = state["rows"][0]
    return {"answer": f"{state['sku']} at {state['region']}: bin {first['bin']}, count {first['count']}."}


def giveup(state: State) -> dict:
    return {"answer": f"Unable to answer - {state['errors'][-1]}", "rows": []}


MAX_ATTEMPTS = 3

REPAIRS = {
    "args:allowed:region": lambda state: {"region": FALLBACK_REGION},
    "args:range:limit": lambda state: {"limit": min(MAX_ROWS, max(1, state["limit"]))},
    "result:too_big": lambda state: {"tool": "stock_lookup"},
}
_REPAIRABLE = frozenset(REPAIRS)


def can_repair(reason: str) -> bool:
    return reason in _REPAIRABLE


def repair(state: State) -> dict:
    reason = state["errors"][-1]
    change = REPAIRS[reason](state)
    words = ", ".join(f"{key} {state.get(key)!r} -> {value!r}" for key, value in change.items())
    return {**change, "fixes": [f"{reason}: {words}"]}


def _after_naive(state: State) -> str:
    return "reply" if state["ok"] else "giveup"


def _after(state: State) -> str:
    if state["ok"]:
        return "reply"
    if can_repair(state["errors"][-1]) and state["attempts"] < MAX_ATTEMPTS:
        return "repair"
    return "giveup"


def _compile(repairing: bool):
    graph = StateGraph(State)
    nodes = {"pick": pick, "fetch": fetch, "reply": reply, "giveup": giveup}
    if repairing:
        nodes["repair"] = repair
    for name, fn in nodes.items():
        graph.add_node(name, fn)
    graph.add_edge(START, "pick")
    graph.add_edge("pick", "fetch")
    if repairing:
        graph.add_conditional_edges("fetch", _after, ["reply", "repair", "giveup"])
        graph.add_edge("repair", "fetch")
    else:
        graph.add_conditional_edges("fetch", _after_naive, ["reply", "giveup"])
    graph.add_edge("reply", END)
    graph.add_edge("giveup", END)
    return graph.compile()


def build_naive():
    return _compile(False)


def build_graph():
    return _compile(True)


def run_naive(order: dict) -> dict:
    final = build_naive().invoke({"order": order, "errors": [], "calls": [], "attempts": 0})
    return {"ok": final["ok"], "answer": final["answer"], "rows": final.get("rows", []),
            "errors": final["errors"], "calls": final["calls"]}


def handle(order: dict) -> dict:
    before = sum(CALLS.values())
    final = build_graph().invoke({"order": order, "errors": [], "calls": [], "attempts": 0, "fixes": []})
    return {"ok": final["ok"], "answer": final["answer"], "rows": final.get("rows", []),
            "errors": final["errors"], "calls": final["calls"], "fixes": final["fixes"],
            "attempts": final["attempts"], "tool_runs": sum(CALLS.values()) - before}


def write_report(folder: "str | Path | None" = None) -> dict:
    target = Path(__file__).resolve().parent if folder is None else Path(folder)

    def runs() -> int:
        return sum(CALLS.values())

    start = runs()
    call_tool("legacy_stock", {"sku": "SKU-2040", "region": "east", "limit": -1})
    call_tool("stock_lookup", {"sku": "SKU-2040", "region": "EAST", "limit": 1})
    call_tool("stock_lookup", {"sku": ["SKU-2040"], "region": "east", "limit": 1})
    blocked = runs() - start

    reasons = sorted(validate_result("stock_lookup", bad) for bad in (
        {"sku": "SKU-2040", "region": "east", "rows": "E-01"},
        {"sku": "SKU-2040", "region": "east", "rows": []},
        {"sku": "SKU-2040", "region": "east", "rows": [{"bin": "E-01", "count": 3}] * (MAX_ROWS + 1)},
        {"sku": "SKU-2040", "region": "east", "rows": [{"bin": "E-01", "count": -3}]},
    ))

    twice = {"sku": "SKU-2040", "region": "east", "limit": 1}
    CACHE.pop(cache_key("stock_lookup", twice), None)
    call_tool("stock_lookup", twice)
    start = runs()
    call_tool("stock_lookup", twice)
    memo = runs() - start

    repaired = handle({"sku": "SKU-4411", "region": "mars", "limit": 2})
    empty = handle({"sku": "SKU-9999", "region": "south", "limit": 2})
    report = {"tools": sorted(TOOLS), "blocked_before_call": blocked, "bad_result_reasons": reasons,
              "memo_second_call_runs": memo, "repaired": bool(repaired["ok"] and repaired["fixes"]),
              "attempts": repaired["attempts"], "gave_up": not empty["ok"]}
    (target / "tool_report.json").write_text(json.dumps(report), encoding="utf-8")
    body = {
        "## Where the tool contract is written": "TOOLS, one entry per tool: " + ", ".join(report["tools"]),
        "## What was blocked before calling": f"{blocked} tool body runs after wrong arguments",
        "## How returned results were not trusted": "validate_result: " + ", ".join(reasons),
        "## How failure was handled as a path": f"Errors are state; the loop stops at {MAX_ATTEMPTS} attempts.",
    }
    (target / "tool_report.md").write_text("\n\n".join(f"{h}\n{t}" for h, t in body.items()) + "\n", encoding="utf-8")
    return report
